"""128-bit data (PTX ISA 9.1 §5.2.2 .b128, §9.7.9.1 mov, §9.7.9.8 ld, §9.7.9.10 st, §9.7.13.5 atom .b128).

Expected values are computed here with numpy from the inputs (element 0 of a packed vector in the low bits,
bits 0-63 at the lower address); each form's acceptance is checked with ptxas when it is on PATH.  The nvcc
fixture ``tests/fixtures/nvcc/b128_moves.sm_90a.ptx`` is also replayed against what the H100 wrote
(``tests/hw/golden_h100/hopper_misc.json``, recorded by ``python -m calib.probes.hopper_misc record``) in
``tests/hw/test_hopper_misc_golden.py``.
"""
from pathlib import Path

import numpy as np
import pytest

from tcsim.isa.errors import MemoryFault, VerifyError
from tcsim.launch import Launch, run_launch
from tests.ptx_frame import kernel as frame
from tcsim.isa.ptxas import assemble

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "nvcc" / "b128_moves.sm_90a.ptx"
M64 = (1 << 64) - 1


def assert_ptxas(text: str, ok: bool = True) -> None:
    """ptxas (for the kernel's own .target) accepts ``text`` (``ok``) or rejects it; skipped without ptxas."""
    arch = text.split(".target", 1)[1].split()[0]
    r = assemble(text, arch=arch)
    if r is not None:
        assert (r[0] == 0) == ok, f"ptxas {'rejects' if ok else 'accepts'} the test kernel:\n{r[1]}"


def b128_inputs(seed: int = 5):
    """The fixture's inputs: in[64] and cell[128] 16-byte values; cell[t] == in[t ^ 1] where t % 4 < 2."""
    rng = np.random.default_rng(seed)
    inp = rng.integers(0, 2 ** 64, (64, 2), dtype=np.uint64)
    cell = rng.integers(0, 2 ** 64, (128, 2), dtype=np.uint64)
    for t in range(64):
        if t % 4 < 2:
            cell[t] = inp[t ^ 1]
    return inp, cell


def b128_expected(inp, cell):
    """What b128_moves.cu computes (read off its source), as (out[320, 2], cell[128, 2]) uint64 halves."""
    t = np.arange(64)
    out = np.zeros((320, 2), np.uint64)
    out[:64, 0], out[:64, 1] = inp[t ^ 1, 1], inp[t ^ 1, 0]            # neighbour's halves swapped
    lo, hi = inp[:, 0], inp[:, 1]
    w1 = ((lo >> np.uint64(32)) ^ t.astype(np.uint64)) & np.uint64(0xFFFFFFFF)
    out[64:128, 0] = (lo & np.uint64(0xFFFFFFFF)) | (w1 << np.uint64(32))
    out[64:128, 1] = hi
    out[128:192] = cell[:64]                                           # atom.cas returns the old value
    out[192:256] = cell[64:]                                           # atom.exch returns the old value
    cell_after = cell.copy()
    swapped = (cell[:64] == inp[t ^ 1]).all(axis=1)
    cell_after[:64][swapped] = inp[swapped]
    cell_after[64:] = inp
    out[256:320:2] = [M64, 0]                                          # mov.b128 q, -1 (even threads)
    out[257:320:2] = [0x8000000000000001, 0]                           # mov.b128 q, 0x8000000000000001 (odd)
    return out, cell_after


def run_fixture(inp, cell):
    out = np.zeros((320, 2), np.uint64)
    r = run_launch(Launch(ptx=FIXTURE.read_text(), grid=(1, 1, 1), block=(64, 1, 1), args=[out, inp, cell]))
    return r.outputs[0].reshape(320, 2), r.outputs[2].reshape(128, 2)


def test_nvcc_fixture_moves_loads_stores_and_atomics():
    inp, cell = b128_inputs()
    want_out, want_cell = b128_expected(inp, cell)
    got_out, got_cell = run_fixture(inp, cell)
    assert np.array_equal(got_out[:256], want_out[:256])
    assert np.array_equal(got_cell, want_cell)
    assert (cell[:64] == inp[np.arange(64) ^ 1]).all(axis=1).sum() == 32    # half the CAS succeed
    # the immediates: a 64-bit PTX constant, zero-extended to 128 bits (as the H100 does, hopper_misc.json)
    assert np.array_equal(got_out[256:], want_out[256:])


def run_body(body, out_words=64, arch="sm_90a", params="", args=()):
    text = frame("  .reg .b128 %q<8>;\n  .shared .align 16 .b8 sm[1024];\n  ld.param.u64 %rd0, [out];\n"
                 "  mov.u32 %r0, %tid.x;\n" + body + "\n  ret;", target=arch, params=params)
    assert_ptxas(text)
    out = np.zeros(out_words, np.uint64)
    return run_launch(Launch(ptx=text, grid=(1, 1, 1), block=(32, 1, 1), args=[out, *args])).outputs[0], text


def test_pack_four_words_and_unpack_into_two_halves_and_four_words():
    body = """
  add.u32 %r1, %r0, 0x11111111; add.u32 %r2, %r0, 0x22222222; add.u32 %r3, %r0, 0x33333333;
  add.u32 %r4, %r0, 0x44444444;
  mov.b128 %q0, {%r1, %r2, %r3, %r4};
  mov.b128 %q1, %q0;
  mov.b128 {%rd2, %rd3}, %q1;
  mov.b128 {%r5, _, %r7, %r8}, %q1;
  mul.wide.u32 %rd9, %r0, 8;
  setp.eq.u32 %p0, %r0, 0;
  @%p0 st.global.v2.u64 [%rd0], {%rd2, %rd3};
  @%p0 st.global.v4.u32 [%rd0+16], {%r5, %r7, %r8, %r0};
"""
    out, _ = run_body(body)
    w = [0x11111111, 0x22222222, 0x33333333, 0x44444444]
    assert int(out[0]) == w[0] | (w[1] << 32) and int(out[1]) == w[2] | (w[3] << 32)
    assert int(out[2]) == w[0] | (w[2] << 32) and int(out[3]) == w[3]


@pytest.mark.parametrize("space,addr_setup,st_q,ld_q", [
    ("shared", "  mov.u32 %r9, sm;\n  mad.lo.u32 %r9, %r0, 16, %r9;\n", "st.weak.shared::cta.b128 [%r9], %q0;",
     "ld.volatile.shared.b128 %q1, [%r9];"),
    ("global", "  mad.wide.u32 %rd9, %r0, 16, %rd0;\n  add.u64 %rd9, %rd9, 512;\n",
     "st.relaxed.gpu.global.b128 [%rd9], %q0;", "ld.acquire.gpu.global.b128 %q1, [%rd9];"),
    ("generic", "  mov.u64 %rd9, sm;\n  cvta.shared.u64 %rd9, %rd9;\n  mad.wide.u32 %rd9, %r0, 16, %rd9;\n",
     "st.b128 [%rd9], %q0;", "ld.b128 %q1, [%rd9];"),
])
def test_store_then_load_b128_round_trips_and_lays_out_little_endian(space, addr_setup, st_q, ld_q):
    body = addr_setup + f"""
  cvt.u64.u32 %rd2, %r0;
  or.b64 %rd2, %rd2, 0xA5A5000000000000;
  not.b64 %rd3, %rd2;
  mov.b128 %q0, {{%rd2, %rd3}};
  {st_q}
  {ld_q}
  mov.b128 {{%rd4, %rd5}}, %q1;
  mad.wide.u32 %rd10, %r0, 16, %rd0;
  st.global.v2.u64 [%rd10], {{%rd5, %rd4}};
"""
    # the first 32 x 16 bytes hold each lane's halves swapped; the global case also wrote bytes 512.. in order
    out, _ = run_body(body, out_words=128)
    lanes = np.arange(32, dtype=np.uint64)
    lo = lanes | np.uint64(0xA5A5000000000000)
    assert np.array_equal(out[:64:2], ~lo) and np.array_equal(out[1:64:2], lo)
    if space == "global":
        assert np.array_equal(out[64::2], lo) and np.array_equal(out[65::2], ~lo)


def test_b128_atomics_on_one_shared_address_apply_in_lane_order():
    # every lane CASes sm[0] from {lane, 0} to {lane + 1, 0}: starting at {0, 0}, lane k sees {k, 0} and succeeds
    # (lanes applied one after another in lane order), so the chain reaches {32, 0}; exch then leaves lane 31's
    body = """
  mov.u32 %r9, sm;
  mov.b64 %rd8, 0;
  setp.eq.u32 %p0, %r0, 0;
  mov.b128 %q5, {%rd8, %rd8};
  @%p0 st.shared.b128 [%r9], %q5;
  @%p0 st.shared.b128 [%r9+16], %q5;
  bar.sync 0;
  cvt.u64.u32 %rd2, %r0;
  add.u64 %rd3, %rd2, 1;
  mov.b128 %q0, {%rd2, %rd8};
  mov.b128 %q1, {%rd3, %rd8};
  atom.shared.cas.b128 %q2, [%r9], %q0, %q1;
  mov.b128 %q3, {%rd8, %rd2};
  atom.relaxed.cta.shared::cta.exch.b128 %q4, [%r9+16], %q3;
  bar.sync 0;
  mad.wide.u32 %rd10, %r0, 32, %rd0;
  mov.b128 {%rd4, %rd5}, %q2;
  mov.b128 {%rd6, %rd7}, %q4;
  st.global.v2.u64 [%rd10], {%rd4, %rd5};
  st.global.v2.u64 [%rd10+16], {%rd6, %rd7};
  ld.shared.b128 %q6, [%r9];
  mov.b128 {%rd4, %rd5}, %q6;
  @%p0 st.global.v2.u64 [%rd0+1024], {%rd4, %rd5};
"""
    out, _ = run_body(body, out_words=130)
    lanes = np.arange(32, dtype=np.uint64)
    rows = out[:128].reshape(32, 4)
    assert np.array_equal(rows[:, 0], lanes) and not rows[:, 1].any()         # each CAS saw {k, 0}
    assert not rows[0, 2] and not rows[0, 3]                                  # lane 0's exch saw {0, 0}
    assert np.array_equal(rows[1:, 3], lanes[:-1]) and not rows[1:, 2].any()  # lane k saw lane k-1's {0, k-1}
    assert int(out[128]) == 32 and int(out[129]) == 0


def test_misaligned_b128_store_faults():
    body = "  mov.u32 %r9, sm;\n  add.u32 %r9, %r9, 8;\n  st.shared.b128 [%r9], %q0;\n"
    with pytest.raises(MemoryFault):
        run_body(body)


@pytest.mark.parametrize("line,match", [
    ("mov.b128 %q0, %rd1;", "mov.b128"),                          # ptxas: Arguments mismatch
    ("mov.b128 %q0, {%rd1, %r2, %r3};", "vector"),                # Incompatible elements of vector expression
    ("ld.global.b128 {%rd1, %rd2}, [%rd0];", "one .b128 register"),  # Argument vector size mismatch
    ("st.global.b128 [%rd0], {%rd1, %rd2};", "one .b128 register"),
    ("ld.global.v2.b128 {%q0, %q1}, [%rd0];", "128-bit limit"),   # Vector type too large
    ("atom.global.add.b128 %q0, [%rd0], %q1;", "does not take .b128"),
    ("atom.global.cas.b128 %q0, [%rd0], {%rd1, %rd2}, %q2;", "must be a .b128 register"),
])
def test_forms_ptxas_rejects_are_located_verify_errors(line, match):
    text = frame(f"  .reg .b128 %q<4>;\n  ld.param.u64 %rd0, [out];\n  {line}\n  ret;", target="sm_90a")
    assert_ptxas(text, ok=False)
    with pytest.raises(VerifyError, match=match) as e:
        run_launch(Launch(ptx=text, grid=(1, 1, 1), block=(32, 1, 1), args=[np.zeros(4, np.uint64)]))
    assert e.value.loc is not None and e.value.loc.line == 14


def test_b128_atomics_need_sm_90():
    text = frame("  .reg .b128 %q<4>;\n  ld.param.u64 %rd0, [out];\n  atom.global.exch.b128 %q0, [%rd0], %q1;\n  ret;",
                 target="sm_80")
    assert_ptxas(text, ok=False)
    with pytest.raises(VerifyError, match="sm_90"):
        run_launch(Launch(ptx=text, grid=(1, 1, 1), block=(32, 1, 1), args=[np.zeros(4, np.uint64)]))
