#!/bin/bash
# A robustness campaign on the GPU machine's CPU cores (no GPU needed), from a copy of the repository (tcsim is
# installed from it: calib/device_setup.sh); the record in $OUT.
#
#   bash calib/robust/device_run.sh SEED START COUNT JOBS [extra python -m calib.robust options]
#
# leaves $OUT/record_<START>.json (counts per class, the command, one example per finding signature),
# $OUT/findings_<START>.jsonl (every finding, case and outcome) and $OUT/log_<START>.txt.
set -uo pipefail
export PYTHONUNBUFFERED=1
: "${OUT:?set OUT to the results folder}"
source "$(dirname "$0")/../device_setup.sh"
SEED=$1; START=$2; COUNT=$3; JOBS=$4; shift 4
command -v ptxas >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
(nproc; python3 --version; lscpu | grep -m1 "Model name") > "$OUT/machine_$START.txt" 2>&1
python3 -m calib.robust --seed "$SEED" --start "$START" --count "$COUNT" --jobs "$JOBS" --out "$OUT/f_$START" \
    --record "$OUT/record_$START.json" "$@" > "$OUT/log_$START.txt" 2>&1
rc=$?
[ -f "$OUT/f_$START/findings.jsonl" ] && mv "$OUT/f_$START/findings.jsonl" "$OUT/findings_$START.jsonl"
rmdir "$OUT/f_$START" 2>/dev/null
tail -n 30 "$OUT/log_$START.txt"
exit $rc
