"""tcsim against what an H100 wrote for the Hopper-common constructs of issue 16 item 1 (no GPU needed).

``tests/hw/golden_h100/hopper_misc.json`` was recorded on an NVIDIA H100 80GB HBM3 (driver 580.159.04, CUDA 13.0)
with ``python -m calib.probes.hopper_misc record tests/hw/golden_h100/hopper_misc.json``; the launches (kernels
and seeded inputs) are built by :mod:`calib.probes.hopper_misc`, the same for the recorder and this replay:

* ``b128_moves``: .b128 registers, mov.b128 pack / unpack / immediates, ld / st .b128, atom.cas / exch .b128;
* ``createpolicy_probe``: 64 fractions x 12 priority pairs, 64 address / size triples x 12 pairs, 64 access
  properties, and loads / stores with .L2::cache_hint;
* ``griddep``: primary -> dependent with and without programmatic stream serialization.

Every output must be bit-identical.
"""
import numpy as np
import pytest

from calib.probes import hopper_misc as H
from tcsim.launch import run_launch, run_sequence

GOLDEN = H.load_golden()
pytestmark = pytest.mark.skipif(GOLDEN is None, reason=f"{H.GOLDEN} is missing")


def test_record_provenance():
    meta = GOLDEN["meta"]
    assert "H100" in meta["device"] and meta["cc"] == [9, 0]
    assert meta["command"].startswith("python -m calib.probes.hopper_misc record")


def test_b128_moves_bit_identical():
    g = GOLDEN["b128_moves"]
    assert g["error"] is None
    r = run_launch(H.b128_launch())
    assert np.array_equal(r.outputs[0].reshape(-1), H.unhex(g["out"], np.uint64))
    assert np.array_equal(r.outputs[2].reshape(-1), H.unhex(g["cell"], np.uint64))


def test_b128_immediates_as_the_h100_extends_them():
    # a PTX integer constant is 64 bits, zero-extended to .b128: mov.b128 q, -1 -> {2^64 - 1, 0};
    # mov.b128 q, 0x8000000000000001 -> {0x8000000000000001, 0}
    out = H.unhex(GOLDEN["b128_moves"]["out"], np.uint64).reshape(320, 2)
    assert (out[256::2, 0] == np.uint64(2 ** 64 - 1)).all() and not out[256::2, 1].any()
    assert (out[257::2, 0] == np.uint64(0x8000000000000001)).all() and not out[257::2, 1].any()


def test_createpolicy_probe_bit_identical():
    g = GOLDEN["createpolicy_probe"]
    assert g["error"] is None
    r = run_launch(H.createpolicy_launch())
    want = H.unhex(g["pol"], np.uint64).reshape(64, 40)
    got = r.outputs[0].reshape(64, 40)
    bad = np.argwhere(got != want)
    assert bad.size == 0, [(int(t), int(j), hex(int(want[t, j])), hex(int(got[t, j]))) for t, j in bad[:5]]
    assert np.array_equal(r.outputs[5], H.unhex(g["data"], np.uint32))


@pytest.mark.parametrize("programmatic", [True, False])
def test_griddep_sequence_bit_identical(programmatic):
    g = GOLDEN["griddep_programmatic" if programmatic else "griddep_serial"]
    assert g["error"] is None
    seq = run_sequence(H.griddep_launches(programmatic))
    assert seq.findings == []
    assert np.array_equal(seq[0].outputs[1], H.unhex(g["y"], np.int32))
    assert np.array_equal(seq[1].outputs[2], H.unhex(g["out"], np.int32))
