"""isa/descriptors.py: the tcgen05 shared-memory and instruction descriptors, and the canonical-layout address
function, against the bit tables of tcgen05.md and the CuTe layouts of the PTX ISA figures (§9.7.16.3.3,
Figures 188-192, quoted in the PTX markdown mirror)."""
from __future__ import annotations

import numpy as np
import pytest

from tcsim.isa.descriptors import (InstrDescriptor, InstrDescriptorBlockScaled, SmemDescriptor, decode_idesc,
                             operand_addresses, type_code)


# ---------------------------------------------------------------------------------------------- SMEM descriptor
def test_smem_descriptor_bit_positions():
    d = SmemDescriptor(start_address=0x400, lbo=2048, sbo=128, swizzle="128B")
    want = (0x400 >> 4) | (2048 >> 4) << 16 | (128 >> 4) << 32 | 1 << 46 | 2 << 61
    assert d.encode() == want
    assert SmemDescriptor.decode(want) == d
    # every swizzle code, base offset and LBO mode land in their fields
    for name, code in (("none", 0), ("128B_base32B", 1), ("128B", 2), ("64B", 4), ("32B", 6)):
        v = SmemDescriptor(start_address=0, swizzle=name, base_offset=5, lbo_mode=1).encode()
        assert v >> 61 == code and (v >> 49) & 7 == 5 and (v >> 52) & 1 == 1 and (v >> 46) & 7 == 1


def test_smem_descriptor_start_address_keeps_bits_4_to_17():
    """start field = (addr & 0x3FFFF) >> 4: a shared::cluster address's rank bits (24+) are dropped."""
    v = SmemDescriptor(start_address=(1 << 24) | 0x3FFF0).encode()
    assert v & 0x3FFF == 0x3FFF
    assert SmemDescriptor.decode(v).start_address == 0x3FFF0


def test_ptx_figure_encodings():
    """PTX Figure 188 (K-major, no swizzle, tf32): LBO = 64*4 -> field 16, SBO = 32*4 -> field 8; Figure 192
    (MN-major 64B, bf16): LBO 512 -> 32, SBO 1024 -> 64."""
    v = SmemDescriptor(start_address=0, lbo=64 * 4, sbo=32 * 4).encode()
    assert (v >> 16) & 0x3FFF == 16 and (v >> 32) & 0x3FFF == 8
    v = SmemDescriptor(start_address=0, lbo=512, sbo=1024, swizzle="64B").encode()
    assert (v >> 16) & 0x3FFF == 32 and (v >> 32) & 0x3FFF == 64


def test_smem_descriptor_random_round_trip():
    rng = np.random.default_rng(0)
    for _ in range(500):
        v = int(rng.integers(0, 2**63, dtype=np.uint64)) | (int(rng.integers(0, 2)) << 63)
        d = SmemDescriptor.decode(v)
        assert d.encode() == v
        assert SmemDescriptor.decode(d.encode()) == d


def test_smem_descriptor_invalid_fields_are_kept():
    v = SmemDescriptor(start_address=16).encode() | 3 << 61 | 1 << 55 | 1 << 14
    d = SmemDescriptor.decode(v)
    assert d.swizzle == "invalid3" and d.reserved == (1 << 55 | 1 << 14)
    assert d.encode() == v
    assert "reserved bits" in d.describe()


def test_smem_descriptor_describe():
    d = SmemDescriptor(start_address=0x1230, lbo=16, sbo=1024, swizzle="128B")
    assert d.describe() == "SMEM descriptor {start 0x01230, LBO 16, SBO 1024, swizzle 128B}"
    bad = SmemDescriptor.decode(d.encode() & ~(1 << 46))
    assert "fixed bits 46-48 = 0b000 (must be 0b001)" in bad.describe()


def test_smem_descriptor_encode_rejects_unaligned():
    with pytest.raises(ValueError, match="multiple of 16"):
        SmemDescriptor(start_address=8).encode()
    with pytest.raises(ValueError, match="does not fit"):
        SmemDescriptor(start_address=0, sbo=1 << 18).encode()


# ---------------------------------------------------------------------------------------------- instruction descriptors
def test_instr_descriptor_bit_positions():
    d = InstrDescriptor.for_kind("f16", 128, 256, "bf16", "bf16", "f32")
    assert d.encode() == (1 << 4) | (1 << 7) | (1 << 10) | (256 >> 3) << 17 | (128 >> 4) << 24 == 0x08400490
    full = InstrDescriptor(m=64, n=8, dtype=0, atype=0, btype=0, sparse_id2=3, sparse=1, saturate=1, negate_a=1,
                           negate_b=1, a_major=1, b_major=1, max_shift=3)
    v = full.encode()
    assert v == 3 | 1 << 2 | 1 << 3 | 1 << 13 | 1 << 14 | 1 << 15 | 1 << 16 | 1 << 17 | 4 << 24 | 3 << 30
    assert InstrDescriptor.decode(v) == full


def test_instr_descriptor_type_codes():
    assert type_code("f8f6f4", "e2m3") == 3 and type_code("f8f6f4", "e3m2") == 4 and type_code("f8f6f4", "e2m1") == 5
    assert type_code("i8", "s8") == 1 and type_code("tf32", "tf32") == 2
    with pytest.raises(ValueError):
        type_code("f16", "e4m3")
    d = InstrDescriptor.decode(InstrDescriptor.for_kind("i8", 128, 64, "u8", "s8", "s32", saturate=1).encode())
    assert (d.a_format("i8"), d.b_format("i8"), d.d_format, d.saturate) == ("u8", "s8", "s32", 1)
    assert d.describe("i8") == ("instruction descriptor {M 128, N 64, D s32, A u8, B s8, A K-major, B K-major, "
                                "saturate}")


def test_instr_descriptor_round_trip_and_reserved():
    rng = np.random.default_rng(1)
    for _ in range(300):
        v = int(rng.integers(0, 2**32))
        assert InstrDescriptor.decode(v).encode() == v
        assert InstrDescriptorBlockScaled.decode(v).encode() == v
    d = InstrDescriptor.decode(1 << 23 | 1 << 6)
    assert d.reserved == 1 << 23 | 1 << 6


def test_instr_descriptor_describe_names_every_set_field():
    """describe() must not drop set bits: a sparsity selector without the sparse flag is named.  0xC1 is the
    tcgen05.mma walkthrough seed's compiler-internal "kind word"; read as a Table 42 descriptor it is invalid."""
    d = InstrDescriptor.decode(0xC1)
    assert (d.m, d.n, d.sparse_id2, d.sparse, d.atype, d.reserved) == (0, 0, 1, 0, 1, 1 << 6)
    assert d.describe("f16") == ("instruction descriptor {M 0, N 0, D f16, A bf16, B f16, A K-major, B K-major, "
                                 "sparsity selector 1 without the sparse flag, reserved bits 0x00000040 set}")
    assert "selector" not in InstrDescriptor.for_kind("f16", 64, 128, "bf16", "bf16", "f32").describe("f16")
    assert "sparse (selector 2)" in InstrDescriptor(sparse=1, sparse_id2=2).describe("f16")


def test_block_scaled_descriptor_fields():
    d = InstrDescriptorBlockScaled.for_kind("mxf4nvf4", 128, 128, "e2m1", "e2m1", "ue4m3", sfa_id=2, sfb_id=2)
    v = d.encode()
    assert v == 2 << 4 | 1 << 7 | 1 << 10 | 16 << 17 | 0 << 23 | 8 << 24 | 2 << 29
    assert (v >> 27) & 3 == 128 >> 7                        # PTX writes M >> 7 in bits 27-28: the same bits
    assert ((InstrDescriptorBlockScaled(m=256).encode() >> 27) & 3) == 256 >> 7
    e = InstrDescriptorBlockScaled.decode(v | 1 << 31)
    assert (e.k_size, e.sfa_id, e.sfb_id, e.scale_format) == (1, 2, 2, "ue4m3")
    assert e.describe("mxf4nvf4") == ("block-scaled instruction descriptor {M 128, N 128, D f32, A e2m1, B e2m1, "
                                      "scale ue4m3, SFA id 2, SFB id 2, A K-major, B K-major, K96}")
    assert isinstance(decode_idesc("mxf8f6f4", v), InstrDescriptorBlockScaled)
    assert isinstance(decode_idesc("tf32", v), InstrDescriptor)


# ---------------------------------------------------------------------------------------------- canonical layouts
def size(s) -> int:
    return s if isinstance(s, int) else int(np.prod([size(x) for x in s]))


def cute(shape, stride, coord):
    """Offset of a flat coordinate in a (possibly nested) CuTe layout shape:stride (colexicographic)."""
    if isinstance(shape, int):
        return coord * stride
    off = 0
    for s, d in zip(shape, stride):
        off += cute(s, d, coord % size(s))
        coord //= size(s)
    return off


def swz(a, bits, base, shift):
    """CuTe Swizzle<B,M,S> on a byte address."""
    mask = ((1 << bits) - 1) << (base + shift)
    return a ^ ((a & mask) >> shift)


#: PTX ISA §9.7.16.3.3 examples: (major, swizzle, element bytes, layout (mn-mode, k-mode) in elements, LBO, SBO,
#: CuTe swizzle on bytes)
FIGURES = [
    ("K", "none", 4, (((8, 2), (4, 4)), ((4, 32), (1, 64))), 64 * 4, 32 * 4, (0, 4, 3)),          # Fig. 188
    ("K", "32B", 4, (((8, 2), (4, 2)), ((8, 64), (1, 4))), 16, 64 * 4, (1, 4, 3)),                # Fig. 189 (K<=W)
    ("MN", "none", 2, (((8, 1, 2), (8, 2)), ((1, 8, 64), (8, 128))), 128 * 2, 64 * 2, (0, 4, 3)),  # Fig. 190
    ("MN", "32B", 2, (((8, 2, 2), (8, 2)), ((1, 8, 128), (16, 256))), 128 * 2, 256 * 2, (1, 4, 3)),  # Fig. 191
    ("MN", "64B", 2, (((8, 4, 2), (8, 2)), ((1, 8, 256), (32, 512))), 256 * 2, 512 * 2, (2, 4, 3)),  # Fig. 192
]


@pytest.mark.parametrize("major, swizzle, eb, layout, lbo, sbo, sw", FIGURES)
@pytest.mark.parametrize("start", [0, 1024, 0x2000])
def test_operand_addresses_match_ptx_figures(major, swizzle, eb, layout, lbo, sbo, sw, start):
    (mn_shape, k_shape), (mn_stride, k_stride) = layout
    rows, k = size(mn_shape), size(k_shape)
    got = operand_addresses(SmemDescriptor(start_address=start, lbo=lbo, sbo=sbo, swizzle=swizzle), rows, k,
                            8 * eb, major)
    for mn in range(rows):
        for kk in range(k):
            lin = start + eb * (cute(mn_shape, mn_stride, mn) + cute(k_shape, k_stride, kk))
            assert got.byte[mn, kk] == swz(lin, *sw), (mn, kk)
    assert not got.shift.any()


@pytest.mark.parametrize("major", ["K", "MN"])
@pytest.mark.parametrize("swizzle", ["none", "32B", "64B", "128B"])
@pytest.mark.parametrize("bits", [8, 16, 32])
def test_dense_canonical_packing_is_a_bijection(major, swizzle, bits):
    """With the dense strides (K-major: SBO = 8 rows x W; MN-major: LBO = next MN atom), a 128-row operand (K a
    whole atom row for K-major swizzles, else 32 bytes) fills [0, size) exactly once."""
    W = {"none": 16, "32B": 32, "64B": 64, "128B": 128}[swizzle]
    eb = bits // 8
    rows = 128
    k = W // eb if (major == "K" and swizzle != "none") else 32 // eb
    if major == "K":
        lbo, sbo = (rows // 8 * 128, 128) if swizzle == "none" else (16, 8 * W)
    else:
        if swizzle == "none":
            lbo, sbo = rows * eb // 16 * 128, 128
        else:
            lbo, sbo = 8 * W * ((k + 7) // 8), 8 * W
    a = operand_addresses(SmemDescriptor(start_address=0, lbo=lbo, sbo=sbo, swizzle=swizzle), rows, k, bits, major)
    cells = (a.byte[..., None] + np.arange(eb)).reshape(-1)
    assert np.array_equal(np.sort(cells), np.arange(rows * k * eb))


def test_swizzle_is_applied_to_absolute_addresses():
    """Advancing K inside a 128B atom by adding 32 bytes to the start field gives the bytes 32.. of each row
    of the pattern that starts at the atom (CUTLASS / DeepGEMM descriptor iteration)."""
    full = operand_addresses(SmemDescriptor(start_address=0x400, sbo=1024, swizzle="128B"), 16, 64, 16, "K")
    half = operand_addresses(SmemDescriptor(start_address=0x420, sbo=1024, swizzle="128B"), 16, 16, 16, "K")
    assert np.array_equal(half.byte, full.byte[:, 16:32])


def test_four_bit_elements():
    a = operand_addresses(SmemDescriptor(start_address=0, lbo=2048, sbo=128), 16, 64, 4, "K")
    assert a.byte[3, 5] == 3 * 16 + 2 and a.shift[3, 5] == 4
    assert a.byte[9, 33] == 16 + 128 + 2048 + 0 and a.shift[9, 33] == 4
    assert a.span() == (0, 128 + 2048 + 128)


def test_mode1_tf32_mn_major_atom():
    """Swizzle mode 1 (128B with 32B atoms): 128-byte MN rows, 4 K rows per atom, CuTe Swizzle<2,5,2> (?)."""
    a = operand_addresses(SmemDescriptor(start_address=0, lbo=2048, sbo=512, swizzle="128B_base32B"), 64, 8, 32,
                          "MN")
    for mn, kk in ((0, 0), (5, 1), (31, 3), (40, 6)):
        lin = (mn * 4) % 128 + (mn * 4 // 128) * 2048 + (kk % 4) * 128 + (kk // 4) * 512
        assert a.byte[mn, kk] == lin ^ (((lin >> 7) & 3) << 5)


def test_operand_addresses_rejects_non_canonical_requests():
    with pytest.raises(ValueError, match="wider than the 32-byte swizzle atom row"):
        operand_addresses(SmemDescriptor(start_address=0, sbo=256, swizzle="32B"), 8, 32, 16, "K")
    with pytest.raises(ValueError, match="not a valid swizzle"):
        operand_addresses(SmemDescriptor.decode(SmemDescriptor(start_address=0).encode() | 7 << 61), 8, 8, 16, "K")
    with pytest.raises(ValueError, match="major"):
        operand_addresses(SmemDescriptor(start_address=0), 8, 8, 16, "X")
