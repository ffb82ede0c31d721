"""Addresses as the GPU has them (issue 16 item 4): what a kernel can see of the shared / local / param windows.

Each probe kernel (generated here, sm_90a PTX) has every thread of every CTA write a fixed list of 64-bit values
(:data:`SLOTS` of the kernel: one row of ``u64`` per thread) computed by the instructions under test:

* the 32- and 64-bit shared-space address of every static ``.shared`` variable and of the dynamic ``.extern
  .shared`` array (``mov``), so the offset of the first user byte, the order and the alignment of the variables
  as ptxas lays them out are visible;
* ``cvta.shared`` / ``cvta.shared::cluster`` / ``cvta.to.shared`` / ``cvta.to.shared::cluster`` (u64: ptxas refuses
  the u32 forms under ``.address_size 64``), the generic address of shared address 0 and of local address 0 (the
  windows' bases), ``cvta.local`` of a ``.local`` array, ``cvta.param`` of the kernel parameter;
* for every rank ``r`` of the cluster (up to 4): ``mapa.shared::cluster.u32`` / ``.u64`` of a shared address,
  ``mapa.u64`` of its generic address, ``cvta.shared::cluster`` / ``cvta.to.shared`` / ``cvta.to.shared::cluster``
  of those, ``isspacep.shared`` / ``.shared::cta`` / ``.shared::cluster`` of the peer's generic address, and
  ``getctarank`` of both forms (a rank the cluster does not have leaves :data:`NONE`);
* ``isspacep`` of the own generic shared, local and param addresses in every space;
* ``%dynamic_smem_size``, ``%total_smem_size``, ``%aggr_smem_size``, ``%reserved_smem_offset_begin`` / ``_end`` /
  ``_cap`` / ``_0`` / ``_1``, ``%cluster_ctarank``, ``%cluster_nctarank``.

:data:`CASES` launch the kernels with static-only, dynamic-only and mixed shared memory, several dynamic sizes
and alignments, and clusters of 1 (no cluster attribute), 2, 4 and 2 x 2.

The campaign goes through the one pipeline of ``calib/`` (:mod:`calib.pipeline`):

record
    ``python -m calib.probes.address_probe record --out DIR`` (on a GPU): every case on the GPU (its own child
    process), reduced per CTA (:func:`reduce_rows`: one value where all threads of the CTA agree, else the list of
    per-thread values), plus what the driver says of each kernel (static shared bytes, local bytes), into
    ``DIR/address_layout.json`` with its provenance.
install
    ``python -m calib.probes.address_probe install DIR/address_layout.json`` ->
    ``tests/hw/golden_h100/address_layout.json`` (replayed by ``tests/hw/test_address_layout.py``).
sim
    ``python -m calib.probes.address_probe sim [--golden PATH]``: tcsim's values next to the recorded ones,
    slot by slot (exit 1 on a difference).

The device script is ``calib/probes/address_device_run.sh``.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from calib.pipeline import ROOT, command_line, execute, install_files, provenance, sha256, write_json

GOLDEN = ROOT / "tests" / "hw" / "golden_h100" / "address_layout.json"
RECORD_NAME = "address_layout.json"
NONE = 0xFFFF_FFFF_FFFF_FFFF      # the value of a slot whose instruction did not run (rank beyond the cluster)
MAX_RANKS = 4
THREADS = 64

_HDR = ".version 8.5\n.target sm_90a\n.address_size 64\n"


@dataclass(frozen=True)
class Variant:
    """A probe kernel: its shared-variable declarations (kernel scope ``decls``, module scope ``module``), the
    variables whose addresses it records, and ``primary``: the variable the cvta/mapa/isspacep slots start from."""

    decls: tuple
    module: tuple
    recorded: tuple
    primary: str
    #: .local declarations: the first is ``loc`` (the local slots start from it); every one is stored to and has its
    #: address recorded (``laddr:<name>``)
    locals: tuple = (".local .align 8 .b8 loc[16];",)


VARIANTS = {
    # declaration order with mixed alignments; s_unused is declared and never referenced
    "decl": Variant(decls=(".shared .align 4 .b8 s_unused[64];", ".shared .align 1 .b8 s1[3];",
                           ".shared .align 8 .b64 s8;", ".shared .align 16 .b8 s16[20];", ".shared .align 4 .b32 s4;",
                           ".shared .align 128 .b8 s128[8];", ".shared .align 2 .b16 s2;"),
                    module=(".extern .shared .align 16 .b8 dyn[];",),
                    recorded=("s1", "s8", "s16", "s4", "s128", "s2", "dyn"), primary="s16"),
    # the same variables declared in the reverse order
    "rev": Variant(decls=(".shared .align 2 .b16 s2;", ".shared .align 128 .b8 s128[8];", ".shared .align 4 .b32 s4;",
                          ".shared .align 16 .b8 s16[20];", ".shared .align 8 .b64 s8;", ".shared .align 1 .b8 s1[3];"),
                   module=(".extern .shared .align 16 .b8 dyn[];",),
                   recorded=("s2", "s128", "s4", "s16", "s8", "s1", "dyn"), primary="s16"),
    # dynamic shared memory only
    "dyn": Variant(decls=(), module=(".extern .shared .align 16 .b8 dyn[];",), recorded=("dyn",), primary="dyn"),
    # a 20-byte static array and a 1024-aligned dynamic array
    "dyn1k": Variant(decls=(".shared .align 4 .b32 sa[5];",), module=(".extern .shared .align 1024 .b8 dyn[];",),
                     recorded=("sa", "dyn"), primary="sa"),
    # a module-scope static variable next to a kernel-scope one
    "mod": Variant(decls=(".shared .align 4 .b32 k4[3];",),
                   module=(".shared .align 8 .b8 gm[24];", ".extern .shared .align 16 .b8 dyn[];"),
                   recorded=("gm", "k4", "dyn"), primary="k4"),
    # a large static array: offsets and sizes past 32 KiB
    "big": Variant(decls=(".shared .align 16 .b8 big[40000];", ".shared .align 8 .b64 after;"),
                   module=(".extern .shared .align 16 .b8 dyn[];",), recorded=("big", "after", "dyn"),
                   primary="after"),
    # no dynamic array declared: where the static section ends (the shared-size registers show it)
    "noext": Variant(decls=(".shared .align 4 .b8 t3[3];", ".shared .align 2 .b16 t2;"), module=(),
                     recorded=("t3", "t2"), primary="t3"),
    # an unreferenced variable and a 128-aligned dynamic array: does the dead variable come before or after it
    "dead": Variant(decls=(".shared .align 8 .b8 d_used[8];", ".shared .align 16 .b8 d_dead[100];"),
                    module=(".extern .shared .align 128 .b8 dyn[];",), recorded=("d_used", "dyn"), primary="d_used"),
    # module-scope variables (one unreferenced) around a kernel-scope one; two .local arrays of other sizes
    "mod2": Variant(decls=(".shared .align 8 .b8 ka[8];",),
                    module=(".shared .align 4 .b8 ga[4];", ".shared .align 4 .b8 gdead[32];",
                            ".shared .align 4 .b8 gb[4];", ".extern .shared .align 16 .b8 dyn[];"),
                    recorded=("ga", "gb", "ka", "dyn"), primary="ka",
                    locals=(".local .align 16 .b8 loc[40];", ".local .align 4 .b8 loc2[12];")),
}


@dataclass(frozen=True)
class Case:
    variant: str
    grid: tuple
    cluster: tuple
    dynamic_smem: int


CASES = {
    "decl_c1_d0": Case("decl", (2, 1, 1), (1, 1, 1), 0),
    "decl_c1_d100": Case("decl", (2, 1, 1), (1, 1, 1), 100),
    "decl_c2_d0": Case("decl", (4, 1, 1), (2, 1, 1), 0),
    "decl_c4_d4096": Case("decl", (8, 1, 1), (4, 1, 1), 4096),
    "decl_c2x2_d16": Case("decl", (4, 2, 1), (2, 2, 1), 16),
    "rev_c2_d48": Case("rev", (4, 1, 1), (2, 1, 1), 48),
    "dyn_c1_d0": Case("dyn", (2, 1, 1), (1, 1, 1), 0),
    "dyn_c4_d256": Case("dyn", (8, 1, 1), (4, 1, 1), 256),
    "dyn1k_c2_d2048": Case("dyn1k", (4, 1, 1), (2, 1, 1), 2048),
    "mod_c1_d16": Case("mod", (2, 1, 1), (1, 1, 1), 16),
    "big_c2_d20000": Case("big", (4, 1, 1), (2, 1, 1), 20000),
    "noext_c1_d0": Case("noext", (2, 1, 1), (1, 1, 1), 0),
    "noext_c2_d64": Case("noext", (4, 1, 1), (2, 1, 1), 64),
    "dead_c1_d32": Case("dead", (2, 1, 1), (1, 1, 1), 32),
    "mod2_c2_d0": Case("mod2", (4, 1, 1), (2, 1, 1), 0),
}

SREGS = ("%dynamic_smem_size", "%total_smem_size", "%aggr_smem_size", "%reserved_smem_offset_begin",
         "%reserved_smem_offset_end", "%reserved_smem_offset_cap", "%reserved_smem_offset_0",
         "%reserved_smem_offset_1", "%cluster_ctarank", "%cluster_nctarank")

#: per rank r: (slot name, PTX computing %v from %rP32 = mov.u32 P, %rdP = mov.u64 P, %rdG = cvta.shared P)
_PEER = (
    ("mapa_u32", "mapa.shared::cluster.u32 %w, %rP32, {r};\n\tcvt.u64.u32 %v, %w;"),
    ("mapa_u64", "mapa.shared::cluster.u64 %v, %rdP, {r};"),
    ("mapa_generic", "mapa.u64 %v, %rdG, {r};"),
    ("cvta_cluster_of_mapa", "mapa.shared::cluster.u64 %rdT, %rdP, {r};\n\tcvta.shared::cluster.u64 %v, %rdT;"),
    ("cvta_to_shared_of_mapa_generic", "mapa.u64 %rdT, %rdG, {r};\n\tcvta.to.shared.u64 %v, %rdT;"),
    ("cvta_to_cluster_of_mapa_generic", "mapa.u64 %rdT, %rdG, {r};\n\tcvta.to.shared::cluster.u64 %v, %rdT;"),
    ("isspacep_shared_peer", "mapa.u64 %rdT, %rdG, {r};\n\tisspacep.shared %q, %rdT;\n\tselp.u64 %v, 1, 0, %q;"),
    ("isspacep_cta_peer", "mapa.u64 %rdT, %rdG, {r};\n\tisspacep.shared::cta %q, %rdT;\n\tselp.u64 %v, 1, 0, %q;"),
    ("isspacep_cluster_peer",
     "mapa.u64 %rdT, %rdG, {r};\n\tisspacep.shared::cluster %q, %rdT;\n\tselp.u64 %v, 1, 0, %q;"),
    ("getctarank_u32", "mapa.shared::cluster.u32 %wT, %rP32, {r};\n\tgetctarank.shared::cluster.u32 %w, %wT;\n"
                       "\tcvt.u64.u32 %v, %w;"),
    ("getctarank_generic", "mapa.u64 %rdT, %rdG, {r};\n\tgetctarank.u64 %w, %rdT;\n\tcvt.u64.u32 %v, %w;"),
)

_OWN = (
    ("mov_u32_primary", "cvt.u64.u32 %v, %rP32;"),
    ("cvta_shared", "mov.u64 %v, %rdG;"),
    ("cvta_shared_cluster", "cvta.shared::cluster.u64 %v, %rdP;"),
    ("cvta_to_shared", "cvta.to.shared.u64 %v, %rdG;"),
    ("cvta_to_shared_cluster", "cvta.to.shared::cluster.u64 %v, %rdG;"),
    ("shared_window_base", "mov.u64 %rdT, 0;\n\tcvta.shared.u64 %v, %rdT;"),
    ("local_window_base", "mov.u64 %rdT, 0;\n\tcvta.local.u64 %v, %rdT;"),
    ("local_addr", "mov.u64 %v, %rdL;"),
    ("local_generic", "mov.u64 %v, %rdLG;"),
    ("param_addr", "mov.u64 %v, out_ptr;"),
    ("param_generic", "mov.u64 %rdT, out_ptr;\n\tcvta.param.u64 %v, %rdT;"),
    ("getctarank_own_u32", "getctarank.shared::cluster.u32 %w, %rP32;\n\tcvt.u64.u32 %v, %w;"),
    ("getctarank_own_generic", "getctarank.u64 %w, %rdG;\n\tcvt.u64.u32 %v, %w;"),
)

_ISSPACEP = (("shared", "%rdG"), ("local", "%rdLG"), ("param", "%rdPG"))


def _isspacep_slots():
    out = []
    for what, reg in _ISSPACEP:
        for sp in ("shared", "shared::cta", "shared::cluster", "global", "local", "param"):
            out.append((f"isspacep_{sp.replace('::', '_')}_of_{what}",
                        f"isspacep.{sp} %q, {reg};\n\tselp.u64 %v, 1, 0, %q;"))
    return tuple(out)


def slots(variant: str) -> list:
    """The slot names of ``variant``'s kernel, in the order of its output row."""
    v = VARIANTS[variant]
    names = [f"addr:{n}" for n in v.recorded] + [f"addr32:{n}" for n in v.recorded]
    names += [f"laddr:{_local_name(d)}" for d in v.locals]
    names += [n for n, _ in _OWN] + [n for n, _ in _isspacep_slots()] + [f"sreg:{s[1:]}" for s in SREGS]
    names += [f"{n}:{r}" for r in range(MAX_RANKS) for n, _ in _PEER]
    return names


def _local_name(decl: str) -> str:
    return decl.rstrip(";").split()[-1].split("[")[0]


def kernel_name(variant: str) -> str:
    return f"addr_probe_{variant}"


def ptx(variant: str) -> str:
    """The probe kernel of ``variant`` (PTX text; ptxas 13.0 accepts it for sm_90a)."""
    v = VARIANTS[variant]
    names = slots(variant)
    body = []

    def store(slot, code):
        body.append(f"\t// {slot}\n\t{code}\n\tst.global.u64 [%rdO+{8 * names.index(slot)}], %v;")

    for n in v.recorded:
        store(f"addr:{n}", f"mov.u64 %v, {n};")
    for n in v.recorded:
        store(f"addr32:{n}", f"mov.u32 %w, {n};\n\tcvt.u64.u32 %v, %w;")
    for d in v.locals:
        n = _local_name(d)
        store(f"laddr:{n}", f"mov.u64 %v, {n};\n\tst.local.u32 [{n}], %rT6;")
    for n, code in _OWN:
        store(n, code)
    for n, code in _isspacep_slots():
        store(n, code)
    for s in SREGS:
        store(f"sreg:{s[1:]}", f"mov.u32 %w, {s};\n\tcvt.u64.u32 %v, %w;")
    for r in range(MAX_RANKS):
        body.append(f"\tsetp.lt.u32 %pr, {r}, %rN;")
        for n, code in _PEER:
            guarded = "\n\t".join(f"@%pr {line.strip()}" for line in code.format(r=r).split("\n"))
            body.append(f"\t// {n}:{r}\n\tmov.u64 %v, {NONE};\n\t{guarded}\n"
                        f"\tst.global.u64 [%rdO+{8 * names.index(f'{n}:{r}')}], %v;")
    row = 8 * len(names)
    decls = "\n\t".join(v.decls)
    return (_HDR + "\n".join(v.module) + f"\n\n.visible .entry {kernel_name(variant)}(.param .u64 out_ptr)\n{{\n"
            "\t.reg .b32 %w, %wT, %rP32, %rN, %rT<8>;\n\t.reg .b64 %v, %rdT, %rdP, %rdG, %rdL, %rdLG, %rdPG, %rdO, "
            "%rdX<8>;\n\t.reg .pred %q, %pr;\n"
            f"\t{decls}\n\t" + "\n\t".join(v.locals) + "\n"
            "\tld.param.u64 %rdX0, [out_ptr];\n\tcvta.to.global.u64 %rdX0, %rdX0;\n"
            # linear thread index: (ctaid.y * nctaid.x + ctaid.x) * ntid.x + tid.x (1-D blocks)
            "\tmov.u32 %rT0, %ctaid.y;\n\tmov.u32 %rT1, %nctaid.x;\n\tmov.u32 %rT2, %ctaid.x;\n"
            "\tmad.lo.u32 %rT3, %rT0, %rT1, %rT2;\n\tmov.u32 %rT4, %ntid.x;\n\tmov.u32 %rT5, %tid.x;\n"
            "\tmad.lo.u32 %rT6, %rT3, %rT4, %rT5;\n"
            f"\tmul.wide.u32 %rdX1, %rT6, {row};\n\tadd.u64 %rdO, %rdX0, %rdX1;\n"
            f"\tmov.u32 %rP32, {v.primary};\n\tmov.u64 %rdP, {v.primary};\n\tcvta.shared.u64 %rdG, %rdP;\n"
            "\tmov.u64 %rdL, loc;\n\tcvta.local.u64 %rdLG, %rdL;\n\tst.local.u32 [loc], %rT6;\n"
            "\tmov.u64 %rdT, out_ptr;\n\tcvta.param.u64 %rdPG, %rdT;\n"
            "\tmov.u32 %rN, %cluster_nctarank;\n"
            + "\n".join(body) + "\n\tret;\n}\n")


def make_launch(case: str):
    from tcsim.launch import Launch

    c = CASES[case]
    n = c.grid[0] * c.grid[1] * c.grid[2] * THREADS
    out = np.zeros((n, len(slots(c.variant))), dtype=np.uint64)
    return Launch(ptx=ptx(c.variant), kernel=kernel_name(c.variant), grid=c.grid, block=(THREADS, 1, 1),
                  cluster=c.cluster, dynamic_smem=c.dynamic_smem, args=[out], name=f"address probe {case}")


def reduce_rows(case: str, out: np.ndarray) -> dict:
    """{slot: [per CTA: the value where every thread of the CTA wrote the same, else the list of values]}."""
    c = CASES[case]
    ncta = c.grid[0] * c.grid[1] * c.grid[2]
    rows = np.asarray(out, dtype=np.uint64).reshape(ncta, THREADS, -1)
    res = {}
    for k, name in enumerate(slots(c.variant)):
        per = []
        for cta in range(ncta):
            col = rows[cta, :, k]
            per.append(int(col[0]) if (col == col[0]).all() else [int(x) for x in col])
        res[name] = per
    return res


# ------------------------------------------------------------------------------------------------ record
def _func_attrs(queue):
    """In a child process: the driver's CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES / LOCAL_SIZE_BYTES of each probe
    kernel (JIT-loaded from its PTX)."""
    try:
        from cuda.bindings import driver as d
    except ImportError:
        from cuda import cuda as d
    out = {}
    try:
        d.cuInit(0)
        dev = d.cuDeviceGet(0)[1]
        ctx = d.cuDevicePrimaryCtxRetain(dev)[1]
        d.cuCtxSetCurrent(ctx)
        A = d.CUfunction_attribute
        for v in VARIANTS:
            err, mod = d.cuModuleLoadData(ptx(v).encode() + b"\0")
            if int(err):
                out[v] = {"error": str(err)}
                continue
            fn = d.cuModuleGetFunction(mod, kernel_name(v).encode())[1]
            out[v] = {"shared_size_bytes": int(d.cuFuncGetAttribute(A.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn)[1]),
                      "local_size_bytes": int(d.cuFuncGetAttribute(A.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fn)[1])}
    except Exception as e:  # noqa: BLE001 - reported in the record
        out["error"] = repr(e)
    queue.put(out)


def func_attrs() -> dict:
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_func_attrs, args=(q,))
    p.start()
    try:
        return q.get(timeout=120)
    finally:
        p.join()


def run_cases(backend: str, names=None, repeat: tuple = ("decl_c1_d0", "decl_c2_d0")) -> tuple:
    """({case: record entry}, a GPU Run for the provenance).  On the GPU the cases of ``repeat`` run twice (in two
    processes) and the entry says whether the two runs agreed (``stable``)."""
    entries, first = {}, None
    for name in names or CASES:
        c = CASES[name]
        launch = make_launch(name)
        run = execute(launch, backend)
        if first is None and run.ok:
            first = run
        e = {"variant": c.variant, "kernel": kernel_name(c.variant), "grid": list(c.grid), "block": [THREADS, 1, 1],
             "cluster": list(c.cluster), "dynamic_smem": c.dynamic_smem, "ptx_sha256": sha256(ptx(c.variant))}
        if not run.ok:
            e.update(error=run.error, detail=run.detail)
        else:
            e["values"] = reduce_rows(name, run.outputs[0])
            if backend == "gpu" and name in repeat:
                again = execute(make_launch(name), backend)
                e["stable"] = bool(again.ok and reduce_rows(name, again.outputs[0]) == e["values"])
        entries[name] = e
    return entries, first


def record(out_dir: Path, argv) -> Path:
    entries, first = run_cases("gpu")
    rec = {"meta": {**provenance(command_line("calib.probes.address_probe", ["record", *argv]), first),
                    "none": NONE, "threads": THREADS, "func_attrs": func_attrs()},
           "cases": entries}
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / RECORD_NAME
    write_json(path, rec)
    return path


# ------------------------------------------------------------------------------------------------ compare
#: generic addresses: the driver picks the windows' bases per process (the record shows a new base in every launch),
#: so these are compared relative to the CTA's own window base (the slot named), and the bases by their alignment
#: (the low bits they must have: 4 GiB for shared, 16 MiB for local; the parameter bank's address by its low 24
#: bits)
RELATIVE = {"cvta_shared": "shared_window_base", "cvta_shared_cluster": "shared_window_base",
            "local_generic": "local_window_base",
            **{f"{n}:{r}": "shared_window_base" for r in range(MAX_RANKS)
               for n in ("mapa_generic", "cvta_cluster_of_mapa")}}
LOW_BITS = {"shared_window_base": 32, "local_window_base": 24, "param_generic": 24}


def normalised(values: dict) -> dict:
    """``values`` (one case's {slot: per CTA}) with every generic address replaced by what is comparable across
    processes: its offset from the window base (:data:`RELATIVE`), or its low bits (:data:`LOW_BITS`)."""
    out = {}
    for slot, per in values.items():
        if slot in RELATIVE:
            bases = values[RELATIVE[slot]]
            out[slot] = [v if v == NONE or not isinstance(v, int) else
                         f"{RELATIVE[slot]}+0x{(v - b) % (1 << 64):x}" for v, b in zip(per, bases)]
        elif slot in LOW_BITS:
            k = LOW_BITS[slot]
            out[slot] = [f"low {k} bits 0x{v % (1 << k):x}" if isinstance(v, int) else v for v in per]
        else:
            out[slot] = per
    return out


def compare(golden: dict, sim: dict) -> list:
    """[(case, slot, cta, gpu value, tcsim value)] where tcsim differs from the record (generic addresses
    compared by :func:`normalised`)."""
    diffs = []
    for name, g in golden["cases"].items():
        s = sim.get(name)
        if "values" not in g:
            continue
        if s is None or "values" not in s:
            diffs.append((name, "*", -1, "recorded", (s or {}).get("detail", "not run")))
            continue
        gv, sv = normalised(g["values"]), normalised(s["values"])
        for slot, per in gv.items():
            mine = sv.get(slot)
            for cta, want in enumerate(per):
                got = None if mine is None else mine[cta]
                if got != want:
                    diffs.append((name, slot, cta, want, got))
    return diffs


def _fmt(v):
    if isinstance(v, int):
        return f"0x{v:x}"
    if isinstance(v, list):
        return "[" + ", ".join(_fmt(x) for x in v[:4]) + (", ...]" if len(v) > 4 else "]")
    return str(v)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m calib.probes.address_probe", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record", help="run the probes on the GPU and write DIR/address_layout.json")
    r.add_argument("--out", required=True, type=Path)
    i = sub.add_parser("install", help="copy a record to tests/hw/golden_h100/address_layout.json")
    i.add_argument("record", type=Path)
    s = sub.add_parser("sim", help="tcsim's values next to the recorded ones")
    s.add_argument("--golden", type=Path, default=GOLDEN)
    s.add_argument("--max", type=int, default=40)
    p = sub.add_parser("ptx", help="print a probe kernel")
    p.add_argument("variant", choices=sorted(VARIANTS))
    args = ap.parse_args(argv)
    if args.cmd == "ptx":
        print(ptx(args.variant), end="")
        return 0
    if args.cmd == "record":
        path = record(args.out, ["--out", str(args.out)])
        print(f"wrote {path}")
        return 0
    if args.cmd == "install":
        rec = json.loads(args.record.read_text())
        if "cases" not in rec or "meta" not in rec:
            print(f"{args.record} is no address-layout record", file=sys.stderr)
            return 1
        install_files([(args.record, GOLDEN.name)], GOLDEN.parent)
        print(f"installed {GOLDEN}")
        return 0
    golden = json.loads(args.golden.read_text())
    sim, _ = run_cases("sim", [n for n in golden["cases"] if n in CASES])
    diffs = compare(golden, sim)
    for case, slot, cta, want, got in diffs[:args.max]:
        print(f"{case:<16} {slot:<40} cta {cta}: GPU {_fmt(want)}  tcsim {_fmt(got)}")
    print(f"{len(diffs)} difference(s)")
    return 1 if diffs else 0


if __name__ == "__main__":
    raise SystemExit(main())
