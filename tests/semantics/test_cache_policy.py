"""createpolicy / applypriority / discard and the .L2::cache_hint consumers (PTX ISA 9.1 §9.7.9.16-18).

Expected policy values come from the H100 (``tests/hw/golden_h100/hopper_misc.json``, replayed in full by
``tests/hw/test_hopper_misc_golden.py``) and from CUTLASS's public ``CacheHintSm90`` constants; each form's
acceptance is checked with ptxas when it is on PATH.
"""
import numpy as np
import pytest

from tcsim.isa.errors import MemoryFault, VerifyError
from tcsim.launch import Launch, run_launch
from tests.ptx_frame import kernel as frame
from tests.semantics.test_b128 import assert_ptxas


def run(body, arch="sm_90a", nout=8, detect=True):
    text = frame("  ld.param.u64 %rd0, [out];\n  mov.u32 %r0, %tid.x;\n" + body + "\n  ret;", target=arch)
    assert_ptxas(text)
    r = run_launch(Launch(ptx=text, grid=(1, 1, 1), block=(32, 1, 1), args=[np.zeros(nout, np.uint64)]),
                   detect=detect)
    return r.outputs[0], r


def test_fractional_policies_with_immediate_fractions_match_the_h100_and_cutlass():
    # H100 (hopper_misc.json, thread 0 / fraction 1.0, thread 1 / fraction 0.5): evict_first 1.0 = CUTLASS
    # EVICT_FIRST 0x12F0..., evict_last 1.0 = EVICT_LAST 0x14F0...; evict_normal 1.0 0x16F0...; evict_last with
    # secondary evict_first at 0.5: 0x1570...; evict_unchanged 0.25: 0x1030...
    body = """
  createpolicy.fractional.L2::evict_first.b64 %rd1, 1.0;
  createpolicy.fractional.L2::evict_last.b64 %rd2;
  createpolicy.fractional.L2::evict_normal.L2::evict_unchanged.b64 %rd3, 1.0;
  createpolicy.fractional.L2::evict_last.L2::evict_first.b64 %rd4, 0.5;
  createpolicy.fractional.L2::evict_unchanged.b64 %rd5, 0f3E800000;
  setp.eq.u32 %p0, %r0, 0;
  @%p0 st.global.v2.u64 [%rd0], {%rd1, %rd2};
  @%p0 st.global.v2.u64 [%rd0+16], {%rd3, %rd4};
  @%p0 st.global.u64 [%rd0+32], %rd5;
"""
    out, _ = run(body)
    assert [int(v) for v in out[:5]] == [0x12F0000000000000, 0x14F0000000000000, 0x16F0000000000000,
                                        0x1570000000000000, 0x1030000000000000]


def test_register_fraction_rounds_up_to_sixteenths_per_lane():
    # lane l uses fraction (l + 1) / 32: the H100 field is ceil(16 f) - 1, i.e. (l + 1) / 2 rounded up, minus 1
    body = """
  add.u32 %r1, %r0, 1;
  cvt.rn.f32.u32 %f1, %r1;
  mul.f32 %f1, %f1, 0f3D000000;
  createpolicy.fractional.L2::evict_last.b64 %rd1, %f1;
  mul.wide.u32 %rd9, %r0, 8;
  add.u64 %rd9, %rd9, %rd0;
  st.global.u64 [%rd9], %rd1;
"""
    out, _ = run(body, nout=32)
    lanes = np.arange(32)
    want = [0x1400000000000000 | ((-(-(lane + 1) // 2) - 1) << 52) for lane in lanes]
    assert [int(v) for v in out] == want


def test_range_policy_fields():
    # a = 0x12345678, primary 0x400 of total 0x1000 (H100: 0x1c04502000000000 for evict_last); with a total of
    # 2^30 the granule is 2^23 (H100: 0x1cb2402000000000 with primary 2^20)
    body = """
  mov.u64 %rd1, 0x12345678;
  createpolicy.range.global.L2::evict_last.b64 %rd2, [%rd1], 0x400, 0x1000;
  mov.u32 %r1, 0x100000;
  mov.u32 %r2, 0x40000000;
  createpolicy.range.L2::evict_last.L2::evict_first.b64 %rd3, [%rd1], %r1, %r2;
  setp.eq.u32 %p0, %r0, 0;
  @%p0 st.global.v2.u64 [%rd0], {%rd2, %rd3};
"""
    out, _ = run(body)
    assert int(out[0]) == 0x1C04502000000000
    assert int(out[1]) == 0x1DB2402000000000          # the same as the H100's evict_last one, bit 56 set


def test_cvt_passes_the_access_property_through():
    body = """
  mov.u64 %rd1, 0xd8076892891d058e;
  createpolicy.cvt.L2.b64 %rd2, %rd1;
  setp.eq.u32 %p0, %r0, 0;
  @%p0 st.global.u64 [%rd0], %rd2;
"""
    out, _ = run(body)
    assert int(out[0]) == 0xD8076892891D058E


def test_hinted_accesses_of_every_family_run_with_a_policy():
    body = """
  createpolicy.fractional.L2::evict_first.b64 %rd1, 1.0;
  mul.wide.u32 %rd9, %r0, 8;
  add.u64 %rd9, %rd9, %rd0;
  st.global.L2::cache_hint.u64 [%rd9], %rd9, %rd1;
  ld.global.L2::cache_hint.u64 %rd2, [%rd9], %rd1;
  ld.L2::cache_hint.u64 %rd3, [%rd9], %rd1;
  add.u64 %rd2, %rd2, %rd3;
  atom.global.add.L2::cache_hint.u64 %rd4, [%rd9], %rd2, %rd1;
  prefetch.global.L2::evict_last [%rd9];
  applypriority.global.L2::evict_normal [%rd0], 128;
  cp.async.bulk.prefetch.L2.global.L2::cache_hint [%rd0], 16, %rd1;
"""
    out, _ = run(body, nout=32)
    # slot i held its own address p_i = out + 8 i, then p_i + 2 p_i (atom.add of the two loads)
    assert np.array_equal(out[1:] - out[:-1], np.full(31, 24, np.uint64))
    assert int(out[0]) % 3 == 0


@pytest.mark.parametrize("line,match", [
    ("createpolicy.fractional.L2::evict_first.L2::evict_last.b64 %rd1, 0.5;", "secondary"),
    ("createpolicy.fractional.L2::evict_last.b64 %rd1, 0.0;", r"out of range \(0, 1\]"),
    ("createpolicy.fractional.L2::evict_last.b64 %rd1, 1.5;", r"out of range \(0, 1\]"),
    ("createpolicy.fractional.L2::evict_last.b64 %r1, 0.5;", "64-bit register"),
    ("createpolicy.fractional.L2::evict_last.u64 %rd1, 0.5;", r"\.b64"),
    ("createpolicy.range.L2::evict_last.b64 %rd1, [%rd2], 4096, 1024;", "exceeds total-size"),
    ("applypriority.global.L2::evict_normal [%rd2], 256;", "128"),
    ("ld.shared.L2::cache_hint.b32 %r1, [%rd2], %rd1;", r"cannot be applied to the \.shared"),
    ("ld.global.L2::cache_hint.b32 %r1, [%rd2];", "cache-policy operand"),
    ("ld.global.L2::cache_hint.b32 %r1, [%rd2], %r3;", "64-bit register"),
    ("st.global.L2::cache_hint.b32 [%rd2], %r1, %r3;", "64-bit register"),
    ("cp.async.cg.shared.global.L2::cache_hint [%r1], [%rd2], 16, %r3;", "64-bit register"),
    ("atom.global.add.L2::cache_hint.u32 %r1, [%rd2], 1, %r3;", "64-bit register"),
])
def test_forms_ptxas_rejects_are_located_verify_errors(line, match):
    text = frame(f"  {line}\n  ret;", target="sm_90a")
    assert_ptxas(text, ok=False)
    with pytest.raises(VerifyError, match=match) as e:
        run_launch(Launch(ptx=text, grid=(1, 1, 1), block=(32, 1, 1), args=[np.zeros(4, np.uint64)]))
    assert e.value.loc is not None and e.value.loc.line == 12


def test_a_register_fraction_outside_the_interval_is_a_runtime_error():
    body = "  mov.f32 %f1, 0f00000000;\n  createpolicy.fractional.L2::evict_last.b64 %rd1, %f1;\n"
    with pytest.raises(VerifyError, match=r"fraction 0\.0 \(lane 0\) is outside \(0, 1\]"):
        run(body)


def test_discard_is_a_write_the_race_detector_orders():
    # warp 0 discards the line warp 1 reads, with no barrier between them: a data race (the line is
    # indeterminate after the discard); with bar.sync between them, none
    body = """
  shr.u32 %r1, %r0, 5;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 discard.global.L2 [%rd0], 128;
  {bar}
  setp.eq.u32 %p2, %r1, 1;
  @%p2 ld.global.u64 %rd5, [%rd0+64];
"""
    for bar, races in (("", True), ("bar.sync 0;", False)):
        text = frame("  ld.param.u64 %rd0, [out];\n  mov.u32 %r0, %tid.x;\n" + body.replace("{bar}", bar)
                     + "\n  ret;", target="sm_90a")
        assert_ptxas(text)
        r = run_launch(Launch(ptx=text, grid=(1, 1, 1), block=(64, 1, 1), args=[np.zeros(16, np.uint64)]))
        found = [f for f in r.findings if f.cls == 21]
        assert bool(found) == races, [f.message for f in r.findings]
        if races:
            lines = text.splitlines()
            want = {i + 1 for i, ln in enumerate(lines) if "discard.global" in ln or "ld.global.u64 %rd5" in ln}
            assert {s.line for s in found[0].sides} == want


def test_discard_needs_a_line_aligned_global_address():
    with pytest.raises(MemoryFault, match="aligned to 128"):
        run("  discard.global.L2 [%rd0+8], 128;\n")
