"""griddepcontrol and launch sequences with programmatic dependent launch (PTX ISA 9.1 §9.7.13 griddepcontrol,
:mod:`tcsim.grid_dependency`).

The kernels are the nvcc fixture ``tests/fixtures/nvcc/griddep.cu`` (cudaTriggerProgrammaticLaunchCompletion /
cudaGridDependencySynchronize) and small hand-written PTX; expected outputs are computed here with numpy, and the
H100's outputs for the same sequence are replayed in ``tests/hw/test_hopper_misc_golden.py``.
"""
from pathlib import Path

import numpy as np
import pytest

from tcsim.isa.errors import LaunchError, VerifyError
from tcsim.launch import Launch, run_launch, run_sequence
from tests.ptx_frame import kernel as frame
from tests.semantics.test_b128 import assert_ptxas

FIXTURE = (Path(__file__).resolve().parents[1] / "fixtures" / "nvcc" / "griddep.sm_90a.ptx").read_text()


def pair(dependent="pdl_dependent", programmatic=True, n=300):
    rng = np.random.default_rng(2)
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    y = np.zeros(n, np.int32)
    z = rng.integers(-1000, 1000, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    dargs = [y, z, out, np.int32(n)] if dependent == "pdl_dependent" else [y, out, np.int32(n)]
    return x, z, [Launch(ptx=FIXTURE, kernel="pdl_primary", grid=(3, 1, 1), block=(128, 1, 1),
                         args=[x, y, np.int32(n)]),
                  Launch(ptx=FIXTURE, kernel=dependent, grid=(3, 1, 1), block=(128, 1, 1), args=dargs,
                         programmatic=programmatic)]


@pytest.mark.parametrize("programmatic", [False, True])
def test_the_dependent_sees_the_primary_output_after_its_wait(programmatic):
    x, z, launches = pair(programmatic=programmatic)
    seq = run_sequence(launches)
    n = x.size
    y = x * 2 + 1
    assert np.array_equal(seq[0].outputs[1], y)
    assert np.array_equal(seq[1].outputs[2], y[(np.arange(n) + 1) % n] + z * 3)
    assert seq.findings == []


def test_reading_the_primary_output_before_the_wait_is_a_finding_naming_both_sides():
    x, _, launches = pair("pdl_dependent_racy")
    seq = run_sequence(launches)
    race = [f for f in seq.findings if f.cls == 20]
    assert len(race) == 1
    f = race[0]
    lines = FIXTURE.splitlines()
    store = next(i + 1 for i, ln in enumerate(lines) if "st.global.u32" in ln)          # pdl_primary's y[i] = ...
    racy = lines.index(".visible .entry pdl_dependent_racy(")
    load = next(i + 1 for i, ln in enumerate(lines) if i > racy and "ld.global" in ln)
    assert [s.line for s in f.sides] == [store, load]
    assert "griddepcontrol.wait" in f.missing and "before executing griddepcontrol.wait" in f.message
    # the simulator ran the grids one after the other, so the value itself is the completed one
    assert np.array_equal(seq[1].outputs[1], x * 2 + 2)


def test_without_programmatic_serialization_the_same_read_is_ordered():
    _, _, launches = pair("pdl_dependent_racy", programmatic=False)
    assert run_sequence(launches).findings == []


def test_launch_dependents_and_exit_set_the_release_cycle():
    # CTA 0 triggers early and then spins; CTA 1 never triggers and exits: the dependent may begin when the later
    # of (CTA 0's trigger, CTA 1's exit) has happened -- before CTA 0 exits
    body = """
  mov.u32 %r1, %ctaid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra DONE;
  griddepcontrol.launch_dependents;
  mov.u32 %r2, 0;
LOOP:
  add.u32 %r2, %r2, 1;
  setp.lt.u32 %p2, %r2, 200;
  @%p2 bra LOOP;
DONE:
"""
    text = frame(body + "  ret;", target="sm_90a")
    assert_ptxas(text)
    seq = run_sequence([Launch(ptx=text, grid=(2, 1, 1), block=(32, 1, 1), args=[np.zeros(1, np.uint64)])])
    gd = seq[0].simulation.grid_dependency
    c0, c1 = (0, 0, 0), (1, 0, 0)
    assert set(gd.triggered) == {c0} and set(gd.exited) == {c0, c1}
    assert gd.triggered[c0] < gd.exited[c0]
    assert seq.release_cycles[0] == max(gd.triggered[c0], gd.exited[c1]) < gd.exited[c0]


def chain_kernel(read_before_wait: bool, trigger_first: bool) -> str:
    """out[tid] = in[tid] + 1, with the trigger and the wait placed as asked."""
    head = "  griddepcontrol.launch_dependents;\n" if trigger_first else ""
    rd = "  ld.global.u32 %r3, [%rd5];\n"
    return frame(f"""  ld.param.u64 %rd0, [out];
  ld.param.u64 %rd2, [inp];
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd3, %r0, 4;
  add.u64 %rd4, %rd0, %rd3;
  add.u64 %rd5, %rd2, %rd3;
{head}{rd if read_before_wait else ""}  griddepcontrol.wait;
{"" if read_before_wait else rd}  add.u32 %r3, %r3, 1;
  st.global.u32 [%rd4], %r3;
  ret;""", target="sm_90a", params=", .param .u64 inp")


@pytest.mark.parametrize("middle_triggers_first", [True, False])
def test_a_chain_of_programmatic_launches_overlaps_transitively(middle_triggers_first):
    # a -> b -> c, b and c programmatic; c reads a's output (buffer A) before waiting.  If b triggers before it
    # waits, c may begin while a still runs: a race on A.  If b waits first, a has completed before c can begin.
    A, B, C, src = (np.zeros(32, np.uint32) for _ in range(4))
    ka = chain_kernel(False, True)
    kb = chain_kernel(False, middle_triggers_first)
    kc = chain_kernel(True, False)
    for k in (ka, kb, kc):
        assert_ptxas(k)
    seq = run_sequence([Launch(ptx=ka, block=(32, 1, 1), args=[A, src]),
                        Launch(ptx=kb, block=(32, 1, 1), args=[B, A], programmatic=True),
                        Launch(ptx=kc, block=(32, 1, 1), args=[C, A], programmatic=True)])
    races = [f for f in seq.findings if f.cls == 20]
    assert bool(races) == middle_triggers_first
    assert np.array_equal(seq[2].outputs[0], np.full(32, 2, np.uint32))


def test_griddepcontrol_forms():
    for line, err in (("griddepcontrol.launch_dependents;", None), ("griddepcontrol.wait;", None),
                      ("griddepcontrol.sync;", "expected griddepcontrol"),
                      ("griddepcontrol.wait %r1;", "takes no operands")):
        text = frame(f"  {line}\n  ret;", target="sm_90a")
        assert_ptxas(text, ok=err is None)
        launch = Launch(ptx=text, block=(32, 1, 1), args=[np.zeros(1, np.uint64)])
        if err is None:
            assert run_launch(launch).findings == []          # a lone launch: both are no-ops
        else:
            with pytest.raises(VerifyError, match=err):
                run_launch(launch)
    text = frame("  griddepcontrol.wait;\n  ret;", target="sm_80")
    assert_ptxas(text, ok=False)
    with pytest.raises(VerifyError, match="sm_90"):
        run_launch(Launch(ptx=text, block=(32, 1, 1), args=[np.zeros(1, np.uint64)]))


def test_the_first_launch_of_a_sequence_cannot_be_programmatic():
    _, _, launches = pair()
    launches[0].programmatic = True
    with pytest.raises(LaunchError, match="first launch"):
        run_sequence(launches)


@pytest.mark.gpu
def test_the_sequence_on_the_gpu_matches_tcsim():
    from tcsim.hw.launcher import GpuUnavailable, gpu_available, run_sequence_on_gpu
    ok, why = gpu_available()
    if not ok:
        pytest.skip(why)
    x, z, launches = pair()
    try:
        r = run_sequence_on_gpu(launches)
    except GpuUnavailable as e:
        pytest.skip(str(e))
    assert r.ok, r.error_detail
    seq = run_sequence(pair()[2])
    assert np.array_equal(r.outputs[1][2], seq[1].outputs[2])
