#!/bin/bash
# One GPU-machine call (issue 22, helper oracle22b): the wgmma floor-on-E vectors (bf16/tf32 -> f32;
# calib.probes.wgmma_targeted.pack_floor) and the sm_90a mma.sync fp8 record (m16n8k32, every e4m3/e5m2 pair,
# f32 and f16 accumulators; calib.probes.mma_fp8_probe).  Run from a copy of the repository with $OUT set.
# Results: $OUT/wgmma_floor/{targeted_floor.npz, targeted_floor_meta.json}, $OUT/mma_fp8/{mma_sync_fp8.npz, meta.json}
# (and the log on stdout).  Then, here:
#   python -m calib.probes.wgmma_probe install-floor --gpu <wgmma_floor/>   (-> tests/golden/wgmma_numerics)
#   python -m calib.probes.mma_fp8_probe install --gpu <mma_fp8/>           (-> tests/golden/mma_sync_fp8)
set -uo pipefail
export PYTHONUNBUFFERED=1
: "${OUT:?set OUT to the results folder}"
source "$(dirname "$0")/../device_setup.sh"
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv
rc=0
python3 -m calib.probes.wgmma_probe floor --out "$OUT/wgmma_floor" || rc=1
python3 -m calib.probes.mma_fp8_probe device --out "$OUT/mma_fp8" --workers 8 || rc=1
ls -la "$OUT"/*
exit $rc
