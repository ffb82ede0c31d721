#!/bin/bash
# One GPU-machine call for the wgmma numerics record (tests/golden/wgmma_numerics, README there): the random
# campaigns of every wgmma type combination and the targeted vectors, each compared with the model on the spot.
# Run from a copy of the repository (tcsim is installed from it: calib/device_setup.sh) with $OUT set (the device
# tool sets it).  Results: $OUT/wgmma/{meta.json, wgmma_numerics.npz, targeted.npz, targeted_meta.json},
# $OUT/log.txt.  Then, here: python -m calib.probes.wgmma_probe install --gpu <that wgmma/ folder>
set -uo pipefail
export PYTHONUNBUFFERED=1
: "${OUT:?set OUT to the results folder}"
source "$(dirname "$0")/../device_setup.sh"
{
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv
python3 -m calib.probes.wgmma_probe device --out "$OUT/wgmma" --workers 16 --jobs 4
python3 -m calib.probes.wgmma_probe targeted --out "$OUT/wgmma"
} 2>&1 | tee "$OUT/log.txt"
ls -la "$OUT/wgmma"
