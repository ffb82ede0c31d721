"""Happens-before detector, tensor-map proxy (sim/race/hb.py, explain.py): class 20 -- a tensor map written in
device memory by the generic proxy (tensormap.replace in SMEM, tensormap.cp_fenceproxy to global) and used by a
TMA op must be ordered by fence.proxy.tensormap::generic.acquire before the use (PTX ISA 9.1 §9.7.13.4, "the
tensormap proxy").  Twin: the Triton fixture tma_device_desc_rowscale (tl.make_tensor_descriptor); buggy: the
same PTX without its acquire fence."""
import dataclasses

import numpy as np

from tcsim.launch import run_launch
from tests.examples.test_triton_blackwell import make_launch, ptx_path
from tests.race.hb_common import MODES, assert_clean, assert_found

NAME = "tma_device_desc_rowscale"
ACQUIRE = "\t@%p2 fence.proxy.tensormap::generic.acquire.gpu [ %rd11 + 0 ], 0x80;\n"


def launches(ptx=None):
    rng = np.random.default_rng(6)
    M, N = 100, 72
    x = rng.standard_normal((M, N)).astype(np.float32)
    s = rng.standard_normal(M).astype(np.float32)
    out = np.full((M, N), np.float32(-777.0))
    launch = make_launch(NAME, dict(in_ptr=x, scale_ptr=s, out_ptr=out, M=M, N=N), (2, 1, 1))
    if ptx is not None:
        launch = dataclasses.replace(launch, ptx=ptx)
    return launch


def run_all(ptx=None):
    return [((t, s), run_launch(launches(ptx), timing=t, seed=s)) for t, s in MODES[::2]]


def test_fixture_with_its_acquire_fence_is_clean():
    assert_clean(run_all())


def test_device_edited_map_used_without_the_acquire_fence_is_class_20():
    text = ptx_path(NAME).read_text()
    assert text.count(ACQUIRE) == 1
    ptx = text.replace(ACQUIRE, "")
    lines = ptx.splitlines()
    cp = next(i + 1 for i, ln in enumerate(lines) if "tensormap.cp_fenceproxy" in ln)
    tma = next(i + 1 for i, ln in enumerate(lines) if "cp.async.bulk.tensor" in ln and i + 1 > cp)
    assert_found(run_all(ptx), 20, (cp, tma), "fence.proxy.tensormap::generic.acquire")
