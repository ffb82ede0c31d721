"""isa/swizzle.py against the PTX ISA §5.5.7 swizzle patterns (tma.md §4)."""
import numpy as np
import pytest

from tcsim.isa.swizzle import (SWIZZLE_GRANULE, SWIZZLE_MODES, SWIZZLE_PERIOD, check_mode, pattern_table, swizzle,
                         swizzled_offsets, unswizzle)

MODES = list(SWIZZLE_MODES)


@pytest.mark.parametrize("mode, lines_mod", [("32B", 2), ("64B", 4), ("128B", 8)])
def test_16b_chunk_patterns(mode, lines_mod):
    # §5.5.7: 16-byte chunk c of 128-byte line L moves to chunk c ^ (L % 2/4/8)
    for L in range(16):
        for c in range(8):
            for b in (0, 5, 15):
                a = L * 128 + c * 16 + b
                assert swizzle(a, mode) == L * 128 + (c ^ (L % lines_mod)) * 16 + b


def test_128b_table_rows():
    t = pattern_table("128B")
    assert t.shape == (8, 8)
    assert list(t[0]) == [0, 1, 2, 3, 4, 5, 6, 7]
    assert list(t[1]) == [1, 0, 3, 2, 5, 4, 7, 6]
    assert list(t[7]) == [7, 6, 5, 4, 3, 2, 1, 0]
    for L in range(8):
        assert sorted(t[L]) == list(range(8))           # each row a permutation


def test_atom_32b_and_64b():
    for L in range(8):
        for g in range(4):                               # 32-byte atoms permuted by line % 4
            for b in (0, 17, 31):
                a = L * 128 + g * 32 + b
                assert swizzle(a, "128B_atom_32B") == L * 128 + (g ^ (L % 4)) * 32 + b
        for h in range(2):                               # 64-byte halves swap on odd lines
            for b in (0, 40, 63):
                a = L * 128 + h * 64 + b
                assert swizzle(a, "128B_atom_64B") == L * 128 + (h ^ (L % 2)) * 64 + b


def test_flip_8b_follows_the_documented_sentence():
    """cuda.h 13.0 on CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B_FLIP_8B: "Swizzle 32B chunks within 128B span,
    additionally swap lower 8B with upper 8B within each 16B for every alternate row".  Checked as stated: on
    one row of each pair the mode is 128B_atom_32B; on the other, every 16-byte chunk of the 128B_atom_32B
    result has its two 8-byte halves exchanged.  Which rows flip ("row" as the 128-byte line, odd ones) is the
    interpretation isa.swizzle.UNVERIFIED records: no hardware confirms it, so the test asserts only that the
    flipped rows are every other line, whichever parity."""
    from tcsim.isa.swizzle import UNVERIFIED

    assert "128B_atom_32B_flip_8B" in UNVERIFIED            # the guess is marked as one in the code
    flipped = set()
    for L in range(16):
        line = np.arange(L * 128, (L + 1) * 128, dtype=np.int64)
        atom = np.array([swizzle(int(a), "128B_atom_32B") for a in line])
        flip = np.array([swizzle(int(a), "128B_atom_32B_flip_8B") for a in line])
        if np.array_equal(flip, atom):
            continue
        # each 16-byte chunk of the atom result, its 8-byte halves exchanged
        assert np.array_equal(flip, atom ^ 8), L
        flipped.add(L)
    assert flipped in ({L for L in range(16) if L % 2}, {L for L in range(16) if L % 2 == 0})


@pytest.mark.parametrize("mode", MODES)
def test_round_trip_and_bijection(mode):
    rng = np.random.default_rng(1)
    a = rng.integers(0, 1 << 20, size=4096, dtype=np.int64)
    assert np.array_equal(unswizzle(swizzle(a, mode), mode), a)
    period = max(SWIZZLE_PERIOD[mode], 128)
    base = np.arange(period, dtype=np.int64) + 3 * period
    s = swizzle(base, mode)
    assert np.array_equal(np.sort(s), base)              # a permutation of each period block
    # periodic in the absolute address, and never moves bytes across 128-byte lines
    assert np.array_equal(swizzle(base + period, mode), s + period)
    assert np.array_equal(s >> 7, base >> 7)
    g = SWIZZLE_GRANULE[mode]
    assert np.array_equal(s % g, base % g)               # bits below the granule are untouched


@pytest.mark.parametrize("mode", MODES)
def test_scalar_and_array_agree(mode):
    a = np.arange(0, 4096, 8, dtype=np.uint32)
    s = swizzle(a, mode)
    assert s.dtype == np.uint32
    assert [swizzle(int(x), mode) for x in a] == [int(x) for x in s]


def test_absolute_address_phase():
    # a box at 0x80 (not on the 1024-byte repeat) sees the 128B pattern at phase 1
    assert swizzle(0x80, "128B") == 0x80 + 0x10
    assert swizzle(0x400 + 0x80, "128B") == 0x400 + 0x80 + 0x10
    offs = swizzled_offsets(0x80, 256, "128B", granule=16)
    assert list(offs[:8] - 0x80) == [16, 0, 48, 32, 80, 64, 112, 96]


def test_unknown_mode():
    with pytest.raises(ValueError, match="unknown swizzle mode '96B'"):
        check_mode("96B")
    with pytest.raises(ValueError):
        swizzle(0, "256B")
