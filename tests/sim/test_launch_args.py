"""Launch arguments (sim/launch.py, isa/tensormap.py): signed values for unsigned parameters, structs holding
tensor maps and pointers at given offsets, tensor maps over strided views that write through to the caller's
array, torch CPU tensors wherever numpy arrays go (issue 16 item 3)."""
from __future__ import annotations

import numpy as np
import pytest

from calib import calls_golden
from tcsim.isa.errors import LaunchError
from tcsim.isa.tensormap import TensorMap
from tcsim.launch import Launch, Pointer, Struct, run_launch

HEAD = ".version 8.7\n.target sm_90a\n.address_size 64\n"


# ------------------------------------------------------------------------------------------------ signed scalars


def _store_param(ptype: str, store: str) -> str:
    return HEAD + f""".visible .entry k(.param .u64 out, .param .{ptype} v)
{{
  .reg .b64 %rd<4>; .reg .b32 %r<4>; .reg .b16 %h<2>;
  ld.param.u64 %rd1, [out];
  {store}
  ret;
}}
"""


@pytest.mark.parametrize("ptype, nbits, value", [("u32", 32, -16), ("u32", 32, -2 ** 31), ("b32", 32, -1),
                                                 ("u16", 16, -300), ("u64", 64, -(2 ** 63)), ("s32", 32, 2 ** 32 - 1),
                                                 ("u32", 32, 2 ** 32 - 1)])
def test_integer_argument_is_written_as_its_twos_complement_pattern(ptype, nbits, value):
    """Triton declares i32 parameters .u32 and passes -16: the CUDA launcher copies the 32-bit pattern."""
    if nbits == 16:
        store = "ld.param.u16 %h1, [v];\n  st.global.u16 [%rd1], %h1;"
        out = np.zeros(1, np.uint16)
    elif nbits == 32:
        store = f"ld.param.{ptype} %r1, [v];\n  st.global.b32 [%rd1], %r1;"
        out = np.zeros(1, np.uint32)
    else:
        store = f"ld.param.{ptype} %rd2, [v];\n  st.global.b64 [%rd1], %rd2;"
        out = np.zeros(1, np.uint64)
    r = run_launch(Launch(_store_param(ptype, store), block=1, args=[out, value]))
    assert int(r.outputs[0][0]) == value % (1 << nbits)


@pytest.mark.parametrize("ptype, value", [("u32", -2 ** 31 - 1), ("u32", 2 ** 32), ("s16", 2 ** 16), ("u8", -129)])
def test_integer_argument_out_of_range_is_a_located_error(ptype, value):
    ptx = _store_param(ptype, "")
    with pytest.raises(LaunchError) as ei:
        run_launch(Launch(ptx, block=1, args=[np.zeros(1, np.uint32), value]))
    assert f"argument {value} does not fit parameter v (.{ptype})" in str(ei.value)
    assert ei.value.loc is not None and ei.value.loc.line == 4


# ------------------------------------------------------------------------------------------------ structs

#: ThunderKittens' global layout as a kernel parameter: a 384-byte struct, 64-byte aligned, with a pointer at 0, an
#: int at 8 and the CUtensorMap at 128.  One thread loads box {c0, c1} of ``src`` through the map (TMA) into
#: SMEM, stores it with a TMA tensor store through the *same* map at {c0 + 8, c1}, and writes 2 * the int to the
#: pointer.
GL_KERNEL = calls_golden.GL_KERNEL          # (the kernel the GPU ran for tests/hw/golden_h100/calls_hopper.json)


def _gl_struct(tm, flag, scale=21, **kw):
    return Struct(Pointer(flag), np.int32(scale), tm, offsets=(0, 8, 128), size=384, **kw)


def _expected_after_copy(A, c0, c1, box=(4, 8)):
    want = A.copy()
    rows, cols = box
    want[c1:c1 + rows, c0 + 8:c0 + 8 + cols] = A[c1:c1 + rows, c0:c0 + cols]
    return want


def test_struct_with_tensor_map_and_pointer_at_offsets():
    A = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)
    before = A.copy()
    tm = TensorMap.tiled(A, (4, 8))
    flag = np.zeros(1, np.uint32)
    r = run_launch(Launch(GL_KERNEL, block=1, args=[_gl_struct(tm, flag), 4, 2]))
    assert len(r.outputs[0]) == 1 and np.array_equal(r.outputs[0][0], [42])
    # the map's tensor is not a launch argument: the TMA store writes through to the caller's array
    assert np.array_equal(A, _expected_after_copy(before, 4, 2))


def test_tensor_map_over_a_strided_view_writes_through():
    """A map over every other row of a bigger array (a sliced view) and over an as_strided view: the kernel's
    TMA store lands in the caller's memory, and nothing outside the view changes."""
    big = np.arange(40 * 48, dtype=np.float32).reshape(40, 48)
    before = big.copy()
    view = big[2::2, 8:40]                                  # rows 2, 4, ..., columns 8..39: strides (384, 4)
    assert not view.flags.c_contiguous
    tm = TensorMap.tiled(view, (4, 8))
    flag = np.zeros(1, np.uint32)
    run_launch(Launch(GL_KERNEL, block=1, args=[_gl_struct(tm, flag), 8, 3]))
    want = before.copy()
    want[2::2, 8:40] = _expected_after_copy(before[2::2, 8:40], 8, 3)
    assert np.array_equal(big, want)

    base = np.arange(64 * 64, dtype=np.float32)
    before = base.copy()
    strided = np.lib.stride_tricks.as_strided(base[64:], shape=(12, 32), strides=(5 * 64 * 4, 4))
    tm = TensorMap.tiled(strided, (4, 8))
    run_launch(Launch(GL_KERNEL, block=1, args=[_gl_struct(tm, flag), 0, 5]))
    want = before.copy()
    wview = np.lib.stride_tricks.as_strided(want[64:], shape=(12, 32), strides=(5 * 64 * 4, 4))
    wview[...] = _expected_after_copy(np.lib.stride_tricks.as_strided(before[64:], shape=(12, 32),
                                                                      strides=(5 * 64 * 4, 4)).copy(), 0, 5)
    assert np.array_equal(base, want)


def test_tensor_map_over_a_view_of_a_launch_argument_shares_its_buffer():
    """A map whose tensor is a view into an array argument addresses that argument's device buffer: the result
    holds the store (and the caller's array is left as for any array argument)."""
    A = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)
    tm = TensorMap.tiled(A[4:, :], (4, 8))
    flag = np.zeros(1, np.uint32)
    ptx = GL_KERNEL.replace(".param .u32 c1)", ".param .u32 c1, .param .u64 whole)")
    r = run_launch(Launch(ptx, block=1, args=[_gl_struct(tm, flag), 0, 1, A]))
    want = A.copy()
    want[4:, :] = _expected_after_copy(A[4:, :], 0, 1)
    assert np.array_equal(r.outputs[3], want)


@pytest.mark.parametrize("fields, offsets, size, why", [
    ("tm", (0, 8, 100), 384, "misaligned"),                 # a tensor map needs 64-byte alignment
    ("tm", (0, 4, 128), 384, "overlaps"),                   # the pointer takes bytes 0..7
    ("tm", (0, 130, 128), 384, "misaligned"),
    ("tm", (0, 8, 256), 300, "past the 300-byte struct"),
    ("tm", (0, 128, 128), 384, "overlaps"),
    ("tm", (0, 8, 320), None, "past the 384-byte parameter"),
])
def test_struct_layout_errors_are_located(fields, offsets, size, why):
    A = np.zeros((16, 32), np.float32)
    tm = TensorMap.tiled(A, (4, 8))
    flag = np.zeros(1, np.uint32)
    s = Struct(Pointer(flag), np.int32(1), tm, offsets=offsets, size=size)
    with pytest.raises(LaunchError) as ei:
        run_launch(Launch(GL_KERNEL, block=1, args=[s, 0, 0]))
    assert why in str(ei.value)
    assert ei.value.loc is not None and ei.value.loc.line == 4


def test_struct_fields_in_any_order_at_legal_offsets():
    A = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)
    before = A.copy()
    flag = np.zeros(1, np.uint32)
    s = Struct(TensorMap.tiled(A, (4, 8)), np.int32(3), Pointer(flag), offsets=(128, 8, 0), size=384)
    r = run_launch(Launch(GL_KERNEL, block=1, args=[s, 0, 0]))
    assert np.array_equal(r.outputs[0][0], [6]) and np.array_equal(A, _expected_after_copy(before, 0, 0))


def test_struct_offsets_must_match_fields():
    with pytest.raises(LaunchError, match="3 fields but 2 offsets"):
        Struct(np.int32(1), np.int32(2), np.int32(3), offsets=(0, 4))


# ------------------------------------------------------------------------------------------------ torch

ADD_ONE = HEAD + """.visible .entry k(.param .u64 x, .param .u64 y, .param .u32 n)
{
  .reg .b32 %r<8>; .reg .b64 %rd<8>; .reg .f32 %f<4>; .reg .pred %p<2>;
  ld.param.u64 %rd1, [x];
  ld.param.u64 %rd2, [y];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %tid.x;
  setp.ge.u32 %p1, %r2, %r1;
  @%p1 bra END;
  mul.wide.u32 %rd3, %r2, 4;
  add.u64 %rd4, %rd1, %rd3;
  add.u64 %rd5, %rd2, %rd3;
  ld.global.f32 %f1, [%rd4];
  add.f32 %f2, %f1, 0f3F800000;
  st.global.f32 [%rd5], %f2;
END:
  ret;
}
"""


def test_torch_tensors_are_accepted_and_returned():
    torch = pytest.importorskip("torch")
    x = torch.arange(20, dtype=torch.float32)
    y = torch.zeros(20, dtype=torch.float32)
    r = run_launch(Launch(ADD_ONE, block=32, args=[x, y, 20]))
    assert isinstance(r.outputs[1], torch.Tensor)
    assert torch.equal(r.outputs[1], x + 1)
    r = run_launch(Launch(ADD_ONE, block=32, args=[Pointer(x), Pointer(y), 20]))
    assert isinstance(r.outputs[1], torch.Tensor) and torch.equal(r.outputs[1], x + 1)


def test_torch_tensor_map_writes_through():
    torch = pytest.importorskip("torch")
    A = torch.arange(16 * 32, dtype=torch.float32).reshape(16, 32)
    before = A.numpy().copy()
    tm = TensorMap.tiled(A, (4, 8))
    flag = torch.zeros(1, dtype=torch.int32)
    r = run_launch(Launch(GL_KERNEL, block=1, args=[Struct(Pointer(flag), np.int32(5), tm, offsets=(0, 8, 128),
                                                            size=384), 4, 2]))
    assert isinstance(r.outputs[0][0], torch.Tensor) and int(r.outputs[0][0][0]) == 10
    assert np.array_equal(A.numpy(), _expected_after_copy(before, 4, 2))


def test_torch_tensor_on_another_device_is_a_launch_error():
    torch = pytest.importorskip("torch")
    t = torch.zeros(4, device="meta")
    with pytest.raises(LaunchError, match="on meta"):
        run_launch(Launch(ADD_ONE, block=32, args=[t, t, 4]))
