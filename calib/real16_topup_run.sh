#!/bin/bash
# The second, short device call of issue 16's last session (helper real16), about 2.5 minutes: what the first call
# (calib/real16_device_run.sh, stopped by its outer timeout) did not bring back -- the sin/cos.approx tables, the
# GPU side of `tcsim diff` of the front-end launch files, the SASS of the frame-address kernel -- and a top-up of
# the v6 campaign from the seed where its record ends (its checkpoint held seeds 600000-609951).
#
#   bash calib/real16_topup_run.sh "$OUT"
#
# Then the RS-form wgmma experiment of the campaign's open disagreements (calib/fuzz/rs_probe.py).  With
# TOPUP_COUNT=0 (no top-up) the campaign's illegal-instruction programs are minimised on the GPU instead
# (illegal.tar) and the RS experiment runs beside the two background jobs.
# Leaves in $OUT/r16b/: trig_tables.npz, frontend.tar, rec2.npz (top-up), illegal.tar and calls_debug.json
# (TOPUP_COUNT=0), rs_probe.tar, log.txt.
DEVICE_SUB=r16b source "$(dirname "$0")/device_setup.sh"
W=/tmp/tcsim_r16b
rm -rf "$W"; mkdir -p "$W/frontend" "$W/trig"
exec > >(tee -a "$D/log.txt") 2>&1
device_header
( timeout 120 python3 calib/approx/trig_record.py --out "$W/trig"; echo "trig: exit code $?" ) >"$W/trig.txt" 2>&1 &
P_TRIG=$!
( timeout 120 python3 -m calib.frontend_record --out "$W/frontend"; echo "frontend: exit code $?" ) \
  >"$W/frontend.txt" 2>&1 &
P_FRONT=$!
P_ILL=
if [ "${TOPUP_COUNT:-2048}" -eq 0 ]; then
# the GPU-side experiments run here while the two jobs above run (nothing else is in the foreground then):
# 0. (in the background too) the RS experiment's two variants of the 7 illegal-instruction programs below: does a
#    wait after every commit make the GPU run them?
( timeout 100 python3 -m calib.fuzz.rs_probe --out "$W/rs/ill" 602888 603926 604305 605784 611472 611731 611764; \
  echo "rs_probe (illegal-instruction programs): exit code $?" ) >"$W/rs_ill.txt" 2>&1 &
P_ILL=$!
# 1. the v6 campaign's CUDA_ERROR_ILLEGAL_INSTRUCTION programs (4 of the first call, 3 of the top-up), minimised
#    on the GPU while it still refuses them (python -m calib.fuzz.triage --gpu-errors), with their SASS
echo "=== frame addresses of a debug build (calib.calls_golden --case frame_addresses_debug)"
timeout 60 python3 -m calib.calls_golden --case frame_addresses_debug --out "$D/calls_debug.json"
echo "=== v6 illegal-instruction programs (calib.fuzz.triage --gpu-errors)"
timeout 110 python3 -m calib.fuzz.triage --generator 6 --gpu-errors --workers 7 --time-per 45 --deadline 50 \
  --seeds 602888,603926,604305,605784,611472,611731,611764 --out "$W/ill"
device_sass "$W/ill"
tar -cf "$D/illegal.tar" -C "$W/ill" . 2>/dev/null
# 2. the RS-form wgmma experiment (below after the wait otherwise): its 6 programs as generated and waited
echo "=== RS-form wgmma experiment (calib/fuzz/rs_probe.py)"
timeout 60 python3 -m calib.fuzz.rs_probe --out "$W/rs"
RS_DONE=1
fi
if [ "${TOPUP_COUNT:-2048}" -gt 0 ]; then
echo "=== campaign top-up"
timeout 130 python3 -m calib.fuzz.record gpu --seed "${TOPUP_SEED:-609952}" --count "${TOPUP_COUNT:-2048}" \
  --out "$D/rec2.npz" --gpu-workers 4 --jobs 10 --batch 32 --time-limit "${TOPUP_DEADLINE:-110}" --keep-limit 60 \
  --gpu-timeout 15 --jit-timeout 40 --sim-seconds 30
echo "campaign: exit code $?"
fi
# wait for the two jobs by pid: a bare `wait` also waits for the `tee` of the process substitution above, which
# never ends (it reads this script's own output) -- the call of 2026-11-28 03:07 hung there until its timeout
wait "$P_TRIG" "$P_FRONT" $P_ILL
for f in trig frontend rs_ill; do [ -e "$W/$f.txt" ] && { echo "=== $f"; cat "$W/$f.txt"; }; done
[ -n "${RS_DONE:-}" ] && tar -cf "$D/rs_probe.tar" -C "$W/rs" . 2>/dev/null
cat "$W/trig/trig_log.txt" 2>/dev/null
cp "$W/trig/trig_tables.npz" "$D/" 2>/dev/null
tar -cf "$D/frontend.tar" -C "$W/frontend" .
if [ -z "${RS_DONE:-}" ]; then
echo "=== RS-form wgmma experiment (calib/fuzz/rs_probe.py)"
timeout 60 python3 -m calib.fuzz.rs_probe --out "$W/rs"
tar -cf "$D/rs_probe.tar" -C "$W/rs" . 2>/dev/null
fi
echo "=== frame_addresses SASS"
ptxas -arch=sm_90a -v tests/fixtures/nvcc/frame_addresses.sm_90a.ptx -o "$W/frames.cubin" 2>&1
cuobjdump -sass "$W/frames.cubin" | grep -v '^\s*/\*[0-9a-f]*\*/\s*$' | head -500
rm -f "$D"/*.tmp.npz
date -u
ls -la "$D"
