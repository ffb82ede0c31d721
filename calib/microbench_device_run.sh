#!/bin/bash
# H100 timing golden data in one device call (about 2 minutes): every case of calib/microbench (calibration
# microbenchmarks, several in parallel, each launch in its own child process; then the validation kernels one at
# a time, MB_VAL_RUNS (default 3) launches each), plus the SASS opcode counts of every kernel (ptxas +
# cuobjdump, when present).  MB_BACKEND=sim makes a dry run of the whole script on the simulator (no GPU).
#
#   bash calib/microbench_device_run.sh "$OUT" [--case GLOB ...]   # python deps (numpy, simpy, ml_dtypes,
#                                      # cuda-python) importable (PYTHONPATH); tcsim is installed from this
#                                      # checkout (calib/device_setup.sh)
#
# Leaves $OUT/timing/{meta.json,timings.npz,log.txt,sass.tgz} (sass.tgz: every kernel's SASS listing).
# Afterwards, on any machine:
#   python -m calib.microbench show --gpu <that timing/ folder>
#   python -m calib.microbench install --gpu <that timing/ folder>     # -> tests/golden/timing_h100/
#   python -m calib.microbench install --gpu <that timing/ folder> --merge   # a --case record: add its cases only
#   python -m calib.microbench sim                                      # simulated vs measured
DEVICE_SUB=timing DEVICE_USAGE="[--case GLOB ...]" source "$(dirname "$0")/device_setup.sh"
{
  device_header
  python3 -m calib.microbench record --out "$D" --jobs "${MB_JOBS:-8}" --val-runs "${MB_VAL_RUNS:-3}" \
      --backend "${MB_BACKEND:-gpu}" --sass-dir /tmp/mb_sass "$@"
  rc=$?
  [ -d /tmp/mb_sass ] && tar czf "$D/sass.tgz" -C /tmp mb_sass
  echo "record: exit code $rc"
  nvidia-smi --query-gpu=clocks.sm,temperature.gpu --format=csv 2>&1
  date -u
  exit $rc
} 2>&1 | tee "$D/log.txt"
rc=${PIPESTATUS[0]}
ls -la "$D"
exit $rc
