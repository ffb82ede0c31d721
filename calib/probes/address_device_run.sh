#!/bin/bash
# H100 record of the address-layout probes (calib/probes/address_probe.py, issue 16 item 4) and the traced
# `tcsim diff` of every sm_90a example, in one device call (about 2 minutes):
#
#   bash calib/probes/address_device_run.sh "$OUT"   # python deps (numpy, simpy, ml_dtypes, cuda-python) importable;
#                                                    # tcsim is installed from this checkout (calib/device_setup.sh)
#
# Leaves $OUT/address/{address_layout.json, traces.tar, log.txt}: the probe record, the GPU side of every example's
# traced run (TracedRun.save, ring 2048: tests/hw/golden_h100/<example>.npz) and the log (tcsim's values next to the
# GPU's, every diff report, the SASS of one probe kernel).  Afterwards, on any machine:
#   python -m calib.probes.address_probe install <that folder>/address_layout.json
#                                   # -> tests/hw/golden_h100/address_layout.json
#   tar -xf <that folder>/traces.tar -C tests/hw/golden_h100      # the example goldens
#   python -m calib.probes.address_probe sim                      # tcsim's values next to the recorded ones
DEVICE_SUB=address source "$(dirname "$0")/../device_setup.sh"
EXAMPLES="cluster_exchange mma_gemm tma_mma_gemm bulk_pipeline"
W=/tmp/tcsim_address
rm -rf "$W"; mkdir -p "$W/traces"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv 2>&1
  # the traced diffs run beside the probe record (each is its own process; the GPU runs are short)
  for ex in $EXAMPLES; do
    python3 -m tcsim.cli diff "examples/$ex.py" --against gpu --ring 2048 --save "$W/traces/$ex.npz" \
      >"$W/diff_$ex.txt" 2>&1 &
  done
  for ex in flag_before_data missing_proxy_fence; do
    python3 -m tcsim.cli diff "examples/bugs/$ex.py" --against gpu --ring 2048 >"$W/diff_bugs_$ex.txt" 2>&1 &
  done
  python3 -m calib.probes.address_probe record --out "$D"
  echo "record: exit code $?"
  python3 -m calib.probes.address_probe sim --golden "$D/address_layout.json" --max 600
  wait
  for f in "$W"/diff_*.txt; do echo "=== $f"; cat "$f"; done
  python3 -m calib.probes.address_probe ptx decl >"$W/decl.ptx"
  ptxas -arch=sm_90a "$W/decl.ptx" -o "$W/decl.cubin" && cuobjdump -sass "$W/decl.cubin" | head -400
  cuobjdump -elf "$W/decl.cubin" | grep -i -A3 "shared\|symtab" | head -80
  date -u
} 2>&1 | tee "$D/log.txt"
tar -cf "$D/traces.tar" -C "$W/traces" .
ls -la "$D"
