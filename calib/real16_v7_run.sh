#!/bin/bash
# Issue 16's acceptance campaign (helper real16): generator version 7 (wgmma programs, no mov copies between the
# pools and wgmma registers -- calib/fuzz/generator.py V7_AVOIDS), >= 10^4 programs on one H100, in ONE device call
# that ends by itself within 480 s wall:
#
#   CAMPAIGN_DEADLINE=430 bash calib/real16_v7_run.sh "$OUT"
#
# numpy, simpy, ml_dtypes, cuda-python, ptxas/cuobjdump there; tcsim is installed from this checkout
# (calib/device_setup.sh).  `python -m calib.fuzz.record gpu` from seed 700000: every program on the GPU (4 GPU
# threads, 32 programs per module) and the simulator (CAMPAIGN_JOBS processes), the SHA-256 of every GPU output,
# the whole output of the first 150 programs where the simulator differs; per-program limits (simulator 30 s of
# work, GPU 15 s, a module's JIT 60 s), the deadline CAMPAIGN_DEADLINE honoured while waiting, a checkpoint every
# 30 s (a call killed from outside still leaves the chunks done so far in rec.npz).
# Leaves in $OUT/r16v7/ (2 files, < 16 MiB each): rec.npz (the record), log.txt (everything printed, line by line).
# Environment: CAMPAIGN_SEED (700000), CAMPAIGN_COUNT (14000: about what fits; the deadline ends it otherwise),
# CAMPAIGN_DEADLINE (s, 430), CAMPAIGN_JOBS (13), CAMPAIGN_DRY=1 (no GPU here: 8 programs, simulator only -- the
# script's own check; the record then holds GPU errors only).
DEVICE_SUB=r16v7 source "$(dirname "$0")/device_setup.sh"
exec > >(tee -a "$D/log.txt") 2>&1
date -u
git log -1 --format='commit %H' 2>/dev/null
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv 2>&1
ptxas --version 2>&1 | tail -1
DEADLINE=${CAMPAIGN_DEADLINE:-430}
COUNT=${CAMPAIGN_COUNT:-14000}
if [ -n "${CAMPAIGN_DRY:-}" ]; then DEADLINE=120; COUNT=8; fi
echo "=== campaign: generator $(python3 -c "from calib.fuzz.generator import VERSION; print(VERSION)"), seeds ${CAMPAIGN_SEED:-700000}.., deadline ${DEADLINE} s"
timeout $((DEADLINE + 35)) python3 -m calib.fuzz.record gpu --seed "${CAMPAIGN_SEED:-700000}" --count "$COUNT" \
  --out "$D/rec.npz" --gpu-workers 4 --jobs "${CAMPAIGN_JOBS:-13}" --batch 32 --time-limit "$DEADLINE" \
  --keep-limit 150 --gpu-timeout 15 --jit-timeout 60 --sim-seconds 30
echo "campaign: exit code $?"
rm -f "$D"/*.tmp.npz
if [ -n "${CAMPAIGN_DRY:-}" ]; then
  echo "=== dry: the simulator side of the first 3 programs (calib.fuzz.runner.SimPool, as the record runs it)"
  timeout 300 python3 - <<'PY'
import time
from calib.fuzz.generator import VERSION, generate
from calib.fuzz.runner import SimPool
t = time.time()
progs = [generate(s) for s in range(700000, 700003)]
pool = SimPool(2)
for p, (o, _) in zip(progs, pool.map_async([("prog", p, (None,), 30.0) for p in progs]).get(timeout=280)):
    print(f"v{VERSION} seed {p.seed}: {p.nthreads} threads, nacc {p.nacc}, simulator "
          f"{'ok, ' + str(len(o.output)) + ' output bytes' if o.ok else o.error}")
pool.close()
print(f"dry: {time.time() - t:.0f} s")
PY
fi
[ -e "$D/rec.npz" ] && python3 - "$D/rec.npz" <<'PY'
import sys
from calib.fuzz.record import load
z, m = load(sys.argv[1])
print(f"record: generator {m.get('generator')}, {m['count']} programs from seed {m['seed']} on {m.get('device')}, "
      f"{len(m['sim_agrees'])} agree, {len(m['errors'])} GPU errors, {len(m['sim_errors'])} simulator errors, "
      f"{len(z.files)} kept whole, partial={m.get('partial')}, stopped={m.get('stopped')}")
PY
date -u
ls -la "$D"
