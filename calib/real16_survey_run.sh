#!/bin/bash
# Issue 16 follow-up (helper real16): the explanation survey of the generator-v7 H100 campaign
# (tests/golden/fuzz_campaign/h100_v7_seeds_700000_713999.npz, recorded by calib/real16_v7_run.sh) and, with the
# time left, of the v6 one under the new explanation wgmma-rs-neg-a-int -- CPU only (no GPU use), on the device
# machine's 16 cores because this workplace's 2 shared cores would need hours:
#
#   bash calib/real16_survey_run.sh "$OUT"          # ends by itself within ~300 s
#
# `python -m calib.fuzz.survey` re-simulates every recorded disagreement and tries the verified explanations
# (calib/fuzz/explain.py) within a CPU-time cap per program, one JSON line per program (resumable).
# Leaves in $OUT/r16s/ (3 files): v7.jsonl, v6.jsonl (as far as it got), log.txt.
# Environment: SURVEY_V7_S (wall s for v7, 200), SURVEY_END (wall s after the start when v6 stops, 290),
# SURVEY_JOBS (15).
DEVICE_SUB=r16s source "$(dirname "$0")/device_setup.sh"
exec > >(tee -a "$D/log.txt") 2>&1
START=$(date +%s)
date -u
git log -1 --format='commit %H' 2>/dev/null
nproc
J=${SURVEY_JOBS:-15}
echo "=== survey v7"
timeout "${SURVEY_V7_S:-200}" python3 -m calib.fuzz.survey --out "$D/v7.jsonl" --jobs "$J" --explain-seconds 30 \
  --campaigns h100_v7_seeds_700000_713999
echo "survey v7: exit code $?"
python3 -m calib.fuzz.survey --summary "$D/v7.jsonl"
LEFT=$(( ${SURVEY_END:-290} - ($(date +%s) - START) ))
echo "=== survey v6 (${LEFT} s left)"
if [ "$LEFT" -gt 20 ]; then
  timeout "$LEFT" python3 -m calib.fuzz.survey --out "$D/v6.jsonl" --jobs "$J" --explain-seconds 12 \
    --campaigns h200_v6_seeds_600000_611999
  echo "survey v6: exit code $?"
  python3 -m calib.fuzz.survey --summary "$D/v6.jsonl"
fi
date -u
ls -la "$D"
