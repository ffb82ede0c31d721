"""Does cuTensorMapEncodeTiled accept a rank-1 map from cuda-python?  Encodes the same rank-1 FLOAT32 map with an
empty globalStrides list (what the rank implies) and with a one-entry list, and prints the driver's answer for each.
Run on a GPU machine: ``python -m calib.probes.tensormap_rank1``.  The first H100 TMA record refused every rank-1 map
with CUDA_ERROR_INVALID_VALUE; hw/launcher.py passes the one-entry list since."""
from __future__ import annotations

import sys


def main() -> int:
    from tcsim.hw.launcher import GpuUnavailable, _driver, probe

    try:
        d = _driver()
        info = probe(d)
    except GpuUnavailable as e:
        print(f"no GPU: {e}")
        return 2
    dev = d.cuDeviceGet(0)[1]
    ctx = d.cuDevicePrimaryCtxRetain(dev)[1]        # the encoder wants a current context
    d.cuCtxSetCurrent(ctx)
    dptr = 0x7F0000000000          # encoding only checks the address's alignment; nothing is launched
    for label, strides in (("globalStrides = []", []), ("globalStrides = [1024]", [1024])):
        res = d.cuTensorMapEncodeTiled(
            d.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 1, int(dptr), [d.cuuint64_t(256)],
            [d.cuuint64_t(x) for x in strides], [d.cuuint32_t(64)], [d.cuuint32_t(1)],
            d.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, d.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE,
            d.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_NONE,
            d.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
        print(f"{info.get('name', 'GPU')}: rank-1 FLOAT32 map, {label}: {res[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
