"""Device-function calls, assert and launch arguments against the GPU (issue 16 items 1 and 3): every case of
``calib.calls_golden`` recorded on a Hopper GPU (an H200) (``tests/golden/calls_hopper.json``, made by ``python -m calib.calls_golden
--out tests/golden/calls_hopper.json`` on the GPU) is rebuilt and simulated here; outputs must be bit-identical, the
assertion lines identical, printf lines the same multiset, and a launch that failed on the GPU must fail here."""
from __future__ import annotations

import json
import re
import shutil
from collections import Counter

import numpy as np
import pytest

from calib.calls_golden import CASES, DEFAULT_OUT, NVCC as NVCC_DIR, build, decode_array
from calib.pipeline import current_command
from tcsim.isa.errors import TcsimError
from tcsim.launch import run_launch
from tcsim.linker import StackOverflow
from tcsim.semantics.calls import DeviceAssert

pytestmark = pytest.mark.skipif(not DEFAULT_OUT.exists(), reason="no GPU record yet: python -m calib.calls_golden "
                                                                 "--out tests/golden/calls_hopper.json on a GPU")


def _record():
    return json.loads(DEFAULT_OUT.read_text())


def test_record_provenance():
    rec = _record()
    assert current_command(rec["meta"]["command"]).startswith("python -m calib.calls_golden")
    assert ("H100" in rec["meta"]["gpu"] or "H200" in rec["meta"]["gpu"]) and rec["meta"]["cc"] == [9, 0]
    assert set(rec["rows"]) == set(CASES)


def test_the_model_frames_fit_where_the_gpu_overflows():
    """Without ptxas's frame sizes tcsim's model (48 bytes per activation of walk) lets depth 15 through in 1 KiB,
    where the GPU (88-byte SASS frames) faults: the documented difference stack_frames='ptxas' removes."""
    launch, _ = build("deep_15")
    launch.stack_frames = None
    r = run_launch(launch)
    assert r.outputs[0].shape == (32,)
    assert _record()["rows"]["deep_15"]["error"] == "CUDA_ERROR_ILLEGAL_ADDRESS"


#: (case, output index) tcsim does not give as the GPU does, and why; each must still differ (a fix shows)
KNOWN: dict = {}


def _same(got, want):
    if isinstance(want, list):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    w = decode_array(want)
    g = np.asarray(got)
    assert g.dtype == w.dtype and g.shape == w.shape
    assert np.array_equal(g.view(np.uint8), w.view(np.uint8)), "not bit-identical"


@pytest.mark.parametrize("case", CASES)
def test_case_matches_the_gpu(case):
    row = _record()["rows"][case]
    launch, through = build(case)
    if launch.stack_frames == "ptxas" and shutil.which("ptxas") is None:
        pytest.skip("the stack-overflow cases take the functions' frames from ptxas -v")
    if row["error"] is not None:
        with pytest.raises(TcsimError) as ei:
            run_launch(launch)
        err = ei.value
        if row["error"] == "CUDA_ERROR_ASSERT":
            assert isinstance(err, DeviceAssert)
            gpu = row["stdout"] or row.get("stdout_teardown", [])
            assert gpu and [s.rstrip("\n") for s in err.stdout] == [s.rstrip("\n") for s in gpu]
        elif row["error"] == "CUDA_ERROR_ILLEGAL_ADDRESS" and case.startswith("deep_"):
            assert isinstance(err, StackOverflow)      # recursion past cudaLimitStackSize (ptxas's frames)
        else:
            pytest.fail(f"unexpected GPU error {row['error']} for {case}; tcsim: {err}")
        return
    r = run_launch(launch)
    for i, (got, want) in enumerate(zip(r.outputs, row["outputs"])):
        if want is not None and (case, i) in KNOWN:
            assert not np.array_equal(np.asarray(got).view(np.uint8), decode_array(want).view(np.uint8)), \
                f"{case} output {i} now matches the GPU: drop it from KNOWN"
        elif want is not None:
            _same(got, want)
    for name, want in row["through"].items():
        _same(through[name], want)
    assert Counter(_relocated(r.stdout)) == Counter(_relocated(row["stdout"]))


def _relocated(lines) -> list:
    """The printed lines with each printed address ``(hex)`` (printf_calls prints &ys[i]) made relative to the
    lowest one of the run: the buffers sit at other addresses on the GPU."""
    lines = [s.rstrip("\n") for s in lines]
    addrs = [int(m, 16) for s in lines for m in re.findall(r"\(([0-9a-f]+)\)", s)]
    lo = min(addrs, default=0)
    return [re.sub(r"\(([0-9a-f]+)\)", lambda m: f"(+0x{int(m.group(1), 16) - lo:x})", s) for s in lines]


def test_gpu_frame_layout_rule():
    """The frame addresses the GPU gave (frame_addresses: every thread, local-space addresses) follow this rule,
    computed here from the PTX's depots and ptxas -v alone (the spec tcsim's linker and call stack follow:
    test_case_matches_the_gpu[frame_addresses] and test_frame_addresses_without_ptxas):
    the kernel's stack pointer is the stack top (0xFFFDC0) minus the kernel's SASS frame, which holds the kernel's
    own depot at offset 0 and, above it, the depot of every non-recursive device function at one fixed offset --
    the end of the deepest depot that can be live at the same time (its callers'), aligned to its own alignment --
    whatever the call path; a recursive function's depot lies at its own stack pointer, its SASS frame below the
    caller's."""
    from calib.calls_golden import FRAME_DEPTH, NVCC
    from tcsim.address_map import SM_90A
    from tcsim.isa.parser import parse
    from tcsim.isa.ptxas import stack_frames
    text = (NVCC / "frame_addresses.sm_90a.ptx").read_text()
    frames = stack_frames(text)
    if frames is None:
        pytest.skip("needs ptxas -v")
    mod = parse(text)
    depot = {name: next((v.size_bytes, v.alignment) for v in f.locals if v.space == "local")
             for name, f in mod.functions.items()}
    kern, leaf, mid, wide, rec = ("_Z13frames_kernelPyPiii", "_Z4leafPyi", "_Z3midPyi", "_Z4widePyi", "_Z3recPyii")
    sp = SM_90A.local_stack_top - frames[kern]

    def at(after_end, fn):
        a = depot[fn][1]
        return (after_end + a - 1) // a * a
    own_end = depot[kern][0]
    off_mid = at(own_end, mid)
    off_leaf = at(max(own_end, off_mid + depot[mid][0]), leaf)      # called from the kernel and from mid
    off_wide = at(own_end, wide)
    rule = [sp, sp + off_leaf, sp + off_mid, sp + off_leaf, sp + off_wide]
    rule += [sp - frames[rec] * (k + 1) for k in range(FRAME_DEPTH + 1)]
    assert max(off_leaf + depot[leaf][0], off_wide + depot[wide][0]) <= frames[kern]
    row = _record()["rows"]["frame_addresses"]
    gpu = decode_array(row["outputs"][0]).reshape(-1, len(rule))
    assert (gpu == np.array(rule, np.uint64)).all(), [hex(int(v)) for v in gpu[0]]


#: ptxas 13.0's frames for tests/fixtures/nvcc/frame_addresses.sm_90a.ptx (``ptxas -arch=sm_90a -v``, "N bytes
#: stack frame"; the fixture's README), so that CI without ptxas checks the layout with the GPU's frame sizes
FRAME_ADDRESSES_PTXAS = {"_Z13frames_kernelPyPiii": 112, "_Z3recPyii": 40, "_Z3midPyi": 0, "_Z4leafPyi": 0,
                         "_Z4widePyi": 0}


def test_frame_addresses_without_ptxas():
    """The frame addresses of call-heavy nvcc PTX as the GPU gave them, without ptxas on the machine: with ptxas's
    frame sizes given as data every slot of every thread is the GPU's; with tcsim's frame model (no sizes at all)
    the kernel's and the non-recursive functions' slots still are (the model's kernel frame, the deepest depot's
    end rounded to the largest alignment, is ptxas's 112 bytes here) and the recursive activations lie below the
    kernel's stack pointer, one model frame (12 bytes of .local -> 16 + 16) apart, where the GPU's are 40 apart."""
    from calib.calls_golden import FRAME_SLOTS
    from tcsim.isa.ptxas import stack_frames
    text = (NVCC_DIR / "frame_addresses.sm_90a.ptx").read_text()
    got = stack_frames(text)
    if got is not None:
        assert got == FRAME_ADDRESSES_PTXAS
    gpu = decode_array(_record()["rows"]["frame_addresses"]["outputs"][0]).reshape(-1, FRAME_SLOTS)
    launch, _ = build("frame_addresses")
    launch.stack_frames = dict(FRAME_ADDRESSES_PTXAS)
    r = run_launch(launch)
    assert np.array_equal(np.asarray(r.outputs[0]).reshape(-1, FRAME_SLOTS), gpu)
    launch, _ = build("frame_addresses")
    launch.stack_frames = None
    sim = np.asarray(run_launch(launch).outputs[0]).reshape(-1, FRAME_SLOTS)
    assert np.array_equal(sim[:, :5], gpu[:, :5])
    sp = int(gpu[0, 0])
    assert [int(v) for v in sim[0, 5:]] == [sp - 32 * (k + 1) for k in range(FRAME_SLOTS - 5)]
