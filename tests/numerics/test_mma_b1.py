"""tcsim.numerics.tensor_core.mma_b1: single-bit MMA with .popc, against hand-computed popcounts."""
import numpy as np
import pytest

from tcsim.numerics.tensor_core import mma_b1


def test_and_popc_by_hand():
    # row 0: bits 0,1,3 (0b1011); row 1: all 8 bits.  col 0: bits 1,2 (0b0110); col 1: bit 3 only.
    a = np.array([[0b1011], [0xFF]], np.uint8)           # (M=2, K/8=1)
    b = np.array([[0b0110, 0b1000]], np.uint8)           # (K/8=1, N=2)
    c = np.array([[5, 0], [-3, 100]], np.int32)
    # AND popcounts: [[1, 1], [2, 1]]
    assert mma_b1(a, b, c).tolist() == [[6, 1], [-1, 101]]
    # XOR popcounts: 0b1101 -> 3, 0b0011 -> 2, 0b11111001 -> 6, 0b11110111 -> 7
    assert mma_b1(a, b, c, "xor").tolist() == [[8, 2], [3, 107]]


def test_two_bytes_of_k_and_wrap():
    a = np.array([[0xFF, 0x01]], np.uint8)               # 9 bits set over K = 16
    b = np.array([[0x0F], [0x03]], np.uint8)             # bits 0-3 and 8-9
    assert mma_b1(a, b, np.array([[0]], np.int32))[0, 0] == 4 + 1
    top = np.array([[0x7FFFFFFF]], np.uint32)            # int32 max + 5 wraps to int32 min + 4
    assert mma_b1(a, b, top)[0, 0] == -(1 << 31) + 4


def test_rejects_bad_operands():
    with pytest.raises(ValueError, match="uint8"):
        mma_b1(np.zeros((1, 1), np.int32), np.zeros((1, 1), np.uint8), np.zeros((1, 1), np.int32))
    with pytest.raises(ValueError, match="'and' or 'xor'"):
        mma_b1(np.zeros((1, 1), np.uint8), np.zeros((1, 1), np.uint8), np.zeros((1, 1), np.int32), "or")
    with pytest.raises(ValueError, match="shape mismatch"):
        mma_b1(np.zeros((1, 2), np.uint8), np.zeros((1, 1), np.uint8), np.zeros((1, 1), np.int32))
