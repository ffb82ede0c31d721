#!/bin/bash
# One GPU-machine session's worth of hardware truth, from a copy of the repository (tcsim is installed from it:
# calib/device_setup.sh):
#   1. golden outputs of every registered example case   (python -m calib.golden regen -> tests/golden/<case>/)
#   2. the mma.sync numerics campaign                      (python -m calib.probes.mma_probe device)
#   3. the SASS ptxas makes of every probe kernel          (what the hardware actually executes)
# Results go to $OUT (at most 8 files): mma_<pair>.npz for each float pair and misc.tgz holding the golden
# case directories, the integer results, the device metadata, the logs and the SASS listings.
# Extra arguments go to `mma_probe device` (e.g. --cases 20000).
set -uo pipefail
export PYTHONUNBUFFERED=1
: "${OUT:?set OUT to the results folder}"
source "$(dirname "$0")/../device_setup.sh"
W=/tmp/tcsim_hw_truth
rm -rf "$W"; mkdir -p "$W/numerics" "$W/sass"
command -v ptxas >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv > "$W/nvidia_smi.txt" 2>&1
cat "$W/nvidia_smi.txt"

python3 -m calib.golden regen 2>&1 | tee "$W/golden.log"
cp -r tests/golden "$W/golden"

python3 -m calib.probes.mma_probe device --out "$W/numerics" "$@" 2>&1 | tee "$W/numerics.log"

ptxas --version > "$W/sass/ptxas_version.txt" 2>&1
for f in calib/probes/ptx/*.ptx examples/*.ptx; do
    b=$(basename "$f" .ptx)
    if ptxas -arch=sm_90a "$f" -o "$W/sass/$b.cubin" 2>"$W/sass/$b.ptxas_err"; then
        cuobjdump -sass "$W/sass/$b.cubin" > "$W/sass/$b.sass" 2>&1
    fi
    rm -f "$W/sass/$b.cubin"
done

mv "$W"/numerics/mma_m16n8k*.npz "$OUT"/ 2>/dev/null
tar czf "$OUT/misc.tgz" -C "$W" golden numerics sass golden.log numerics.log nvidia_smi.txt
ls -la "$OUT"
