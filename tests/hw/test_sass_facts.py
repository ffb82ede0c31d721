"""The recorded SASS facts (sim/timing/data/sass_facts_h100.json, calib/sass_facts.py) belong to the current
kernels, and the timing model charges a SASS-timed loop the steady static schedule of its SASS block."""
import json
import shutil

import pytest

from calib.microbench import cases as C
from tcsim.isa.parser import parse
from tcsim.timing.sass import SASS_FACTS, default_latencies, kernel_fingerprint, load_loops, steady_cycles
from tcsim.timing.params import arch_config

TABLE = json.loads(SASS_FACTS.read_text())


def _fn(name):
    launch = C.CASES[name].build()
    return parse(launch.ptx_text()[0], name).functions[launch.kernel]


def test_every_entry_belongs_to_a_current_kernel():
    for fp, entry in TABLE.items():
        assert kernel_fingerprint(_fn(entry["case"]).body) == fp, f"{entry['case']}: re-record the SASS facts"
        assert entry["loops"] and entry["ptxas"]


def test_pipe_gemm_k_loop_is_sass_timed_with_the_config_latencies():
    fn = _fn("val_pipe_gemm_3stage")
    loops = load_loops(fn.body)
    ((head, (back, instrs)),) = loops.items()
    assert fn.body[[i.loc.line for i in fn.body].index(back)].opcode == "bra"
    steady = steady_cycles(instrs, default_latencies(arch_config("sm_90a")))
    assert steady == pytest.approx(TABLE[kernel_fingerprint(fn.body)]["loops"][str(head)]["static_cycles"], rel=0.02)
    assert sum(i.opcode == "LDSM" for i in instrs) == 20 and sum(i.opcode == "HMMA" for i in instrs) == 32


def test_a_kernel_without_facts_has_no_sass_timed_loops():
    assert load_loops(_fn("val_ws_scale_1stage").body) == {}


@pytest.mark.skipif(not (shutil.which("ptxas") and shutil.which("nvdisasm")), reason="needs ptxas and nvdisasm")
def test_extractor_reproduces_the_recorded_facts():
    from calib.sass_facts import facts
    launch = C.CASES["val_pipe_gemm_3stage"].build()
    f = facts(launch.ptx_text()[0], launch.kernel)
    rec = TABLE[f["fingerprint"]]["loops"]
    assert {h: v["sass"] for h, v in f["loops"].items()} == {h: v["sass"] for h, v in rec.items()}
