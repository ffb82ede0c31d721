"""isa/tensormap.py: fields, driver validity rules, tcsim's 128-byte encoding, launcher hook."""
import struct

import ml_dtypes
import numpy as np
import pytest

from tcsim.isa.errors import LaunchError, MemoryFault
from tcsim.isa.tensormap import DATA_TYPES, LAYOUT, MAGIC, TensorMap
from tcsim.memory import GlobalMemory


def tmap(**kw):
    base = dict(dtype="FLOAT32", rank=2, global_address=0x10000, global_dims=(64, 32), global_strides=(256,),
                box_dims=(32, 16), element_strides=(1, 1))
    base.update(kw)
    return TensorMap(**base)


def test_data_types_enum_and_sizes():
    assert [DATA_TYPES[n].enum for n in ("UINT8", "UINT16", "UINT32", "INT32", "UINT64", "INT64", "FLOAT16",
                                         "FLOAT32", "FLOAT64", "BFLOAT16", "FLOAT32_FTZ", "TFLOAT32",
                                         "TFLOAT32_FTZ", "16U4_ALIGN8B", "16U4_ALIGN16B", "16U6_ALIGN16B")] == \
        list(range(16))
    assert DATA_TYPES["BFLOAT16"].esize == 2 and DATA_TYPES["FLOAT64"].esize == 8
    assert DATA_TYPES["16U6_ALIGN16B"].bits == 6 and DATA_TYPES["16U4_ALIGN8B"].esize is None


def test_tiled_from_numpy_reverses_axes():
    a = np.zeros((5, 7, 24), dtype=np.float16)
    t = TensorMap.tiled(a, (1, 4, 16), swizzle="32B", element_strides=(1, 2, 1))
    assert t.dtype == "FLOAT16" and t.rank == 3
    assert t.global_dims == (24, 7, 5)
    assert t.global_strides == (48, 336)
    assert t.box_dims == (16, 4, 1)
    assert t.element_strides == (1, 2, 1)
    assert t.traversed() == (16, 2, 1)
    assert t.box_bytes() == 16 * 2 * 2
    assert t.array is a


@pytest.mark.parametrize("dt, name", [(np.uint8, "UINT8"), (np.int8, "UINT8"), (np.int16, "UINT16"),
                                      (np.int32, "INT32"), (np.uint32, "UINT32"), (np.int64, "INT64"),
                                      (np.float64, "FLOAT64"), (ml_dtypes.bfloat16, "BFLOAT16"),
                                      (ml_dtypes.float8_e4m3fn, "UINT8")])
def test_numpy_dtype_mapping(dt, name):
    a = np.zeros((4, 64), dtype=dt)
    assert TensorMap.tiled(a, (2, 16)).dtype == name


def test_dtype_override_and_mismatch():
    a = np.zeros((4, 32), dtype=np.float32)
    assert TensorMap.tiled(a, (4, 8), dtype="TFLOAT32").dtype == "TFLOAT32"
    assert TensorMap.tiled(a, (4, 8), dtype=7).dtype == "FLOAT32"
    with pytest.raises(LaunchError, match="dtype FLOAT16 has 2-byte elements"):
        TensorMap.tiled(a, (4, 8), dtype="FLOAT16")


def test_tiled_rejects_non_dense_inner_axis():
    a = np.zeros((8, 64), dtype=np.float32)[:, ::2]
    with pytest.raises(LaunchError, match="innermost axis of the array has stride 8 bytes"):
        TensorMap.tiled(a, (4, 4))
    with pytest.raises(LaunchError, match="box .* has 1 entries but the array has 2"):
        TensorMap.tiled(np.zeros((8, 64), np.float32), (4,))


def test_encode_decode_round_trip_and_layout():
    t = tmap(dtype="BFLOAT16", rank=3, global_address=0x7F00_0000_0100, global_dims=(128, 33, 1 << 32),
             global_strides=(256, (1 << 40) - 16), box_dims=(64, 256, 1), element_strides=(1, 8, 3),
             swizzle="128B", l2_promotion="256B", oob_fill="nan")
    raw = t.encode()
    assert len(raw) == 128
    assert struct.unpack_from("<Q", raw, 0)[0] == 0x7F00_0000_0100
    assert struct.unpack_from("<I", raw, LAYOUT["magic"][0])[0] == MAGIC
    assert raw[LAYOUT["rank"][0]] == 3 and raw[LAYOUT["dtype"][0]] == 9 and raw[LAYOUT["swizzle"][0]] == 3
    assert struct.unpack_from("<5I", raw, 8)[2] == 0xFFFFFFFF        # dims stored minus one
    back = TensorMap.decode(raw)
    assert back == t
    assert back.encode() == raw


def test_decode_rejects_garbage():
    with pytest.raises(MemoryFault, match="do not hold one"):
        TensorMap.decode(bytes(128))
    raw = bytearray(tmap().encode())
    raw[LAYOUT["swizzle"][0]] = 9
    with pytest.raises(LaunchError, match="swizzle enum 9 is unknown"):
        TensorMap.decode(bytes(raw))


def test_to_driver_args():
    t = tmap(swizzle="64B", interleave="none", l2_promotion="128B", oob_fill="nan")
    assert t.to_driver_args() == (7, 2, 0x10000, (64, 32), (256,), (32, 16), (1, 1), 0, 2, 2, 1)
    assert t.to_driver_args(global_address=0x2000)[2] == 0x2000


RULES = [
    (dict(rank=0, global_dims=(), global_strides=(), box_dims=(), element_strides=()), "tensorRank must be 1..5"),
    (dict(rank=6, global_dims=(16,) * 6, global_strides=(64,) * 5, box_dims=(4,) * 6, element_strides=(1,) * 6),
     "tensorRank must be 1..5"),
    (dict(interleave="16B"), "tensorRank must be >= 3 when interleave is not NONE"),
    (dict(global_address=0x10008), "globalAddress must be 16-byte aligned"),
    (dict(rank=3, global_dims=(64, 4, 4), global_strides=(256, 1024), box_dims=(8, 4, 4), element_strides=(1, 1, 1),
          interleave="32B", swizzle="32B", global_address=0x10010), "globalAddress must be 32-byte aligned"),
    (dict(global_dims=(0, 32)), "globalDim must be non-zero and at most 2\\^32"),
    (dict(global_dims=(64, (1 << 32) + 1)), "globalDim must be non-zero and at most 2\\^32"),
    (dict(global_strides=(264,)), "globalStrides must be a multiple of 16 bytes"),
    (dict(global_strides=(1 << 40,)), "globalStrides must be less than 2\\^40"),
    (dict(global_strides=(256, 256)), "globalStrides must have tensorRank-1 entries"),
    (dict(box_dims=(32, 0)), "boxDim must be non-zero and at most 256"),
    (dict(box_dims=(32, 257)), "boxDim must be non-zero and at most 256"),
    (dict(box_dims=(6, 16)), "boxDim\\[0\\] \\* elementSize must be a multiple of 16 bytes"),
    (dict(element_strides=(1, 0)), "elementStrides must be non-zero and at most 8"),
    (dict(element_strides=(9, 1)), "elementStrides must be non-zero and at most 8"),
    (dict(swizzle="32B"), "with swizzle 32B the inner box dimension .* at most the swizzle span of 32 bytes"),
    (dict(swizzle="128B", box_dims=(64, 4)), "with swizzle 128B .* at most the swizzle span of 128 bytes"),
    (dict(rank=3, global_dims=(64, 4, 4), global_strides=(256, 1024), box_dims=(8, 4, 4), element_strides=(1, 1, 1),
          interleave="32B", swizzle="64B"), "INTERLEAVE_32B requires SWIZZLE_32B"),
    (dict(dtype="INT32", oob_fill="nan"), "oobFill NAN_REQUEST_ZERO_FMA needs a floating-point"),
    (dict(dtype="16U4_ALIGN16B", global_dims=(100, 32), box_dims=(128, 4)), "globalDim\\[0\\] must be a multiple of 128"),
    (dict(dtype="16U4_ALIGN16B", global_dims=(256, 32), box_dims=(64, 4)), "boxDim\\[0\\] must be 128"),
    (dict(dtype="16U4_ALIGN8B", global_dims=(255, 32), box_dims=(32, 4)), "globalDim\\[0\\] must be even"),
    (dict(dtype="16U4_ALIGN8B", box_dims=(32, 4), swizzle="64B"), "packed type 16U4_ALIGN8B allows only"),
    (dict(swizzle="256B"), "swizzle must be one of"),
    (dict(oob_fill="inf"), "oobFill must be 'zero'"),
    (dict(l2_promotion="512B"), "l2Promotion must be one of"),
]


@pytest.mark.parametrize("kw, rule", RULES)
def test_validity_rules(kw, rule):
    with pytest.raises(LaunchError, match="invalid tensor map: " + rule):
        tmap(**kw).validate()


def test_valid_maps_pass():
    tmap().validate()
    tmap(swizzle="128B", box_dims=(32, 16)).validate()               # 128-byte rows: exactly the span
    tmap(dtype="FLOAT16", swizzle="64B", box_dims=(32, 8)).validate()
    tmap(rank=3, global_dims=(64, 4, 4), global_strides=(256, 1024), box_dims=(8, 4, 4), element_strides=(1, 1, 1),
         interleave="32B", swizzle="32B", global_address=0x10020).validate()


def test_encode_for_sim_resolves_arrays():
    gmem = GlobalMemory()
    a = np.zeros((32, 16), dtype=np.float32)          # owns its memory: views of it have .base == a
    a[:] = np.arange(32 * 16).reshape(32, 16)
    alloc = gmem.allocate(a.nbytes, "arg0")
    alloc.upload(a)
    by_id = {id(a): alloc}
    # the argument itself
    t = TensorMap.decode(TensorMap.tiled(a, (8, 8)).encode_for_sim(gmem, by_id, "p"))
    assert t.global_address == alloc.base
    # a view into the argument: address offset, strides of the parent
    v = a[4:, 8:]
    t = TensorMap.decode(TensorMap.tiled(v, (8, 8)).encode_for_sim(gmem, by_id, "p"))
    assert t.global_address == alloc.base + 4 * 64 + 8 * 4 and t.global_strides == (64,)
    assert gmem.allocation_of(t.global_address) is alloc
    assert t.global_dims == (8, 28)
    # an array that is not an argument gets its own buffer
    b = np.arange(64, dtype=np.int32).reshape(4, 16)
    tm = TensorMap.tiled(b, (2, 4))
    t = TensorMap.decode(tm.encode_for_sim(gmem, by_id, "p"))
    own = gmem.allocation_of(t.global_address)
    assert own is tm.sim_allocation and np.array_equal(own.data.view(np.int32), b.reshape(-1))


def test_encode_for_sim_names_the_parameter():
    gmem = GlobalMemory()
    t = tmap(global_address=0x10004)
    with pytest.raises(LaunchError, match="p7: invalid tensor map: globalAddress must be 16-byte aligned"):
        t.encode_for_sim(gmem, {}, "p7")


# ------------------------------------------------------------------------------------- tensormap.replace
def test_replace_field_builds_a_map_from_zeros():
    from tcsim.isa.tensormap import replace_field
    raw = bytes(128)
    for field, val, o in [("global_address", 0x2000, None), ("rank", 2, None), ("box_dim", 32, 0), ("box_dim", 4, 1),
                          ("box_dim", 2, 2), ("global_dim", 100, 0), ("global_dim", 7, 1), ("global_dim", 3, 2),
                          ("global_stride", 512, 0), ("global_stride", 4096, 1), ("element_stride", 2, 1),
                          ("elemtype", 6, None), ("swizzle_mode", 2, None)]:
        raw = replace_field(raw, field, val, o)
    t = TensorMap.decode(raw)
    assert (t.dtype, t.rank, t.global_address) == ("FLOAT16", 3, 0x2000)
    assert t.box_dims == (32, 4, 2) and t.global_dims == (100, 7, 3) and t.global_strides == (512, 4096)
    assert t.element_strides == (1, 2, 1) and t.swizzle == "64B"
    assert struct.unpack_from("<I", raw, LAYOUT["magic"][0])[0] == MAGIC
    # an existing map: only the named field changes
    again = replace_field(raw, "global_dim", 8, 1)
    assert TensorMap.decode(again).global_dims == (100, 8, 3)
    assert bytes(again[:8]) == bytes(raw[:8]) and again[16:] == raw[16:]


@pytest.mark.parametrize("code, name", [(0, "UINT8"), (5, "INT64"), (6, "FLOAT16"), (7, "FLOAT32"),
                                        (8, "FLOAT32_FTZ"), (9, "FLOAT64"), (10, "BFLOAT16"), (11, "TFLOAT32"),
                                        (12, "TFLOAT32_FTZ"), (13, "16U4_ALIGN8B"), (14, "16U4_ALIGN16B"),
                                        (15, "16U6_ALIGN16B")])
def test_replace_elemtype_uses_ptx_numbering(code, name):
    from tcsim.isa.tensormap import replace_field
    raw = replace_field(bytes(128), "elemtype", code)
    assert raw[LAYOUT["dtype"][0]] == DATA_TYPES[name].enum


def test_replace_swizzle_mode_and_atomicity_compose():
    from tcsim.isa.errors import UnsupportedError
    from tcsim.isa.tensormap import replace_field
    off = LAYOUT["swizzle"][0]
    raw = replace_field(bytes(128), "swizzle_mode", 3)
    assert raw[off] == 3
    for atom, enum in ((1, 4), (2, 5), (3, 6), (0, 3)):
        assert replace_field(raw, "swizzle_atomicity", atom)[off] == enum
    atom64 = replace_field(raw, "swizzle_atomicity", 3)
    assert replace_field(atom64, "swizzle_mode", 3)[off] == 6            # keeps the atomicity
    with pytest.raises(UnsupportedError, match="swizzle span 64B with atomicity 64B"):
        replace_field(atom64, "swizzle_mode", 2)
    assert replace_field(replace_field(bytes(128), "fill_mode", 1), "interleave_layout", 2)[76:80] == \
        bytes([2, 0, 0, 1])


@pytest.mark.parametrize("field, val, o, msg", [
    ("rank", 5, None, "not a rank code"), ("box_dim", 0, 0, "box size 0"), ("box_dim", 257, 4, "box size 257"),
    ("global_dim", 0, 1, "global size 0"), ("element_stride", 0, 0, "element stride 0"),
    ("elemtype", 16, None, "not a valid .elemtype code"), ("box_dim", 1, None, "ord None is out of range"),
    ("box_dim", 1, 5, "ord 5 is out of range"),
])
def test_replace_field_value_rules(field, val, o, msg):
    from tcsim.isa.errors import VerifyError
    from tcsim.isa.tensormap import replace_field
    with pytest.raises(VerifyError, match=msg):
        replace_field(bytes(128), field, val, o)
