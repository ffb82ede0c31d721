"""Bad inputs the robustness fuzzer found, each a located diagnostic now (file:line:col for PTX, the option or the
launch file's line for launches and command lines) instead of a Python traceback."""
from __future__ import annotations

import numpy as np
import pytest

from tcsim.cli import main
from tcsim.isa.errors import LaunchError, PtxSyntaxError, TcsimError, VerifyError
from tcsim.isa.lexer import decode_source, read_source
from tcsim.launch import Launch, run_launch

KERNEL = """.version 8.0
.target sm_90a
.address_size 64
// a comment
.visible .entry k(.param .u64 out)
{
\t.reg .b64 %rd<3>;
\t.reg .b32 %r<3>;
\tld.param.u64 %rd1, [out];
\tcvta.to.global.u64 %rd2, %rd1;
\tmov.u32 %r1, 7;
\tst.global.u32 [%rd2], %r1;
\tret;
}
"""


def _cli(capsys, *argv):
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out + out.err


@pytest.mark.parametrize("where,line,col", [("// a com\xffment", 4, 9), ("\tret;\xfe", 13, 6), ("\t\xc3\xa9ret;", 13, 2)])
def test_check_reports_a_non_ascii_byte_at_its_line_and_column(tmp_path, capsys, where, line, col):
    old = {"// a com\xffment": "// a comment", "\tret;\xfe": "\tret;", "\t\xc3\xa9ret;": "\tret;"}[where]
    raw = KERNEL.replace(old, where).encode("latin-1")
    p = tmp_path / "k.ptx"
    p.write_bytes(raw)
    rc, out = _cli(capsys, "check", str(p))
    assert rc == 1
    byte = raw[len("\n".join(raw.decode("latin-1").split("\n")[:line - 1])) + col]   # line/col -> the byte
    assert byte > 127
    assert out.startswith(f"{p}:{line}:{col}: syntax error: unexpected non-ASCII byte 0x{byte:02x}")


@pytest.mark.parametrize("raw,line,col,byte", [
    (KERNEL.replace("// a comment", "// caf\u00e9").encode(), 4, 7, 0xc3),        # UTF-8, in a comment
    (KERNEL.replace("// a comment", "// a \xff").encode("latin-1"), 4, 6, 0xff),  # not UTF-8
    (KERNEL.replace("\tret;", "\tret; /* \u2014 */").encode(), 13, 10, 0xe2),    # UTF-8, in code's line
])
def test_one_non_ascii_rule_for_check_and_every_launch_form(tmp_path, capsys, raw, line, col, byte):
    # ptxas 13.0 rejects any byte above 0x7F, comments included ("Unexpected non-ASCII character encountered on
    # line N"; typing_probes.tsv): tcsim check, Launch(ptx=<path>), Launch(ptx=<bytes>) and Launch(ptx=<text>) give
    # the same located diagnostic
    p = tmp_path / "k.ptx"
    p.write_bytes(raw)
    rc, out = _cli(capsys, "check", str(p))
    assert rc == 1
    head = f"unexpected non-ASCII byte 0x{byte:02x}"
    assert out.startswith(f"{p}:{line}:{col}: syntax error: {head}")
    assert f"encountered on line {line}" in out
    forms = [(str(p), str(p)), (raw, "ptx=<bytes>")]
    try:
        forms.append((raw.decode("utf-8"), "<ptx>"))
    except UnicodeDecodeError:
        pass
    for ptx, name in forms:
        with pytest.raises(PtxSyntaxError) as e:
            run_launch(Launch(ptx=ptx, args=[np.zeros(1, np.uint32)]))
        assert (e.value.loc.file, e.value.loc.line, e.value.loc.col) == (name, line, col), (name, str(e.value))
        assert e.value.message == out.split(": syntax error: ")[1].split(" Offending text")[0].strip()


def test_decode_source_accepts_ascii_and_locates_the_first_other_byte():
    assert decode_source(b"abc\n") == "abc\n"
    with pytest.raises(PtxSyntaxError) as e:
        decode_source(b"ab\nc\x80d\n", "f.ptx")
    assert (e.value.loc.line, e.value.loc.col) == (2, 2) and "0x80" in str(e.value)


def test_check_of_a_directory_or_missing_file_names_it(tmp_path, capsys):
    rc, out = _cli(capsys, "check", str(tmp_path))
    assert rc == 1 and f"{tmp_path}: error: {tmp_path} is a directory" in out
    rc, out = _cli(capsys, "check", str(tmp_path / "no.ptx"))
    assert rc == 1 and "no such file" in out
    with pytest.raises(PtxSyntaxError, match="is a directory"):
        read_source(tmp_path)


def _launch_file(tmp_path, text):
    p = tmp_path / "launch.py"
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize("text,rc,wants", [
    ("x = 1\n", 1, ["defines neither make_launch() nor LAUNCH"]),
    ("def make_launch():\n    return 5\n", 1, ["make_launch() is a int, not a tcsim.launch.Launch"]),
    ("LAUNCH = 'x.ptx'\n", 1, ["LAUNCH is a str, not a tcsim.launch.Launch"]),
    ("make_launch = 5\n", 1, ["make_launch is a int, not a function"]),
    ("def make_launch():\n    raise ValueError('boom')\n", 1, ["make_launch() raised ValueError: boom (at ",
                                                                "launch.py:2)"]),
    ("def make_launch(:\n", 2, ["SyntaxError", "launch.py:1"]),
    ("import nosuchmodule_xyz\n", 2, ["ModuleNotFoundError", "launch.py:1"]),
    ("from tcsim.examples.mma_gemm import make_launch\ndef check(result, launch):\n    raise KeyError('k')\n", 1,
     ["check(result, launch) raised KeyError: 'k' (at ", "launch.py:3)"]),
    ("from tcsim.examples.mma_gemm import make_launch\ndef check(result, launch):\n    return True\n", 1,
     ["check(result, launch) returned True"]),
])
def test_run_reports_launch_file_problems_with_their_place(tmp_path, capsys, text, rc, wants):
    got, out = _cli(capsys, "run", _launch_file(tmp_path, text), "--no-detect")
    assert got == rc and all(w in out for w in wants) and "Traceback" not in out, out


@pytest.mark.parametrize("path", ["{tmp}", "{tmp}/missing.py", "", "nosuch.module.xyz", "a:b", "tcsim..x"])
def test_run_of_a_path_that_is_no_launch_file(tmp_path, capsys, path):
    rc, out = _cli(capsys, "run", path.replace("{tmp}", str(tmp_path)))
    assert rc == 2 and "tcsim run: launch file" in out


@pytest.mark.parametrize("opt,value", [("--trace", "{tmp}"), ("--findings", "{tmp}/no/such/f.json"),
                                       ("--trace", "{tmp}/no/t.jsonl")])
def test_run_checks_output_paths_before_running(tmp_path, capsys, opt, value):
    rc, out = _cli(capsys, "run", "tcsim.examples.mma_gemm", opt, value.replace("{tmp}", str(tmp_path)))
    assert rc == 2 and f"tcsim: {opt} " in out


def _tiny(tmp_path, body="\tmov.u32 %r1, 7;"):
    return Launch(ptx=KERNEL.replace("\tmov.u32 %r1, 7;", body), kernel="k", args=[np.zeros(1, np.uint32)])


@pytest.mark.parametrize("kw,name", [({"seed": "abc"}, "seed="), ({"seed": 1.5}, "seed="),
                                     ({"timing": "x"}, "timing="), ({"schedule": 5}, "schedule="),
                                     ({"trace": 5}, "trace="), ({"observers": 5}, "observers="),
                                     ({"observers": [object()]}, "neither callable"),
                                     ({"tma_params": "x"}, "tma_params="),
                                     ({"nosuch_keyword": 1}, "'nosuch_keyword'")])
def test_run_launch_names_a_bad_option(tmp_path, kw, name):
    with pytest.raises(LaunchError, match=name.replace("(", r"\(")):
        run_launch(_tiny(tmp_path), **kw)


def test_run_launch_trace_into_a_directory(tmp_path):
    with pytest.raises(LaunchError, match="trace=.*cannot open it for writing"):
        run_launch(_tiny(tmp_path), trace=str(tmp_path))


def test_lowering_of_the_wrong_type_is_a_launch_error(tmp_path):
    with pytest.raises(LaunchError, match="lowering"):
        Launch(ptx=KERNEL, kernel="k", lowering={5})


@pytest.mark.parametrize("body,typ", [("\tmov.b16 %rs1, 0f3F800000;", "b16"),
                                      ("\tmov.s64 %rd1, 0f00000000;", "s64")])
def test_float_immediate_for_an_integer_of_another_size_is_located(tmp_path, body, typ):
    """PTX ISA §4.5.2: a 0f literal is a 32-bit pattern; as a 16- or 64-bit integer it has no meaning."""
    text = body if typ != "b16" else "\t.reg .b16 %rs<2>;\n" + body
    with pytest.raises(TcsimError) as e:
        run_launch(_tiny(tmp_path, text))
    assert isinstance(e.value, VerifyError) and e.value.loc is not None
    assert e.value.loc.text.strip() == body.strip() and f".{typ} operand" in str(e.value)


def test_an_address_far_past_every_buffer_is_a_memory_fault(tmp_path):
    """A pointer argument of 2^64 - 2^31 (the fuzzer's -2**31 for a .u64 parameter) lies more than 2^63 bytes past
    the last buffer: an out-of-bounds store (it was an IndexError from a wrapped negative offset)."""
    from tcsim.isa.errors import MemoryFault
    with pytest.raises(MemoryFault, match="out-of-bounds global write") as e:
        run_launch(Launch(ptx=KERNEL, kernel="k", args=[(1 << 64) - (1 << 31)]))
    assert e.value.loc is not None and e.value.loc.line == 12


def test_a_global_variable_too_large_for_the_host_is_located(tmp_path):
    text = KERNEL.replace("// a comment", ".global .align 4 .b8 huge[1125899906842624];")   # 2^50 bytes
    with pytest.raises(LaunchError, match="huge .* cannot be allocated") as e:
        run_launch(Launch(ptx=text, kernel="k", args=[np.zeros(1, np.uint32)]))
    assert e.value.loc is not None and e.value.loc.line == 4


def test_schedule_k_is_built_directly_for_any_k(tmp_path):
    """tcsim run --schedule K: schedule K of an exploration, without making the K before it (K = 10^11 hung)."""
    from tcsim.explore import baseline, make_schedules, schedule_of
    launch = Launch(ptx=KERNEL, kernel="k", block=(64, 1, 1), args=[np.zeros(1, np.uint32)])
    ref = make_schedules(baseline(launch)[0], 8, seed=3)
    for k in range(8):
        assert repr(schedule_of(launch, k, seed=3)) == repr(ref[k])
    big = schedule_of(launch, 10 ** 11, seed=3)
    assert big.index == 10 ** 11 and big.label().startswith("schedule 100000000000")


def test_a_kernel_name_the_module_lacks_names_the_argument(tmp_path):
    with pytest.raises(LaunchError, match=r"kernel='nosuch': .* has no kernel named 'nosuch' \(kernels: k\)"):
        run_launch(Launch(ptx=KERNEL, kernel="nosuch", args=[np.zeros(1, np.uint32)]))
    as_func = KERNEL.replace(".visible .entry k(.param .u64 out)", ".visible .func k(.param .u64 out)")
    with pytest.raises(LaunchError, match="declares k as a .func, not a kernel") as e:
        run_launch(Launch(ptx=as_func, kernel="k", args=[np.zeros(1, np.uint32)]))
    assert e.value.loc is not None and e.value.loc.line == 5


def test_a_function_declaring_too_many_registers_is_located(tmp_path, capsys):
    """.reg .pred %p<524289> made every warp allocate half a million registers (minutes, gigabytes): now check
    and run report it at the function."""
    from tcsim.engine import MAX_DECLARED_REGISTERS
    from tcsim.isa.errors import UnsupportedError
    n = MAX_DECLARED_REGISTERS + 1
    text = KERNEL.replace("\t.reg .b32 %r<3>;", f"\t.reg .b32 %r<3>;\n\t.reg .pred %q<{n}>;")
    p = tmp_path / "k.ptx"
    p.write_text(text)
    rc, out = _cli(capsys, "check", str(p))
    assert rc == 1 and out.startswith(f"{p}:5:") and f"declares {n + 6:,} registers" in out    # with %rd<3> and %r<3>
    with pytest.raises(UnsupportedError, match="registers"):
        run_launch(Launch(ptx=text, kernel="k", args=[np.zeros(1, np.uint32)]))


def test_a_block_against_the_kernels_reqntid_is_located_at_the_kernel(tmp_path):
    text = KERNEL.replace(".visible .entry k(.param .u64 out)", ".visible .entry k(.param .u64 out)\n.reqntid 64, 1, 1")
    with pytest.raises(LaunchError, match=r"requires .reqntid \(64, 1, 1\) but the launch uses block \(32, 1, 1\)") as e:
        run_launch(Launch(ptx=text, kernel="k", args=[np.zeros(1, np.uint32)]))
    assert e.value.loc is not None and e.value.loc.line == 5
