#!/bin/bash
# H100 outcomes of the protocol-violation probes (calib/probes/protocol_outcomes.py) in one device call (about
# 4 minutes): every probe kernel in its own child process (a hung one is killed after PROTO_TIMEOUT seconds,
# default 12), then each probe that did not hang once more under compute-sanitizer --tool memcheck.
#
#   bash calib/probes/protocol_device_run.sh "$OUT"   # python deps (numpy, simpy, ml_dtypes, cuda-python)
#                                                     # importable (PYTHONPATH); tcsim is installed from this
#                                                     # checkout (calib/device_setup.sh)
#
# Leaves $OUT/protocol/{protocol_outcomes.json,log.txt}.  Afterwards, on any machine:
#   python -m calib.probes.protocol_outcomes install <that folder>/protocol_outcomes.json
#                                                     # -> tests/hw/golden_h100/protocol_outcomes.json
#   python -m calib.probes.protocol_outcomes sim      # tcsim's outcome next to the recorded one
DEVICE_SUB=protocol source "$(dirname "$0")/../device_setup.sh"
command -v compute-sanitizer >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv 2>&1
  compute-sanitizer --version 2>&1 | tail -n 2
  python3 -m calib.probes.protocol_outcomes record --out "$D" --timeout "${PROTO_TIMEOUT:-12}" "$@"
  rc=$?
  echo "record: exit code $rc"
  nvidia-smi --query-gpu=name,utilization.gpu --format=csv 2>&1
  date -u
  exit $rc
} 2>&1 | tee "$D/log.txt"
rc=${PIPESTATUS[0]}
ls -la "$D"
exit $rc
