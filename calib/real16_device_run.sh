#!/bin/bash
# One H100 device call for the rest of issue 16 (helper real16), about 3 minutes:
#
#   bash calib/real16_device_run.sh "$OUT"     # numpy, simpy, ml_dtypes, cuda-python, CuPy and nvcc there;
#                                              # tcsim is installed from this checkout (calib/device_setup.sh)
#
# Leaves in $OUT/r16/ (7 files):
#   trig_tables.npz, trig_log.txt   MUFU.SIN / MUFU.COS over every fraction of a revolution (calib/approx/trig_record.py)
#   wgmma_sparse.npz, wgmma_sparse.json   every sparse wgmma type combination (calib/probes/wgmma_sparse.py)
#   calls_hopper.json               calib.calls_golden, every case (device calls, printf, assert, struct args, and the
#                                   new frame_addresses case: .local frame addresses of device functions)
#   frontend.tar                    the GPU side of `tcsim diff` of the front-end launch files (tests/fixtures/frontend)
#   log.txt                         everything printed, the SASS of the frame-address kernel, the diff reports
# Afterwards, on any machine (commands in tests/golden/README.md and calib/approx/README.md).
set -uo pipefail
export PYTHONUNBUFFERED=1
OUTDIR=${1:-${OUT:-}}
if [ -z "$OUTDIR" ]; then echo "usage: bash calib/real16_device_run.sh OUTDIR" >&2; exit 2; fi
mkdir -p "$OUTDIR/r16" || exit 2
D=$(cd "$OUTDIR/r16" && pwd)
source "$(dirname "$0")/device_setup.sh"
command -v ptxas >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
W=/tmp/tcsim_r16
rm -rf "$W"; mkdir -p "$W/frontend"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv 2>&1
  # the front-end diffs run beside the rest (each its own process; the simulator side is the slow part)
  for f in desc_matmul inplace cute_tma3; do
    python3 -m tcsim.cli diff "tests/fixtures/frontend/launch_frontend_$f.py" --against gpu --ring 512 \
      --save "$W/frontend/frontend_$f.npz" >"$W/diff_$f.txt" 2>&1 &
  done
  ( python3 -m calib.calls_golden --out "$D/calls_hopper.json"; echo "calls: exit code $?" ) >"$W/calls.txt" 2>&1 &
  echo "=== sparse wgmma"; python3 -m calib.probes.wgmma_sparse device --out "$D" --workers 6
  echo "sparse: exit code $?"
  echo "=== trig tables"; python3 calib/approx/trig_record.py --out "$D"
  echo "trig: exit code $?"
  wait
  echo "=== calls golden"; cat "$W/calls.txt"
  for f in "$W"/diff_*.txt; do echo "=== $f"; cat "$f"; done
  echo "=== frame_addresses SASS"
  ptxas -arch=sm_90a -v tests/fixtures/nvcc/frame_addresses.sm_90a.ptx -o "$W/frames.cubin" 2>&1
  cuobjdump -sass "$W/frames.cubin" | grep -v '^\s*/\*[0-9a-f]*\*/\s*$' | head -700
  date -u
} 2>&1 | tee "$D/log.txt"
tar -cf "$D/frontend.tar" -C "$W/frontend" .
ls -la "$D"
