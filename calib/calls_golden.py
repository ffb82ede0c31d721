"""GPU golden data for device-function calls, assert and launch arguments (issue 16 items 1 and 3).

``python -m calib.calls_golden --out tests/golden/calls_hopper.json`` (on a machine with a Hopper GPU) runs every
case of :data:`CASES` through :func:`tcsim.hw.launcher.run_on_gpu` and records, per case, the CUDA error (or
none), what the kernel printed (device printf, the assertion lines of ``assert``), every output array and the
caller's arrays that a tensor map wrote through to.  ``tests/hw/test_calls_golden.py`` rebuilds each launch with
:func:`build`, simulates it and compares: outputs bit for bit, the assertion lines exactly, printf lines as a
multiset (their order across warps is the GPU's business), an error on the GPU where tcsim reports one.

The cases use the nvcc fixtures ``tests/fixtures/nvcc/{device_calls,printf_calls,assert_fail}.sm_90a.ptx`` and
:data:`GL_KERNEL`, ThunderKittens' global-layout struct (a pointer at 0, an int at 8, a CUtensorMap at 128 of a
384-byte parameter) with a TMA load and a TMA tensor store through a map over a strided view.
"""
from __future__ import annotations

import argparse
import base64
import sys
from pathlib import Path

import numpy as np

from . import pipeline as P

ROOT = Path(__file__).resolve().parents[1]
NVCC = ROOT / "tests" / "fixtures" / "nvcc"
DEFAULT_OUT = ROOT / "tests" / "golden" / "calls_hopper.json"

#: ThunderKittens' global layout as a kernel parameter: a 384-byte struct, 64-byte aligned, with a pointer at 0, an
#: int at 8 and the CUtensorMap at 128.  One thread loads box {c0, c1} through the map (TMA) into SMEM, stores it
#: with a TMA tensor store through the same map at {c0 + 8, c1}, and writes 2 * the int to the pointer.
GL_KERNEL = """.version 8.7
.target sm_90a
.address_size 64
.visible .entry k(.param .align 64 .b8 gl[384], .param .u32 c0, .param .u32 c1)
{
  .reg .b32 %r<16>; .reg .b64 %rd<24>; .reg .pred %p<4>;
  .shared .align 1024 .b8 buf[1024];
  .shared .align 8 .b64 bar;
  mov.b64 %rd20, gl;
  cvta.param.u64 %rd1, %rd20;
  add.u64 %rd2, %rd1, 128;
  ld.param.u64 %rd3, [gl];
  ld.param.u32 %r3, [gl+8];
  ld.param.u32 %r10, [c0];
  ld.param.u32 %r11, [c1];
  mov.u32 %r1, bar;
  mov.u32 %r2, buf;
  mbarrier.init.shared::cta.b64 [%r1], 1;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r1], 128;
  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r2], [%rd2, {%r10, %r11}], [%r1];
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1], 0;
  @!%p1 bra WAIT;
  add.u32 %r12, %r10, 8;
  cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd2, {%r12, %r11}], [%r2];
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group 0;
  add.u32 %r4, %r3, %r3;
  st.global.u32 [%rd3], %r4;
  ret;
}
"""

#: a .u32 parameter stored as passed: -16 must arrive as 0xFFFFFFF0 (Triton's i32 arguments are .u32)
SIGNED_KERNEL = """.version 8.7
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out, .param .u32 v, .param .u16 h)
{
  .reg .b64 %rd<4>; .reg .b32 %r<4>; .reg .b16 %hs<2>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [v];
  st.global.u32 [%rd1], %r1;
  ld.param.u16 %hs1, [h];
  cvt.u32.u16 %r2, %hs1;
  st.global.u32 [%rd1+4], %r2;
  ret;
}
"""

CASES = ("device_calls", "printf_calls", "assert_fail", "assert_not_taken", "deep_15", "deep_60_stack_4096",
         "deep_overflow", "gl_struct_strided_view", "signed_args", "frame_addresses")

#: cases not in the record yet (each recorded on its own, ``--case``, then moved into CASES with its row)
PENDING = ("frame_addresses_debug",)

#: frame_addresses: slots per thread (tests/fixtures/nvcc/frame_addresses.cu) for recursion depth FRAME_DEPTH
FRAME_DEPTH = 6
FRAME_SLOTS = 5 + FRAME_DEPTH + 1


def build(case: str):
    """(launch, arrays the run writes through to: name -> the caller's array) of ``case``."""
    from tcsim.isa.tensormap import TensorMap
    from tcsim.launch import Launch, Pointer, Struct

    if case == "device_calls":
        n = 40
        inp = np.random.default_rng(1).integers(-50, 50, n).astype(np.int32)
        return Launch(NVCC / "device_calls.sm_90a.ptx", kernel="_Z12calls_kernelPKiPiPxPfPji", grid=2, block=32,
                      args=[inp, np.zeros(n, np.int32), np.zeros(2 * n, np.int64), np.zeros(n, np.float32),
                            np.zeros(n, np.uint32), n]), {}
    if case == "printf_calls":
        n = 40
        return Launch(NVCC / "printf_calls.sm_90a.ptx", grid=2, block=32,
                      args=[np.linspace(-3.0, 40.0, n).astype(np.float32), np.zeros(n, np.float32), n, 5]), {}
    if case in ("assert_fail", "assert_not_taken"):
        vals = np.arange(64, dtype=np.int32)
        if case == "assert_fail":
            vals[[37, 40, 45]] = 1000           # block 1, threads 5, 8, 13
        return Launch(NVCC / "assert_fail.sm_90a.ptx", grid=2, block=32, args=[vals, np.zeros(64, np.int32), 100]), {}
    if case.startswith("deep_"):
        depth = {"deep_15": 15, "deep_60_stack_4096": 60, "deep_overflow": 200}[case]
        stack = 4096 if case == "deep_60_stack_4096" else 1024
        # the simulator takes walk's frame from ptxas -v (88 bytes), as the GPU has it (the GPU ignores this)
        return Launch(NVCC / "device_calls.sm_90a.ptx", kernel="_Z11deep_kernelPii", block=32,
                      args=[np.zeros(32, np.int32), depth], stack_size=stack, stack_frames="ptxas"), {}
    if case == "gl_struct_strided_view":
        big = np.arange(40 * 48, dtype=np.float32).reshape(40, 48)
        tm = TensorMap.tiled(big[2::2, 8:40], (4, 8))
        s = Struct(Pointer(np.zeros(1, np.uint32)), np.int32(21), tm, offsets=(0, 8, 128), size=384)
        return Launch(GL_KERNEL, block=1, args=[s, 8, 3]), {"big": big}
    if case in ("frame_addresses", "frame_addresses_debug"):
        # 2 CTAs x 40 threads (a partial second warp); the simulator takes the frames from ptxas -v.  _debug: the
        # same source built with nvcc -G (every function gets a SASS frame of its own)
        n = 80
        ptx = "frame_addresses.sm_90a.ptx" if case == "frame_addresses" else "frame_addresses.G.sm_90a.ptx"
        return Launch(NVCC / ptx, kernel="_Z13frames_kernelPyPiii", grid=2, block=40,
                      args=[np.zeros(n * FRAME_SLOTS, np.uint64), np.zeros(n, np.int32), FRAME_DEPTH, FRAME_SLOTS],
                      stack_frames="ptxas"), {}
    if case == "signed_args":
        return Launch(SIGNED_KERNEL, block=1, args=[np.zeros(2, np.uint32), -16, -300]), {}
    raise KeyError(case)


def _enc(a) -> dict:
    a = np.ascontiguousarray(a)
    return {"dtype": a.dtype.str, "shape": list(a.shape), "b64": base64.b64encode(a.tobytes()).decode()}


def decode_array(d: dict) -> np.ndarray:
    return np.frombuffer(base64.b64decode(d["b64"]), dtype=np.dtype(d["dtype"])).reshape(d["shape"])


def _outputs(outs) -> list:
    res = []
    for o in outs:
        if o is None:
            res.append(None)
        elif isinstance(o, list):
            res.append([_enc(x) for x in o])
        else:
            res.append(_enc(o))
    return res


def record(cases=CASES) -> dict:
    from tcsim.hw.launcher import run_on_gpu

    rows = {}
    dev = None
    for case in cases:
        launch, through = build(case)
        res = run_on_gpu(launch)
        dev = dev or res
        rows[case] = {"error": res.error, "error_detail": res.error_detail, "stdout": res.stdout,
                      "outputs": _outputs(res.outputs) if res.ok else [],
                      "through": {k: _enc(v) for k, v in through.items()} if res.ok else {}}
        print(f"{case}: {res.error or 'ok'} ({len(res.stdout)} printed lines)", flush=True)
    return {"rows": rows, "device": None if dev is None else
            {"gpu": dev.device, "driver": dev.driver, "cc": list(dev.compute_capability or ())}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m calib.calls_golden", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--case", action="append", choices=CASES + PENDING)
    args = ap.parse_args(argv)
    rec = record(tuple(args.case or CASES))
    command = P.command_line("calib.calls_golden", argv if argv is not None else sys.argv[1:])
    rec["meta"] = {**P.provenance(command), **(rec.pop("device") or {})}
    P.write_json(args.out, rec)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
