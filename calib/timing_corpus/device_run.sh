#!/bin/bash
# H100 record of the timing corpus in one device call (about 2-3 minutes): every kernel of calib/timing_corpus,
# TC_REPS (default 5) launches each (one child process per batch of 12 kernels, the launches one after another on
# one stream), the outputs checked, plus the SASS of every instrumented kernel (ptxas + cuobjdump, when present).
# TC_BACKEND=sim makes a dry run of the whole script on the simulator (no GPU).
#
#   bash calib/timing_corpus/device_run.sh "$OUT" [--kernel GLOB ...]
#
# Leaves $OUT/corpus/{meta.json,timings.npz,log.txt,sass.tgz}.  Afterwards, on any machine:
#   python -m calib.timing_corpus install --gpu <that corpus/ folder>     # -> tests/golden/timing_corpus_h100/
#   python -m calib.timing_corpus timing evaluate --jobs 2               # simulate -> evaluation.json
#   python -m calib.timing_corpus timing report --cached
DEVICE_SUB=corpus DEVICE_USAGE="[--kernel GLOB ...]" source "$(dirname "$0")/../device_setup.sh"
{
  device_header
  python3 -m calib.timing_corpus record --out "$D" --reps "${TC_REPS:-5}" --backend "${TC_BACKEND:-gpu}" \
      --jobs "${TC_JOBS:-1}" --sass-dir /tmp/tc_sass "$@"
  rc=$?
  [ -d /tmp/tc_sass ] && tar czf "$D/sass.tgz" -C /tmp tc_sass
  echo "record: exit code $rc"
  nvidia-smi --query-gpu=clocks.sm,temperature.gpu --format=csv 2>&1
  date -u
  exit $rc
} 2>&1 | tee "$D/log.txt"
rc=${PIPESTATUS[0]}
ls -la "$D"
exit $rc
