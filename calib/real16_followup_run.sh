#!/bin/bash
# The follow-up device call of issue 16's helper real16 (2026-11-28, about 2.5 minutes): what the 03:38 call's
# results left open.
#
#   bash calib/real16_followup_run.sh "$OUT"
#
# 1. the frame addresses of an nvcc -G build of the frame fixture (every function a SASS frame of its own):
#    python -m calib.calls_golden --case frame_addresses_debug -> calls_debug.json
# 2. (background) the v6 campaign's 7 CUDA_ERROR_ILLEGAL_INSTRUCTION programs minimised on the GPU while it still
#    refuses them (python -m calib.fuzz.triage --gpu-errors), with their SASS -> illegal.tar
# 3. the RS-form wgmma experiment (calib/fuzz/rs_probe.py) on the 4 kept programs it left unexplained and the 7
#    illegal-instruction programs, now keeping the GPU's output bytes of both variants -> rs_probe2.tar
# Leaves in $OUT/r16d/: calls_debug.json, illegal.tar, rs_probe2.tar, log.txt.
DEVICE_SUB=r16d source "$(dirname "$0")/device_setup.sh"
W=/tmp/tcsim_r16d
rm -rf "$W"; mkdir -p "$W/ill" "$W/rs"
exec > >(tee -a "$D/log.txt") 2>&1
device_header
ILL=602888,603926,604305,605784,611472,611731,611764
( timeout 110 python3 -m calib.fuzz.triage --generator 6 --gpu-errors --workers 7 --time-per 45 --deadline 50 \
    --seeds "$ILL" --out "$W/ill"; echo "triage: exit code $?" ) >"$W/triage.txt" 2>&1 &
P_TRIAGE=$!
echo "=== frame addresses of a debug build (calib.calls_golden --case frame_addresses_debug)"
timeout 60 python3 -m calib.calls_golden --case frame_addresses_debug --out "$D/calls_debug.json"
echo "=== RS-form wgmma experiment, second round (calib/fuzz/rs_probe.py)"
timeout 120 python3 -m calib.fuzz.rs_probe --out "$W/rs" 600245 600269 600132 600203 ${ILL//,/ }
tar -cf "$D/rs_probe2.tar" -C "$W/rs" . 2>/dev/null
# wait for the triage by pid (a bare `wait` would also wait for the tee above, which never ends)
wait "$P_TRIAGE"
echo "=== triage"; cat "$W/triage.txt"
device_sass "$W/ill"
tar -cf "$D/illegal.tar" -C "$W/ill" . 2>/dev/null
date -u
ls -la "$D"
