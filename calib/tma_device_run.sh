#!/bin/bash
# Tile-mode TMA golden data on an H100 in one device call (about 1-2 minutes): every case of calib/tma runs on
# the GPU, each in its own child process (tcsim.hw.launcher.run_on_gpu), TMA_JOBS (default 10) at a time;
# cases not started after TMA_TIME_LIMIT seconds (default 200) are recorded as NOT_RUN, so the files are always
# written.  Then the simulator is compared with the record (the report goes to the log).  TMA_BACKEND=sim makes
# a dry run of the whole script on the simulator (no GPU needed).
#
#   bash calib/tma_device_run.sh "$OUT"    # from anywhere; python deps (numpy, simpy, ml_dtypes, cuda-python)
#                                        # importable (PYTHONPATH); tcsim is installed from this checkout
#                                        # (calib/device_setup.sh)
#
# Leaves 3 files in $OUT/tma/: meta.json, outputs.npz (both < 1 MiB) and log.txt.  Afterwards, on any machine:
#   python -m calib.tma compare --gpu <that tma/ folder>      # per-case agree/differ, decoded
#   python -m calib.tma install --gpu <that tma/ folder>      # -> tests/golden/tma_h100/
DEVICE_SUB=tma source "$(dirname "$0")/device_setup.sh"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv 2>&1
  python3 -c "import sys, numpy; from cuda import bindings; print('python', sys.version.split()[0], 'numpy', \
numpy.__version__, 'cuda-python', getattr(bindings, '__version__', '?'))" 2>&1
  python3 -m calib.tma record --out "$D" --jobs "${TMA_JOBS:-10}" --time-limit "${TMA_TIME_LIMIT:-200}" \
      --backend "${TMA_BACKEND:-gpu}"
  rc=$?
  echo "record: exit code $rc"
  if [ -f "$D/meta.json" ]; then
    echo "==== simulator vs this record (python -m calib.tma compare) ===="
    # numpy's overflow/NaN warnings from the simulated reductions are noise in the log
    timeout 120 python3 -W ignore::RuntimeWarning -m calib.tma compare --gpu "$D" --jobs 8
  fi
  date -u
  exit $rc
} 2>&1 | tee "$D/log.txt"
rc=${PIPESTATUS[0]}
ls -la "$D"
exit $rc
