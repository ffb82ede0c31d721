#!/bin/bash
# One GPU-machine call: the scalar-instruction probe (calib.probes.alu_probe) with the SASS of every probe kernel
# and of the saved fuzz reproducers, then a differential fuzz campaign.  Run from a copy of the repository (tcsim
# is installed from it: calib/device_setup.sh) with $OUT set (the device tool sets it); arguments: first fuzz seed and program count (default 10000 10000).
# Results: $OUT/alu.tgz (alu_*.npz, alu_meta.json, sass/), $OUT/fuzz.tgz (summary.json, minimised reproducers),
# $OUT/log.txt.
set -uo pipefail
export PYTHONUNBUFFERED=1
: "${OUT:?set OUT to the results folder}"
source "$(dirname "$0")/../device_setup.sh"
SEED=${1:-10000}
COUNT=${2:-10000}
W=/tmp/tcsim_alu
rm -rf "$W"; mkdir -p "$W/alu/sass" "$W/fuzz"
command -v ptxas >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
{
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv
python3 -m calib.probes.alu_probe device --out "$W/alu" --sass "$W/alu/sass"
for f in tests/fuzz_regressions/*.ptx; do
    b=$(basename "$f" .ptx)
    ptxas -arch=sm_90a "$f" -o "$W/$b.cubin" && cuobjdump -sass "$W/$b.cubin" > "$W/alu/sass/fz_$b.sass"
    rm -f "$W/$b.cubin"
done
tar czf "$OUT/alu.tgz" -C "$W" alu
python3 -m calib.fuzz --count "$COUNT" --seed "$SEED" --backend gpu --jobs 12 --gpu-workers 4 --out "$W/fuzz" \
    --time-limit 420
tar czf "$OUT/fuzz.tgz" -C "$W" fuzz
} 2>&1 | tee "$OUT/log.txt"
ls -la "$OUT"
