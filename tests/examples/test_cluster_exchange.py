"""examples/cluster_exchange: DSMEM ring through mapa + ld/st.shared::cluster, remote mbarrier arrive and
cluster barriers (checked on an H100: tests/golden/cluster_exchange_*, replayed by tests/hw/test_golden_replay)."""
import re

import numpy as np
import pytest

from tcsim.examples import cluster_exchange as ce
from tcsim.isa.errors import LaunchError, VerifyError
from tcsim.isa.ptxas import assemble
from tcsim.launch import run_launch
from kernel_checks import fails_or_diagnosed, run_checked, with_ptx


@pytest.mark.parametrize("cluster, clusters", [(1, 2), (2, 3), (4, 2), (8, 1)])
@pytest.mark.parametrize("seed", [None, 5])
def test_ring_exchange_is_exact(cluster, clusters, seed):
    launch = ce.make_launch(cluster=cluster, clusters=clusters, seed=cluster)
    res = run_checked(ce, launch, seed=seed)
    out = res.outputs[1]
    assert (out[:, 3] == cluster).all() and set(out[:, 5]) == set(range(clusters))


def test_same_result_with_the_timing_model():
    launch = ce.make_launch(cluster=4, clusters=2, seed=2)
    a = run_launch(launch).outputs[1]
    b = run_launch(ce.make_launch(cluster=4, clusters=2, seed=2), timing=True).outputs[1]
    assert np.array_equal(a, b)


def test_assembles_for_sm_90a():
    r = assemble(ce.PTX.read_text(), "sm_90a")
    if r is None:
        pytest.skip("ptxas not on PATH")
    assert r[0] == 0, r[1]


def test_reading_before_the_mbarrier_wait_really_misbehaves():
    # a racy kernel: whether the neighbour has written yet depends on the interleaving, so the lock-step default
    # schedule happens to see the data, and other schedules (seeds 2 and 7) read it stale
    launch = ce.make_launch(cluster=4, clusters=1, seed=3)
    text = ce.PTX.read_text()
    broken = re.sub(r"WAIT:\n.*?@!%p2 bra \tWAIT;\n", "", text, flags=re.S)
    assert broken != text
    for seed in (2, 7):
        msg = fails_or_diagnosed(ce, launch, with_ptx(launch, broken), seed=seed)
        assert "field w" in msg or msg.startswith("diagnosed"), msg


def test_is_explicit_cluster_is_a_predicate():
    launch = ce.make_launch(cluster=2, clusters=1)
    text = ce.PTX.read_text().replace("mov.pred \t%p3, %is_explicit_cluster;\n\tselp.u32 \t%r25, 1, 0, %p3;",
                                      "mov.u32 \t%r25, %is_explicit_cluster;")
    assert text != ce.PTX.read_text()
    # as ptxas words it ("Arguments mismatch for instruction 'mov'"), located, naming the predicate register
    with pytest.raises(VerifyError, match=r"Arguments mismatch for instruction 'mov': special register "
                                          r"%is_explicit_cluster does not fit a \.u32 operand"):
        run_launch(with_ptx(launch, text))
    r = assemble(text, "sm_90a")
    assert r is None or r[0] != 0           # ptxas: "Arguments mismatch for instruction 'mov'"


def test_bad_shapes_are_refused():
    with pytest.raises(LaunchError, match="cluster of 1, 2, 4 or 8"):
        ce.make_launch(cluster=3)
