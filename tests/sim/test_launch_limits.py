"""CUDA launch limits and bad launch descriptions: each a LaunchError naming the argument (or the PTX line), never
a traceback (issue 17 item 2).  The limit values come from tcsim.limits' sources (CUDA programming guide tables,
the Hopper/Blackwell tuning guides, ptxas 13.0's own messages); the cases sit just past each limit."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tcsim.isa.errors import LaunchError, PtxSyntaxError, VerifyError
from tcsim.isa.mangling import pointee_types
from tcsim.launch import Launch, run_launch

HEAD = ".version 8.5\n.target sm_90a\n.address_size 64\n"
RET = HEAD + ".visible .entry k()\n{\n  ret;\n}\n"

# copy in[tid] -> out[tid] as 16-bit values; the mangled name says copy(const __half*, __half*)
COPY16 = HEAD + """.visible .entry _Z4copyPK6__halfPS_(.param .u64 src, .param .u64 dst)
{
  .reg .b16 %h<2>;
  .reg .b32 %r<2>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [dst];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 2;
  add.u64 %rd4, %rd1, %rd3;
  ld.global.b16 %h1, [%rd4];
  add.u64 %rd4, %rd2, %rd3;
  st.global.b16 [%rd4], %h1;
  ret;
}
"""


def _err(fn) -> str:
    with pytest.raises(LaunchError) as e:
        fn()
    return str(e.value)


# ------------------------------------------------------------------------------------------------ shape limits
def test_grid_limits_name_the_dimension():
    msg = _err(lambda: Launch(ptx=RET, grid=(1, 65536, 1)))
    assert "grid=(1, 65536, 1)" in msg and "gridDim.y = 65536" in msg and "65535" in msg
    assert "gridDim.z" in _err(lambda: Launch(ptx=RET, grid=(1, 1, 65536)))
    assert "gridDim.x = 2147483648" in _err(lambda: Launch(ptx=RET, grid=(2 ** 31, 1, 1)))
    assert Launch(ptx=RET, grid=(2 ** 31 - 1, 65535, 65535)).grid == (2 ** 31 - 1, 65535, 65535)


def test_block_limits():
    assert "blockDim.z = 65" in _err(lambda: Launch(ptx=RET, block=(1, 1, 65)))
    assert "1089 threads" in _err(lambda: Launch(ptx=RET, block=(33, 33, 1)))
    assert "at most 1024 threads" in _err(lambda: Launch(ptx=RET, block=(1025, 1, 1)))
    assert Launch(ptx=RET, block=(1, 16, 64)).block == (1, 16, 64)


def test_cluster_of_16_needs_the_non_portable_opt_in():
    msg = _err(lambda: Launch(ptx=RET, grid=(16, 1, 1), cluster=(16, 1, 1)))
    assert "cluster=(16, 1, 1)" in msg and "portable 8" in msg and "non_portable_cluster=True" in msg
    assert Launch(ptx=RET, grid=(16, 1, 1), cluster=(16, 1, 1), non_portable_cluster=True).cluster == (16, 1, 1)
    assert "17 CTAs" in _err(lambda: Launch(ptx=RET, grid=(17, 1, 1), cluster=(17, 1, 1),
                                            non_portable_cluster=True))
    assert "not a multiple of cluster" in _err(lambda: Launch(ptx=RET, grid=(12, 1, 1), cluster=(8, 1, 1)))


@pytest.mark.parametrize("grid", [None, "abc", (1, 2, 3, 4), (0, 1, 1), (1.5,), (True, 1, 1), (1, None, 1)])
def test_bad_grid_values_are_launch_errors(grid):
    assert "grid=" in _err(lambda: Launch(ptx=RET, grid=grid))


@pytest.mark.parametrize("smem", [-1, "x", 1.5, None, True])
def test_bad_dynamic_smem_values_are_launch_errors(smem):
    assert "dynamic_smem=" in _err(lambda: Launch(ptx=RET, dynamic_smem=smem))


def test_shared_memory_opt_in_maximum():
    big = HEAD + """.visible .entry k()
{
  .shared .align 16 .b8 tile[200000];
  st.shared.u32 [tile], 1;
  ret;
}
"""
    msg = _err(lambda: run_launch(Launch(ptx=big, dynamic_smem=32449)))     # 200000 + 32449 = 232449
    assert "dynamic_smem=32449" in msg and "232449 bytes" in msg and "232448" in msg
    too_big = big.replace("200000", "232449")
    with pytest.raises((LaunchError, VerifyError)) as e:            # the PTX checks (isa) may see it first
        run_launch(Launch(ptx=too_big))
    assert ("232449" in str(e.value) or "0x38c01" in str(e.value)) and "<ptx>:6:" in str(e.value)


def test_kernel_parameter_space():
    huge = HEAD + ".visible .entry k(.param .align 4 .b8 x[99999999999])\n{\n  ret;\n}\n"
    with pytest.raises((LaunchError, VerifyError)) as e:            # the PTX checks (isa) may see it first
        run_launch(Launch(ptx=huge, args=[b"\0"]))
    assert ("32764" in str(e.value) or "0x7ffc" in str(e.value)) and "<ptx>:4:" in str(e.value)
    ok = HEAD + ".visible .entry k(.param .align 4 .b8 x[32764])\n{\n  ret;\n}\n"
    run_launch(Launch(ptx=ok, args=[bytes(32764)]))
    old = ok.replace(".version 8.5", ".version 8.0").replace("32764", "4356")
    with pytest.raises((LaunchError, VerifyError)) as e:
        run_launch(Launch(ptx=old, args=[bytes(4356)]))
    assert "4352" in str(e.value) or "0x1100" in str(e.value)
    # the launch-level check itself (a parsed module is not re-verified): the limit by PTX version
    from tcsim.limits import LaunchLimits
    assert LaunchLimits().param_bytes((8, 0)) == 4352 and LaunchLimits().param_bytes((8, 1)) == 32764


def test_local_memory_per_thread():
    src = HEAD + ".visible .entry k()\n{\n  .local .align 4 .b8 big[4000000000];\n  ret;\n}\n"
    msg = _err(lambda: run_launch(Launch(ptx=src)))
    assert "4000000000 bytes of local memory per thread" in msg and "524288" in msg and "<ptx>:6:" in msg


def test_declared_register_count_against_the_register_file():
    msg = _err(lambda: run_launch(Launch(ptx=RET, block=(1024, 1, 1), registers=72)))
    assert "registers=72" in msg and "65536" in msg
    run_launch(Launch(ptx=RET, block=(1024, 1, 1), registers=64))          # 32 warps x 64 x 32 = 65536
    capped = RET.replace("k()", "k() .maxnreg 40")
    assert ".maxnreg 40" in _err(lambda: run_launch(Launch(ptx=capped, registers=48)))
    assert "registers=" in _err(lambda: run_launch(Launch(ptx=RET, registers=256)))


def test_register_count_from_ptxas():
    from tcsim.isa.ptxas import PTXAS
    if PTXAS is None:
        pytest.skip("ptxas not on PATH")
    # 90 volatile loads all before the first volatile store (volatile accesses keep their order): 90 live registers
    n = 90
    body = "\n".join(f"  ld.volatile.global.u32 %r{i}, [%rd1+{4 * i}];" for i in range(n)) + "\n" + \
        "\n".join(f"  st.volatile.global.u32 [%rd1+{4 * i}], %r{n - 1 - i};" for i in range(n))
    src = HEAD + (".visible .entry k(.param .u64 p)\n{\n  .reg .b32 %r<" + str(n) + ">;\n  .reg .b64 %rd<2>;\n"
                  "  ld.param.u64 %rd1, [p];\n" + body + "\n  ret;\n}\n")
    # 1024 threads x >= 90 registers > the 64 K register file
    msg = _err(lambda: run_launch(Launch(ptx=src, block=(1024, 1, 1), args=[np.zeros(n, np.uint32)],
                                         registers="ptxas")))
    assert "too many resources requested for launch" in msg
    r = run_launch(Launch(ptx=src, block=(32, 1, 1), args=[np.arange(n, dtype=np.uint32)], registers="ptxas"))
    assert np.array_equal(r.outputs[0], np.arange(n, dtype=np.uint32)[::-1])


# ------------------------------------------------------------------------------------------------ argument dtypes
def test_mangled_name_gives_pointer_types():
    # expectations from c++filt: mma_16x16(__half const*, __half const*, __half*, int) ...
    assert pointee_types("_Z9mma_16x16PK6__halfS1_PS_i", 4) == [("f16", 1)] * 3 + [None]
    assert pointee_types("_Z12calls_kernelPKiPiPxPfPji", 6) == [("s32", 1), ("s32", 1), ("s64", 1), ("f32", 1),
                                                                 ("u32", 1), None]
    assert pointee_types("_Z20tma_load_scale_store14CUtensorMap_stPfiif", 5) == [None, ("f32", 1), None, None, None]
    assert pointee_types("_Z1kPvPcPKhP13__nv_bfloat16P6float4", 5) == [("any", 1), ("any", 1), ("u8", 1),
                                                                         ("bf16", 1), ("f32", 4)]
    # templates, namespaces, unmangled names and a count that does not match say nothing
    for name in ("_Z6kernelILi4EEvPf", "_ZN2ns1kEPf", "gemm_kernel"):
        assert pointee_types(name, 1) is None
    assert pointee_types("_Z4copyPK6__halfPS_", 3) is None


def test_array_dtype_must_match_the_mangled_pointer_type():
    x = np.arange(32, dtype=np.float64)
    for bad in (x, x.astype(np.complex128), x.astype(str)):
        msg = _err(lambda: run_launch(Launch(ptx=COPY16, args=[bad, np.zeros(32, np.float16)])))
        assert "argument 0 (parameter src)" in msg
    msg = _err(lambda: run_launch(Launch(ptx=COPY16, args=[x, np.zeros(32, np.float16)])))
    assert "float64 array" in msg and "f16" in msg and "cast=True" in msg
    # f16 data, or its 16-bit patterns, are what the kernel reads
    r = run_launch(Launch(ptx=COPY16, args=[x.astype(np.float16), np.zeros(32, np.float16)]))
    assert np.array_equal(r.outputs[1], x.astype(np.float16))
    r = run_launch(Launch(ptx=COPY16, args=[x.astype(np.float16).view(np.uint16), np.zeros(32, np.uint16)]))
    assert np.array_equal(r.outputs[1].view(np.float16), x.astype(np.float16))


def test_dtype_rules_per_element_type():
    from tcsim.isa import ir
    from tcsim.launch import check_array_dtype
    p = ir.Param("p", "u64", None)
    ok = [(("u8", 1), np.float16), (("s32", 1), np.float32), (("s32", 1), np.uint32), (("f16", 1), np.uint16),
          (("f32", 2), np.complex64), (("f32", 4), np.float32), (("any", 1), np.complex128)]
    bad = [(("f16", 1), np.float64), (("f16", 1), np.complex64), (("f32", 1), np.float16), (("s32", 1), np.int16),
           (("f32", 1), np.complex64), (("bf16", 1), np.float16)]
    for decl, dt in ok:
        check_array_dtype(0, p, np.zeros(4, dt), decl, False)
    for decl, dt in bad:
        with pytest.raises(LaunchError):
            check_array_dtype(0, p, np.zeros(4, dt), decl, False)


def test_cast_converts_to_the_declared_type():
    x = np.linspace(-3, 3, 32)
    r = run_launch(Launch(ptx=COPY16, args=[x, np.zeros(32)], cast=True))
    assert r.outputs[1].dtype == np.float16 and r.outputs[0].dtype == np.float16
    assert np.array_equal(r.outputs[1], x.astype(np.float16))


def test_explicit_signature_for_an_unmangled_kernel():
    src = COPY16.replace("_Z4copyPK6__halfPS_", "copy16")
    run_launch(Launch(ptx=src, args=[np.zeros(32), np.zeros(32)]))                 # nothing declared: unchecked
    msg = _err(lambda: run_launch(Launch(ptx=src, args=[np.zeros(32), np.zeros(32)], signature=("f16*", "f16*"))))
    assert "argument 0 (parameter src) is a float64 array" in msg
    msg = _err(lambda: run_launch(Launch(ptx=src, args=[np.zeros(32, np.float16)] * 2,
                                         signature={"dst": "f16", "nope": "f32"})))
    assert "'nope'" in msg
    assert "not an element type" in _err(lambda: run_launch(Launch(ptx=src, args=[np.zeros(32)] * 2,
                                                                   signature=("f16", "wat"))))


def test_object_and_str_arrays_are_never_device_data():
    src = COPY16.replace("_Z4copyPK6__halfPS_", "copy16")
    for bad in (np.array([object()] * 32), np.array(["a"] * 32)):
        msg = _err(lambda: run_launch(Launch(ptx=src, args=[bad, np.zeros(32, np.float16)])))
        assert "argument 0 (parameter src)" in msg and "not device data" in msg


# ------------------------------------------------------------------------------------------------ other arguments
def test_ptx_argument_errors(tmp_path):
    assert "is a directory" in _err(lambda: run_launch(Launch(ptx=tmp_path)))
    assert "is a directory" in _err(lambda: run_launch(Launch(ptx=str(tmp_path))))
    assert "does not exist" in _err(lambda: run_launch(Launch(ptx=tmp_path / "nope.ptx")))
    assert "ptx=123" in _err(lambda: run_launch(Launch(ptx=123)))
    bad = tmp_path / "k.ptx"
    bad.write_bytes(RET.encode().replace(b"  ret;", b"  // caf\xe9\n  ret;"))
    # (the rule and diagnostic of tcsim check: a PTX syntax error at the byte, tests/robust/test_bad_inputs.py)
    with pytest.raises(PtxSyntaxError) as e:
        run_launch(Launch(ptx=bad))
    assert "0xe9" in str(e.value) and "k.ptx:6:9" in str(e.value)


@pytest.mark.parametrize("kw,name", [({"seed": "abc"}, "seed="), ({"seed": 1.5}, "seed="),
                                     ({"max_instructions": 0}, "max_instructions=0"),
                                     ({"max_instructions": -1}, "max_instructions=-1"),
                                     ({"max_instructions": "x"}, "max_instructions="),
                                     ({"max_seconds": 0}, "max_seconds=0"),
                                     ({"max_seconds": float("nan")}, "max_seconds=")])
def test_run_options_are_checked(kw, name):
    assert name in _err(lambda: run_launch(Launch(ptx=RET), **kw))


def test_args_must_be_a_list():
    assert "args=" in _err(lambda: Launch(ptx=RET, args=5))


# ------------------------------------------------------------------------------------------------ tcsim run
class _Ran:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def _tcsim(capsys, *argv):
    """``tcsim ARGV`` in this process (the CLI's main); an uncaught exception fails the test with its traceback."""
    from tcsim.cli import main
    rc = main(list(argv))
    out = capsys.readouterr()
    return _Ran(rc, out.out, out.err)


def test_tcsim_run_without_make_launch_is_a_diagnostic(tmp_path, capsys):
    f = tmp_path / "nolaunch.py"
    f.write_text("X = 1\n")
    g = tmp_path / "raises.py"
    g.write_text("def make_launch():\n    return {}['missing']\n")
    h = tmp_path / "notalaunch.py"
    h.write_text("def make_launch():\n    return 42\n")
    for path, want in ((f, "defines neither make_launch() nor LAUNCH"),
                       (g, f"make_launch() raised KeyError: 'missing' (at {g}:2)"),
                       (h, "make_launch() is a int, not a tcsim.launch.Launch")):
        r = _tcsim(capsys, "run", str(path))
        assert r.returncode == 1, r.stderr
        assert want in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_tcsim_run_launch_file_with_a_python_error(tmp_path, capsys):
    f = tmp_path / "broken.py"
    f.write_text("import numpy as np\nx = np.zeros(\n")
    r = _tcsim(capsys, "run", str(f))
    assert r.returncode == 2 and "SyntaxError" in r.stderr and f"{f}:2" in r.stderr and "Traceback" not in r.stderr


def test_cli_bad_grid_in_launch_file(tmp_path, capsys):
    f = tmp_path / "grid.py"
    f.write_text(f"from tcsim.launch import Launch\nLAUNCH = Launch(ptx={RET!r}, grid=(1, 65536, 1))\n")
    r = _tcsim(capsys, "run", str(f))
    assert r.returncode == 1 and "gridDim.y = 65536" in r.stderr and "Traceback" not in r.stderr


if __name__ == "__main__":
    raise SystemExit(pytest.main([str(Path(__file__))]))
