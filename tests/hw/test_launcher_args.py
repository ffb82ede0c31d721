"""The GPU back end lays out launch arguments as the simulator does (hw/launcher.py ``_DeviceArgs``): signed
scalars as their two's-complement pattern, structs with pointers and a tensor map at given offsets, tensor maps
over strided views written back to the caller's array.  Checked without a GPU against a stand-in driver that keeps
device memory in host bytes."""
from __future__ import annotations

import ctypes
import struct
from types import SimpleNamespace

import numpy as np

import pickle

from tcsim.hw.launcher import _DeviceArgs, _write_spans_back, tensor_map_placements
from tcsim.isa.parser import parse
from tcsim.isa.tensormap import TensorMap
from tcsim.launch import Launch, Pointer, Struct
from tcsim.machine import layout_program


class FakeDriver:
    """cuMemAlloc / cuMemcpy / cuTensorMapEncodeTiled over host memory; the 'encoded' map is the address and the
    strides it was given, so a test can read back what the launcher passed."""

    def __init__(self):
        self.mem = {}
        self.next = 0x10000
        self.encoded = []
        self.CUtensorMapDataType = self.CUtensorMapInterleave = self.CUtensorMapSwizzle = int
        self.CUtensorMapL2promotion = self.CUtensorMapFloatOOBfill = int
        self.cuuint64_t = self.cuuint32_t = int

    def cuMemAlloc(self, n):
        p = self.next
        self.next += (n + 0xFFF) // 0x1000 * 0x1000 + 0x1000
        self.mem[p] = bytearray(n)
        return (0, p)

    def cuMemcpyHtoD(self, ptr, host, n):
        self.mem[ptr][:n] = ctypes.string_at(host, n)
        return (0,)

    def cuMemcpyDtoH(self, host, ptr, n):
        ctypes.memmove(host, bytes(self.mem[ptr][:n]), n)
        return (0,)

    def cuMemFree(self, ptr):
        return (0,)

    def cuTensorMapEncodeTiled(self, dtype, rank, addr, dims, strides, box, estr, inter, swz, l2, oob):
        self.encoded.append((addr, tuple(strides)))
        words = [addr, len(strides)] + list(strides) + [0] * (14 - len(strides))
        return (0, SimpleNamespace(opaque=words))


PTX = """.version 8.7
.target sm_90a
.address_size 64
.visible .entry k(.param .align 64 .b8 gl[384], .param .u32 n, .param .u64 p)
{
  ret;
}
"""


def _place(args):
    """What the child process does, on a pickled copy of the launch (as multiprocessing sends it: views arrive as
    contiguous copies, so the placements are decided in the caller's process)."""
    module = parse(PTX)
    fn = module.kernel()
    lay = layout_program(module, fn)
    image = np.zeros(lay["param_size"], np.uint8)
    d = FakeDriver()
    dev = _DeviceArgs(d)
    launch = Launch(PTX, args=args)
    dev.placements = tensor_map_placements(launch)
    child = pickle.loads(pickle.dumps(launch))
    spec = dev.place(child.args, fn.params, lay["param_symbols"], image)
    return d, dev, spec, image, lay["param_symbols"]


def test_struct_pointer_int_and_tensor_map_at_offsets_and_signed_scalar():
    big = np.arange(40 * 48, dtype=np.float32).reshape(40, 48)
    view = big[2::2, 8:40]
    tm = TensorMap.tiled(view, (4, 8))
    flag = np.zeros(4, np.uint32)
    other = np.arange(8, dtype=np.int64)
    s = Struct(Pointer(flag), np.int32(-7), tm, offsets=(0, 8, 128), size=384)
    d, dev, spec, image, syms = _place([s, -16, other])
    gl = image[syms["gl"].offset:syms["gl"].offset + 384].tobytes()
    flag_ptr = dict(spec)[0][0][0]
    assert struct.unpack_from("<Q", gl, 0)[0] == flag_ptr
    assert struct.unpack_from("<i", gl, 8)[0] == -7
    # the map: the span buffer (not an argument) with the view's real strides (bytes between its rows)
    (addr, strides), = d.encoded
    assert struct.unpack_from("<Q", gl, 128)[0] == addr and strides == (2 * 48 * 4,)
    assert bytes(d.mem[addr][:4]) == view[0, 0].tobytes()
    n_off = syms["n"].offset
    assert image[n_off:n_off + 4].tobytes() == (2 ** 32 - 16).to_bytes(4, "little")
    p_ptr = dict(spec)[2][0]
    assert struct.unpack_from("<Q", image.tobytes(), syms["p"].offset)[0] == p_ptr
    # the kernel writes one element of the view; the span goes back to the caller's array, nothing else changes
    before = big.copy()
    span = bytearray(d.mem[addr])
    struct.pack_into("<f", span, (3 * 2 * 48 + 5) * 4, -1.5)       # view[3, 5] = big[8, 13]
    _write_spans_back(Launch(PTX, args=[s, -16, other]), [bytes(span)])
    want = before.copy()
    want[8, 13] = -1.5
    assert np.array_equal(big, want)


def test_tensor_map_over_a_view_of_an_array_argument_uses_its_buffer():
    A = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)
    tm = TensorMap.tiled(A[4:, :], (4, 8))
    s = Struct(Pointer(np.zeros(1, np.uint32)), np.int32(0), tm, offsets=(0, 8, 128))
    d, dev, spec, image, syms = _place([s, 3, A])
    (addr, strides), = d.encoded
    assert addr == dict(spec)[2][0] + 4 * 32 * 4 and strides == (32 * 4,)
    assert dev.spans == [None]
