"""CUDA launch limits, checked before a launch allocates anything; each violation is a
:class:`~tcsim.isa.errors.LaunchError` naming the launch argument (``grid``, ``block``, ``cluster``,
``dynamic_smem``, an argument index...) or the PTX declaration responsible.

Sources of the numbers (one table; the same on sm_90a and sm_100a unless said):

* grid: x <= 2^31 - 1, y, z <= 65535; block: x, y <= 1024, z <= 64, at most 1024 threads -- CUDA C++ Programming
  Guide, "Technical Specifications per Compute Capability" (the same values ``cudaDevAttrMaxGridDimX/Y/Z``,
  ``cudaDevAttrMaxBlockDimX/Y/Z`` and ``cudaDevAttrMaxThreadsPerBlock`` report on the H100);
* cluster: 8 CTAs portable; 16 with the non-portable opt-in (``cudaFuncAttributeNonPortableClusterSizeAllowed``,
  :attr:`tcsim.launch.Launch.non_portable_cluster`) -- CUDA C++ Programming Guide, "Thread Block Clusters";
* shared memory per CTA (static + dynamic): 227 KiB = 232448 bytes with the opt-in
  (``cudaDevAttrMaxSharedMemoryPerBlockOptin``; the launch sets ``cudaFuncAttributeMaxDynamicSharedMemorySize``
  for what it asks, as :mod:`tcsim.hw.launcher` does) -- Hopper and Blackwell Tuning Guides ("maximum shared
  memory per thread block is 227 KB"; 228 KB per SM, 1 KiB of which each resident CTA reserves), and ptxas 13.0:
  ``uses too much shared data (0x38c01 bytes, 0x38c00 max)`` for both sm_90a and sm_100a;
* kernel parameter space: 32764 bytes from PTX ISA 8.1 (CUDA 12.1, Volta and later), 4352 bytes before -- ptxas
  13.0: ``uses too much parameter space (0x8000 bytes, 0x7ffc max)`` at ``.version 8.1``, ``(..., 0x1100 max)``
  and "Kernel parameter size larger than 4352 bytes requires PTX ISA .version 8.1" at 8.0; NVIDIA blog "CUDA 12.1
  Supports Large Kernel Parameters";
* local memory per thread: 512 KiB -- CUDA C++ Programming Guide, technical specifications table;
* registers: 64 K 32-bit registers per CTA (and per SM), at most 255 per thread, allocated per warp in units of
  256 -- Hopper/Blackwell Tuning Guides ("The register file size is 64K 32-bit registers per SM. The maximum
  number of registers per thread is 255"); ptxas 13.0 ignores ``.maxnreg`` above 255 with a warning.  A launch
  is checked against the register count it declares (:attr:`tcsim.launch.Launch.registers`: a count, or
  ``"ptxas"`` to take what ``ptxas -v`` allocates); ``.maxnreg`` is only an upper bound of what ptxas allocates,
  so it alone rejects nothing.
* resident CTAs per SM (how many CTAs run at once; the rest start as CTAs exit): 32 CTAs, 2048 threads, 228 KiB
  of shared memory per SM -- Hopper/Blackwell Tuning Guides.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tcsim.isa.errors import LaunchError

KIB = 1024


@dataclass(frozen=True)
class LaunchLimits:
    """The limits one target imposes on a launch (see the module docstring for the sources)."""

    max_grid: tuple = (2 ** 31 - 1, 65535, 65535)
    max_block: tuple = (1024, 1024, 64)
    max_threads_per_cta: int = 1024
    max_cluster_portable: int = 8
    max_cluster_non_portable: int = 16
    max_smem_per_cta: int = 227 * KIB          # opt-in maximum (static + dynamic)
    smem_per_sm: int = 228 * KIB
    reserved_smem_per_cta: int = 1 * KIB
    max_param_bytes: int = 32764               # PTX ISA >= 8.1
    max_param_bytes_before_8_1: int = 4352
    max_local_per_thread: int = 512 * KIB
    regs_per_cta: int = 64 * KIB
    max_regs_per_thread: int = 255
    reg_alloc_unit: int = 256                  # registers, per warp
    max_ctas_per_sm: int = 32
    max_threads_per_sm: int = 2048

    def param_bytes(self, version) -> int:
        """The kernel parameter space of a module of PTX ISA ``version`` ((major, minor) or None: the newest)."""
        if version is not None and tuple(version) < (8, 1):
            return self.max_param_bytes_before_8_1
        return self.max_param_bytes


#: per target; sm_90a (H100) and sm_100a (B200) have the same launch limits
LIMITS = {"sm_90": LaunchLimits(), "sm_100": LaunchLimits()}


def limits_for(arch: str | None) -> LaunchLimits:
    a = (arch or "sm_100a").rstrip("af")
    return LIMITS.get(a, LIMITS["sm_100"])


# ---------------------------------------------------------------------------------------------- launch fields
def dim3(d, what: str) -> tuple:
    """``d`` (an int or 1 to 3 ints) as a 3-tuple; anything else is a LaunchError naming ``what``."""
    if isinstance(d, (bool, np.bool_)):
        raise LaunchError(f"{what}={d!r} is not a dimension", expected=f"{what} as an int or a tuple of 1 to 3 "
                          "positive ints")
    if isinstance(d, (int, np.integer)):
        t = (int(d),)
    else:
        try:
            items = list(d)
        except TypeError:
            raise LaunchError(f"{what}={d!r} is not a dimension", expected=f"{what} as an int or a tuple of 1 to 3 "
                              "positive ints") from None
        if not 1 <= len(items) <= 3:
            raise LaunchError(f"{what}={d!r} must have 1 to 3 dimensions",
                              expected=f"{what} as an int or a tuple of 1 to 3 positive ints")
        for x in items:
            if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
                raise LaunchError(f"{what}={d!r}: {x!r} is not an integer",
                                  expected=f"{what} as an int or a tuple of 1 to 3 positive ints")
        t = tuple(int(x) for x in items)
    for x in t:
        if x < 1:
            raise LaunchError(f"{what}={d!r}: every dimension must be at least 1",
                              expected=f"{what} as an int or a tuple of 1 to 3 positive ints")
    return t + (1,) * (3 - len(t))


def byte_count(v, what: str) -> int:
    """A non-negative integer byte count (``dynamic_smem``...)."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise LaunchError(f"{what}={v!r} is not a byte count", expected=f"{what} as a non-negative int")
    if int(v) < 0:
        raise LaunchError(f"{what}={int(v)} is negative", expected=f"{what} as a non-negative int")
    return int(v)


def check_dims(grid, block, cluster, non_portable_cluster: bool = False, lim: LaunchLimits | None = None) -> None:
    """Grid, block and cluster shape against the CUDA limits (the arguments named in each error)."""
    lim = lim or LaunchLimits()
    for axis, (g, m) in enumerate(zip(grid, lim.max_grid)):
        if g > m:
            raise LaunchError(f"grid={tuple(grid)}: gridDim.{'xyz'[axis]} = {g} exceeds the CUDA limit {m}",
                              expected=f"grid dimensions at most {lim.max_grid}")
    nthreads = block[0] * block[1] * block[2]
    if nthreads > lim.max_threads_per_cta:
        raise LaunchError(f"block={tuple(block)} has {nthreads} threads",
                          expected=f"at most {lim.max_threads_per_cta} threads per CTA")
    for axis, (b, m) in enumerate(zip(block, lim.max_block)):
        if b > m:
            raise LaunchError(f"block={tuple(block)}: blockDim.{'xyz'[axis]} = {b} exceeds the CUDA limit {m}",
                              expected=f"block dimensions at most {lim.max_block}")
    for axis, (g, c) in enumerate(zip(grid, cluster)):
        if g % c:
            raise LaunchError(f"grid={tuple(grid)} is not a multiple of cluster={tuple(cluster)} (gridDim."
                              f"{'xyz'[axis]} = {g}, clusterDim.{'xyz'[axis]} = {c})",
                              expected="each grid dimension divisible by the cluster dimension")
    csize = cluster[0] * cluster[1] * cluster[2]
    if csize > lim.max_cluster_non_portable:
        raise LaunchError(f"cluster={tuple(cluster)} has {csize} CTAs",
                          expected=f"at most {lim.max_cluster_non_portable} CTAs per cluster (non-portable), "
                                   f"{lim.max_cluster_portable} portable")
    if csize > lim.max_cluster_portable and not non_portable_cluster:
        raise LaunchError(f"cluster={tuple(cluster)} has {csize} CTAs, more than the portable "
                          f"{lim.max_cluster_portable}",
                          expected="at most 8 CTAs per cluster, or Launch(non_portable_cluster=True) (the GPU's "
                                   "cudaFuncAttributeNonPortableClusterSizeAllowed) for up to 16")


def check_resources(program, launch, lim: LaunchLimits | None = None) -> None:
    """What the kernel and the launch ask of one CTA: shared memory, parameter space, local memory, registers."""
    module = program.module
    lim = lim or limits_for(module.arch)
    kernel = program.kernel
    static = int(program.shared_static_size)
    dyn = int(launch.dynamic_smem)
    if static > lim.max_smem_per_cta:
        big = max((s for s in program.shared_symbols.values() if s.decl is not None), key=lambda s: s.size,
                  default=None)
        raise LaunchError(f"kernel {kernel.name} declares {static} bytes of static shared memory",
                          big.decl.loc if big is not None else kernel.loc,
                          expected=f"at most {lim.max_smem_per_cta} bytes (227 KiB) per CTA")
    if static + dyn > lim.max_smem_per_cta:
        raise LaunchError(f"dynamic_smem={dyn}: with the kernel's {static} bytes of static shared memory the CTA "
                          f"needs {static + dyn} bytes", expected=f"static + dynamic shared memory at most "
                          f"{lim.max_smem_per_cta} bytes (227 KiB, the opt-in maximum per CTA)")
    plimit = lim.param_bytes(module.version)
    if program.param_size > plimit:
        big = max(kernel.params, key=lambda p: p.size_bytes, default=None)
        ver = ".".join(str(x) for x in module.version) if module.version else "?"
        raise LaunchError(f"kernel {kernel.name} has {program.param_size} bytes of parameters",
                          big.loc if big is not None else kernel.loc,
                          expected=f"at most {plimit} bytes of kernel parameters (PTX ISA {ver}"
                                   f"{'; 32764 from PTX ISA 8.1' if plimit < lim.max_param_bytes else ''})")
    if program.local_size > lim.max_local_per_thread:
        big = max(program.local_symbols.values(), key=lambda s: s.size, default=None)
        raise LaunchError(f"kernel {kernel.name} needs {program.local_size} bytes of local memory per thread",
                          big.decl.loc if big is not None and big.decl is not None else kernel.loc,
                          expected=f"at most {lim.max_local_per_thread} bytes (512 KiB) per thread")
    regs = getattr(launch, "registers", None)
    if regs == "ptxas":
        from tcsim.isa.ptxas import register_counts
        from tcsim.isa import ir
        if isinstance(launch.ptx, ir.Module):
            raise LaunchError("registers='ptxas' needs the launch's PTX text, not a parsed module")
        counts = register_counts(launch.ptx_text()[0], module.arch or "sm_90a")
        if counts is None:
            raise LaunchError("registers='ptxas' but ptxas is not on PATH",
                              expected="the CUDA toolkit's ptxas, or registers=N (ptxas -v: 'Used N registers')")
        if kernel.name not in counts:
            raise LaunchError(f"registers='ptxas': ptxas did not assemble kernel {kernel.name}", kernel.loc,
                              expected="PTX that ptxas accepts (tcsim check / ptxas -v shows why not)")
        regs = counts[kernel.name]
    if regs is not None:
        check_registers(kernel, regs, launch.block, lim)


def check_registers(kernel, regs, block, lim: LaunchLimits) -> None:
    """``regs`` registers per thread (what ``ptxas -v`` reports as "Used N registers") for CTAs of ``block``."""
    if isinstance(regs, (bool, np.bool_)) or not isinstance(regs, (int, np.integer)) or int(regs) < 1:
        raise LaunchError(f"registers={regs!r} is not a register count",
                          expected="registers per thread as a positive int (ptxas -v: 'Used N registers')")
    regs = int(regs)
    if regs > lim.max_regs_per_thread:
        raise LaunchError(f"registers={regs}", expected=f"at most {lim.max_regs_per_thread} registers per thread")
    d = kernel.directives
    if "maxnreg" in d:
        m = d["maxnreg"]
        m = int(m[0] if isinstance(m, (tuple, list)) else m)
        if m <= lim.max_regs_per_thread and regs > m:
            raise LaunchError(f"registers={regs} but kernel {kernel.name} declares .maxnreg {m}", kernel.loc,
                              expected=f"at most {m} registers per thread (ptxas allocates no more)")
    nthreads = block[0] * block[1] * block[2]
    warps = (nthreads + 31) // 32
    per_warp = -(-regs * 32 // lim.reg_alloc_unit) * lim.reg_alloc_unit
    if warps * per_warp > lim.regs_per_cta:
        raise LaunchError(f"registers={regs}: block={tuple(block)} ({warps} warps) needs {warps * per_warp} "
                          f"registers", kernel.loc,
                          expected=f"at most {lim.regs_per_cta} registers per CTA (too many resources requested "
                                   f"for launch)")


def resident_ctas(arch: str | None, num_sms: int, block, smem_total: int) -> int:
    """How many CTAs the GPU runs at once (the occupancy bound over all SMs: CTAs and threads per SM, shared
    memory per SM); the rest of a grid starts as resident CTAs exit."""
    lim = limits_for(arch)
    nthreads = block[0] * block[1] * block[2]
    warps = (nthreads + 31) // 32
    per_sm = min(lim.max_ctas_per_sm, lim.max_threads_per_sm // max(32 * warps, 32),
                 lim.smem_per_sm // (smem_total + lim.reserved_smem_per_cta))
    return max(1, int(num_sms) * max(1, per_sm))


# ---------------------------------------------------------------------------------------------- run options
def check_seed(seed):
    if seed is None:
        return None
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise LaunchError(f"seed={seed!r} is not an integer", expected="seed as an int or None")
    return int(seed)


def check_max_instructions(n):
    if n is None:
        return None
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or int(n) < 1:
        raise LaunchError(f"max_instructions={n!r} is not a positive instruction count",
                          expected="max_instructions as a positive int, or None for the default budget "
                                   "(max_seconds of work)")
    return int(n)


def check_max_seconds(s):
    if s is None:
        return None
    if isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, float, np.integer, np.floating)) or \
            not float(s) > 0 or s != s:
        raise LaunchError(f"max_seconds={s!r} is not a positive number of seconds",
                          expected="max_seconds as a positive number, or None")
    return float(s)
