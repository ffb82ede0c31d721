"""Faulting kernels, reported by both back ends side by side.

:func:`fault_report` runs one launch on the simulator (which raises its own located diagnostic) and on the GPU
(in a child process, so the sticky CUDA error never reaches the caller) and returns both.  ``CASES`` holds
small kernels that fault the way real kernels do — a trap, a misaligned global access, an out-of-bounds
access, a misaligned bulk copy — used by the tests and by ``python -m calib.faults`` to record what the GPU said
next to tcsim's diagnosis (tests/golden/faults.json).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from calib.pipeline import command_line, execute, utc_now, write_json
from tcsim.isa.errors import TcsimError
from tcsim.launch import Launch, run_launch

HEAD = ".version 8.5\n.target sm_90a\n.address_size 64\n"


def _kernel(body: str, params: str = ".param .u64 out") -> str:
    return HEAD + f""".visible .entry fault({params})
{{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  .shared .align 128 .b8 smem[256];
  .shared .align 8 .b64 bar;
{body}
  ret;
}}
"""


CASES = {
    "trap": _kernel("  trap;"),
    "misaligned_global": _kernel("  ld.param.u64 %rd1, [out];\n  ld.global.u32 %r1, [%rd1+2];\n"
                                 "  st.global.u32 [%rd1], %r1;"),
    "out_of_bounds_global": _kernel("  ld.param.u64 %rd1, [out];\n  add.u64 %rd2, %rd1, 1099511627776;\n"
                                    "  st.global.u32 [%rd2], %r1;"),
    "misaligned_bulk_copy": _kernel(
        "  ld.param.u64 %rd1, [out];\n  mov.u32 %r1, %tid.x;\n  setp.ne.u32 %p1, %r1, 0;\n  @%p1 bra DONE;\n"
        "  mbarrier.init.shared::cta.b64 [bar], 1;\n  fence.mbarrier_init.release.cluster;\n"
        "  mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 24;\n"
        "  mov.u32 %r2, smem;\n  ld.global.u32 %r3, [%rd1+4];\n  add.u32 %r3, %r3, 24;\n"
        "  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r2+8], [%rd1], %r3, [bar];\n"
        "WAIT:\n  mbarrier.try_wait.parity.shared::cta.b64 %p1, [bar], 0;\n  @!%p1 bra WAIT;\nDONE:"),
}


def make_launch(case: str) -> Launch:
    return Launch(ptx=CASES[case], kernel="fault", block=(32, 1, 1), args=[np.zeros(64, np.uint32)],
                  name=f"fault:{case}")


@dataclass
class FaultReport:
    case: str
    sim_kind: str | None          # the TcsimError class name, or None if the simulator ran clean
    sim_message: str | None
    gpu_error: str | None         # CUDA error name, None if it ran clean, "unavailable: ..." without a GPU

    def __str__(self) -> str:
        return (f"{self.case}:\n  GPU:       {self.gpu_error or 'ran without error'}\n"
                f"  simulator: {self.sim_message or 'ran without error'}")


def simulate(launch: Launch, with_gpu_kind: bool = False) -> tuple:
    """(diagnosis class name, message) of the simulator's run, None for both when it ran clean; with
    ``with_gpu_kind`` also the kind of fault the GPU gives for the same event (TcsimError.gpu_error)."""
    try:
        run_launch(launch)
    except TcsimError as e:
        return (type(e).__name__, str(e), e.gpu_error) if with_gpu_kind else (type(e).__name__, str(e))
    return (None, None, None) if with_gpu_kind else (None, None)


def fault_report(launch: Launch, case: str = "", gpu: bool = True) -> FaultReport:
    kind, msg = simulate(launch)
    gpu_error = None
    if gpu:
        from tcsim.hw.launcher import GpuUnavailable
        try:
            gpu_error = execute(launch, "gpu").error
        except GpuUnavailable as e:
            gpu_error = f"unavailable: {e}"
    else:
        gpu_error = "not run"
    return FaultReport(case or (launch.name or "launch"), kind, msg, gpu_error)


def main(argv=None) -> int:
    """``python -m calib.faults [--out tests/golden/faults.json]``: record both back ends' view of every case."""
    import argparse
    from tcsim.hw.launcher import gpu_available, probe

    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="python -m calib.faults")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    ok, why = gpu_available()
    rows = {}
    for case in CASES:
        r = fault_report(make_launch(case), case, gpu=ok)
        print(r)
        rows[case] = {"gpu_error": r.gpu_error, "sim_kind": r.sim_kind, "sim_message": r.sim_message}
    meta = {"gpu": why, "command": command_line("calib.faults", argv), "date": utc_now()}
    if ok:
        info = probe()
        meta.update(name=info["name"], cc=list(info["cc"]), driver=info["driver"])
    if args.out:
        write_json(args.out, {"meta": meta, "cases": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
