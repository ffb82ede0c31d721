"""tcgen05.mma.ws with the zero-column mask descriptor (PTX ISA 9.1 §9.7.16.10.9.3, §9.7.16.4.3 Table 45) and
tcgen05.mma ... .ashift with A in tensor memory (§9.7.16.10.9.1).

Oracles, independent of the code under test:
* the zero-column mask: the four worked examples of §9.7.16.4.3 (masks transcribed from the PTX text), and for
  random descriptors a run-length expansion written here (alternating runs from the first-span value, then the
  start-count low bits dropped) -- the implementation computes each bit by a modulo instead;
* the MMAs: the harness of ``tests/semantics/test_tcgen05_mma.py`` (an independent SMEM layout model, TMEM dump) and
  the numerics oracle applied to B with the shifted column window and the masked columns set to zero, or to A with
  its rows moved down by one.
"""
import numpy as np
import pytest

from tcsim.isa.descriptors import ZeroColumnMask
from tcsim.isa.errors import VerifyError
from tests.semantics.test_tcgen05_mma import (a_tmem_words, arg, idesc_for, kernel, mma_issue, operands, oracle,
                                              read_d, run, EBITS)


def zcm(sc=(0, 0, 0, 0), fs=(0, 0, 0, 0), nonzero=1, skip=0, use=0, shift=0) -> int:
    """A descriptor from Table 45's fields (``skip`` / ``use`` are the raw 8-bit fields, span - 1)."""
    v = sum(int(s) << (8 * i) for i, s in enumerate(sc)) | sum(int(f) << (32 + i) for i, f in enumerate(fs))
    return v | (nonzero << 39) | (skip << 40) | (use << 48) | (shift << 56)


def bits_msb_first(text: str, width: int) -> np.ndarray:
    """A mask written as in the PTX examples ('111 0000 111', most significant bit first), as the low
    ``width`` columns (the examples show the low end of each sub-mask)."""
    s = text.replace(" ", "")[::-1][:width]
    return np.array([c == "1" for c in s], dtype=bool)


@pytest.mark.parametrize("m, desc, expected", [
    # Example 1: non-zero mask 0 -> all columns used
    (128, zcm(nonzero=0, skip=4, use=3), ["0" * 16]),
    # Example 2: M = 128, one sub-mask
    (128, zcm(skip=2, use=3), ["1110000111 0000"]),
    # Example 3: M = 64, fs0 = 1, fs1 = 0
    (64, zcm(fs=(1, 0, 0, 0), skip=2, use=3), ["111 0000 111 0000 111", "0000 111 0000 111 0000"]),
    # Example 4: M = 32, sc = {0, 1, 2, 1}, fs = {1, 1, 0, 0}, shift 2
    (32, zcm(sc=(0, 1, 2, 1), fs=(1, 1, 0, 0), skip=2, use=3, shift=2),
     ["0000 111 0000 111", "0000 111 0000 11", "111 0000 111 00", "111 0000 111 000"]),
])
def test_the_ptx_isa_examples(m, desc, expected):
    n = 256
    z = ZeroColumnMask.decode(desc)
    mask = z.mask(m, n)
    width = n // len(expected)
    for i, text in enumerate(expected):
        low = bits_msb_first(text, width)
        assert np.array_equal(mask[i * width:i * width + low.size], low), (i, text)
    if m == 32:
        assert z.shift == 2


def runs_oracle(desc: int, m: int, n: int) -> np.ndarray:
    """Run-length expansion of Table 45's fields."""
    sc = [(desc >> (8 * i)) & 0xFF for i in range(4)]
    fs = [(desc >> (32 + i)) & 1 for i in range(4)]
    if not (desc >> 39) & 1:
        return np.zeros(n, dtype=bool)
    ones, zeros = ((desc >> 40) & 0xFF) + 1, ((desc >> 48) & 0xFF) + 1
    s = {128: 1, 64: 2, 32: 4}[m]
    out = []
    for i in range(s):
        seq, val = [], fs[i]
        while len(seq) < n // s + sc[i]:
            seq += [bool(val)] * (ones if val else zeros)
            val ^= 1
        out += seq[sc[i]:sc[i] + n // s]
    return np.array(out, dtype=bool)


def test_random_descriptors_against_the_run_length_oracle():
    rng = np.random.default_rng(31)
    for _ in range(300):
        m = int(rng.choice([128, 64, 32]))
        n = int(rng.choice([64, 128, 256]))
        d = zcm(sc=rng.integers(0, 256, 4), fs=rng.integers(0, 2, 4), nonzero=int(rng.integers(0, 2)),
                skip=int(rng.integers(0, 12)), use=int(rng.integers(0, 12)))
        assert np.array_equal(ZeroColumnMask.decode(d).mask(m, n), runs_oracle(d, m, n)), hex(d)


# ---------------------------------------------------------------------------------------------- end to end
def ws_mma(m, n, desc_value, shift, literal=None, seed=0):
    """A .ws f8f6f4 MMA whose zero-column mask is args[3] (a register) or ``literal``; returns (got, A, B)."""
    rng = np.random.default_rng(seed)
    K = 32
    A, B, img, da, db = operands("f8f6f4", "e4m3", "e4m3", m, n + shift, K, "K", "K", "128B", "64B", rng)
    if literal is None:
        issue = arg(3, "%rd13") + "\n" + mma_issue("kind::f8f6f4", 0, ws=True, tail=", %rd13")
    else:
        issue = mma_issue("kind::f8f6f4", 0, ws=True, tail=f", {literal}")
    dump, _ = run(kernel(issue, ncols=64), img,
                  [da, db, idesc_for("f8f6f4", m, n, "e4m3", "e4m3", "f32"), desc_value], ncols=64)
    return read_d(dump[0], m, n, 0, ws=True), A, B


@pytest.mark.parametrize("m", [128, 64, 32])
def test_masked_columns_of_b_are_zero_and_the_shift_moves_the_window(m):
    n = 64
    shift = {128: 24, 64: 32, 32: 16}[m]
    d = zcm(sc=(3, 1, 0, 2), fs=(1, 0, 1, 0), skip=2, use=4, shift=shift)
    got, A, B = ws_mma(m, n, d, shift, seed=m)
    Bw = B[shift:shift + n].copy()
    Bw[runs_oracle(d, m, n)] = 0
    assert np.array_equal(got, oracle("f8f6f4", A, Bw, "e4m3", "e4m3", "f32"))
    # and it differs from the unmasked product (the mask did something)
    assert not np.array_equal(got, oracle("f8f6f4", A, B[shift:shift + n], "e4m3", "e4m3", "f32"))


@pytest.mark.parametrize("literal", ["0", None])
def test_a_zero_mask_changes_nothing(literal):
    # FlashMLA passes the literal 0; a register holding a descriptor with the non-zero-mask bit clear is the same
    got, A, B = ws_mma(128, 64, zcm(nonzero=0, skip=5, use=1), 0, literal=literal, seed=3)
    assert np.array_equal(got, oracle("f8f6f4", A, B, "e4m3", "e4m3", "f32"))


@pytest.mark.parametrize("desc_value, match", [
    (zcm(shift=33), "column shift 33 exceeds 32"),
    (1 << 37, "reserved bits"),
])
def test_bad_descriptors_are_verify_errors(desc_value, match):
    with pytest.raises(VerifyError, match=match):
        ws_mma(128, 64, desc_value, 0)


def test_shift_limit_is_16_for_m32():
    with pytest.raises(VerifyError, match="exceeds 16 for M = 32"):
        ws_mma(32, 64, zcm(shift=17), 0)


# ---------------------------------------------------------------------------------------------- .ashift
def ashift_mma(m, seed=7):
    rng = np.random.default_rng(seed)
    n, K = 32, 16
    A, B, img, da, db = operands("f16", "bf16", "bf16", m, n, K, "K", "K", "none", "128B", rng)
    tinit = np.zeros((1, 128, 16), np.uint32)
    tinit[0, :, 8:16] = a_tmem_words(A, EBITS["bf16"], [lambda i: i])
    issue = mma_issue("kind::f16.ashift", 16, a_tmem_col=8)
    dump, _ = run(kernel(issue, ncols=64, tinit=(0, 16)), img, [da, db, idesc_for("f16", m, n, "bf16", "bf16", "f32")],
                  ncols=64, tinit=tinit)
    return dump, A, B, tinit


def test_ashift_moves_the_rows_of_a_down_by_one():
    dump, A, B, tinit = ashift_mma(128)
    shifted = np.concatenate([A[:1], A[:-1]])          # row r uses row r - 1; row 0 keeps its own
    got = read_d(dump[0], 128, 32, 16)
    assert np.array_equal(got, oracle("f16", shifted, B, "bf16", "bf16", "f32"))
    assert not np.array_equal(got, oracle("f16", A, B, "bf16", "bf16", "f32"))
    assert np.array_equal(dump[0][:, 8:16], tinit[0, :, 8:16])     # A in TMEM is left as it was


def test_ashift_needs_m_128_or_256():
    with pytest.raises(VerifyError, match=r"\.ashift with M = 64 \[rule ashift-shape\]"):
        ashift_mma(64)
