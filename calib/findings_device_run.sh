#!/usr/bin/env bash
# Issue 15 on a GPU machine (the device tool runs this from a copy of the repository; OUT is the folder that comes
# back): re-records the zoo's sm_90a twins on the GPU (tests/hw/golden_h100/zoo_sm90.json via tests/zoo/hw_zoo.py),
# runs the whole test suite on 16 workers with every test's duration (the GPU-marked tests run for real), and the
# detector-cost benchmark (benchmarks/bench_detector.py) on a quiet machine.
#     bash calib/findings_device_run.sh "$OUT"
set -u
OUT=${1:?usage: findings_device_run.sh OUTDIR}
mkdir -p "$OUT"
python3 -m pip install -q --no-deps .whl/*.whl >/dev/null 2>&1
source calib/device_setup.sh || exit 2
nvidia-smi -L > "$OUT/device.txt" 2>&1
python3 tests/zoo/hw_zoo.py "$OUT" --jobs 8 --timeout 12 > "$OUT/hw_zoo.log" 2>&1
timeout 400 python3 -m pytest -q -p no:cacheprovider -n 16 --deselect tests/test_packaging.py --durations=0 \
    > "$OUT/suite.log" 2>&1
echo "suite exit $?" >> "$OUT/suite.log"
timeout 150 python3 benchmarks/bench_detector.py > "$OUT/bench_detector.txt" 2>&1
tail -5 "$OUT/suite.log"
tail -15 "$OUT/bench_detector.txt"
