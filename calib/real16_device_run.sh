#!/bin/bash
# The one H100 device call of issue 16's last session (helper real16): the generator-v6 wgmma fuzz campaign plus
# the remaining golden recordings, ending by itself in about 6 minutes (under 400 s wall):
#
#   bash calib/real16_device_run.sh "$OUT"     # numpy, simpy, ml_dtypes, cuda-python, CuPy and nvcc there;
#                                              # tcsim is installed from this checkout (calib/device_setup.sh)
#
# Beside the campaign, in the background, each under its own `timeout`:
#   sin/cos.approx tables (calib/approx/trig_record.py), the sparse wgmma probe (calib/probes/wgmma_sparse.py),
#   calib.calls_golden (every case: device calls, printf, assert, struct args, frame_addresses), the GPU side of
#   `tcsim diff` of the front-end launch files (calib/frontend_record.py).
# The campaign: python -m calib.fuzz.record gpu, seeds 600000.., with a deadline (it writes what it recorded by
# then; a checkpoint every 30 s), per-program simulator and GPU limits.
#
# Then `python -m calib.fuzz.record compare --differing` with what is left of the call (the verified explanations on
# every disagreement; those not tried by then are marked so and run offline).
# Leaves in $OUT/r16/ (8 files): rec.npz, mismatches.json, trig_tables.npz, wgmma_sparse.npz, wgmma_sparse.json,
# calls_hopper.json, frontend.tar, log.txt (everything printed, line by line, and the SASS of the frame-address
# kernel).
# Environment: CAMPAIGN_SEED (600000), CAMPAIGN_COUNT (12000), CAMPAIGN_DEADLINE (s, 290), CAMPAIGN_JOBS (12),
# CALL_END (s after the start by which the compare ends, 395).
DEVICE_SUB=r16 source "$(dirname "$0")/device_setup.sh"
W=/tmp/tcsim_r16
rm -rf "$W"; mkdir -p "$W/frontend" "$W/trig"
exec > >(tee -a "$D/log.txt") 2>&1
START=$(date +%s)
date -u
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv 2>&1
ptxas --version | tail -1

( timeout 170 python3 calib/approx/trig_record.py --out "$W/trig"; echo "trig: exit code $?" ) >"$W/trig.txt" 2>&1 &
( timeout 170 python3 -m calib.probes.wgmma_sparse device --out "$D" --workers 3; echo "sparse: exit code $?" ) \
  >"$W/sparse.txt" 2>&1 &
( timeout 170 python3 -m calib.calls_golden --out "$D/calls_hopper.json"; echo "calls: exit code $?" ) \
  >"$W/calls.txt" 2>&1 &
( timeout 170 python3 -m calib.frontend_record --out "$W/frontend"; echo "frontend: exit code $?" ) \
  >"$W/frontend.txt" 2>&1 &

echo "=== campaign"
timeout $((${CAMPAIGN_DEADLINE:-290} + 40)) python3 -m calib.fuzz.record gpu --seed "${CAMPAIGN_SEED:-600000}" \
  --count "${CAMPAIGN_COUNT:-12000}" --out "$D/rec.npz" --gpu-workers 4 --jobs "${CAMPAIGN_JOBS:-12}" --batch 32 \
  --time-limit "${CAMPAIGN_DEADLINE:-290}" --keep-limit 150 --gpu-timeout 15 --jit-timeout 60 --sim-seconds 30
echo "campaign: exit code $?"
# the verified explanations on every disagreement, with what is left of the call (ends by ~395 s)
LEFT=$(( ${CALL_END:-395} - ($(date +%s) - START) ))
echo "=== compare (${LEFT} s left)"
if [ "$LEFT" -gt 30 ]; then
  timeout "$LEFT" python3 -m calib.fuzz.record compare --gpu "$D/rec.npz" --differing --jobs 15 \
    --time-limit $((LEFT - 15)) --out "$W/cmp"
  echo "compare: exit code $?"
  cp "$W/cmp/mismatches.json" "$D/" 2>/dev/null
fi
wait
for f in trig sparse calls frontend; do echo "=== $f"; cat "$W/$f.txt"; done
cat "$W/trig/trig_log.txt" 2>/dev/null
cp "$W/trig/trig_tables.npz" "$D/" 2>/dev/null
tar -cf "$D/frontend.tar" -C "$W/frontend" .
echo "=== frame_addresses SASS"
ptxas -arch=sm_90a -v tests/fixtures/nvcc/frame_addresses.sm_90a.ptx -o "$W/frames.cubin" 2>&1
cuobjdump -sass "$W/frames.cubin" | grep -v '^\s*/\*[0-9a-f]*\*/\s*$' | head -600
rm -f "$D"/*.tmp.npz
date -u
ls -la "$D"
