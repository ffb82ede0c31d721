#!/bin/bash
# Issue 16 (helper real16): the whole GPU outputs of fuzz-campaign disagreements whose records kept only a hash, for
# the explanation search -- one device call, < 60 s of GPU, ends by itself within ~150 s wall:
#
#   bash calib/real16_rerun_run.sh "$OUT"
#
# `python -m calib.fuzz.record rerun --version V --seeds LIST` runs the listed programs of generator version V on
# the GPU again (32 per module) and keeps every whole output (s<seed>) with its hash and any CUDA error:
# 1. v8: the 349 differing programs of tests/golden/fuzz_campaign/h200_v8_seeds_800000_813695.npz kept as hashes
#    only (calib/real16_rerun_v8_seeds.txt) -> v8.npz
# 2. v7: 711870, 712279 (unexplained in h100_v7_seeds_700000_713999, hashes only) -> v7.npz
# 3. v6: the 9 hash-only unexplained programs of the v6 re-survey (device_results r16s/v6.jsonl) -> v6.npz
# 4. v7: 706387 alone (a GPU TIMEOUT at 15 s in the v7 campaign; ptxas compiles it; the simulator runs it), 20 s
#    limit: does it hang again? -> v7_timeout.npz
# Leaves in $OUT/r16r/ (5 files, < 16 MiB each): v8.npz, v7.npz, v6.npz, v7_timeout.npz, log.txt.
DEVICE_SUB=r16r source "$(dirname "$0")/device_setup.sh"
exec > >(tee -a "$D/log.txt") 2>&1
device_header
git log -1 --format='commit %H' 2>/dev/null
ptxas --version 2>&1 | tail -1
R="python3 -m calib.fuzz.record rerun"
timeout 120 $R --version 8 --seeds @calib/real16_rerun_v8_seeds.txt --out "$D/v8.npz" --jobs 15 --gpu-timeout 15
echo "v8: exit code $?"
timeout 60 $R --version 7 --seeds 711870,712279 --out "$D/v7.npz" --gpu-timeout 15
echo "v7: exit code $?"
timeout 60 $R --version 6 --seeds 602808,603266,604094,606984,608000,608124,608365,609780,611278 --out "$D/v6.npz" \
  --jobs 9 --gpu-timeout 15
echo "v6: exit code $?"
timeout 60 $R --version 7 --seeds 706387 --out "$D/v7_timeout.npz" --gpu-timeout 20
echo "v7 706387: exit code $?"
date -u
ls -la "$D"
