#!/bin/bash
# Both issue-17 campaigns on the GPU machine's CPU cores (no GPU needed), from a copy of the repository (tcsim is
# installed from it: calib/device_setup.sh), within a wall-clock deadline; the records in $OUT.
#
#   bash calib/robust/device_campaigns.sh [DEADLINE_S=540]
#
# * the robustness campaign (python -m calib.robust): 100,000 cases (seed 2029; the mix of the committed record),
#   in chunks of 10,000 so that what finished before the deadline comes back; then 400 run/launch cases under the
#   simulator's own default budget (seed 2030) when time is left;
# * the ptxas agreement campaign (python -m calib.ptxas_agree): 10,000 mutants (seed 19) against this machine's
#   ptxas, stopped at the deadline (a partial record says how many were judged).
# Both run at once, the cores split by their measured cost (the robustness campaign ~0.05 core-s a case, ptxas
# ~0.4 core-s a mutant).  $OUT gets: robust_record.json (the chunks combined: counts per class, commands),
# robust_findings.jsonl (every finding, case and outcome), ptxas_record.json, machine.txt, log.txt.
set -uo pipefail
export PYTHONUNBUFFERED=1
: "${OUT:?set OUT to the results folder}"
DEADLINE=${1:-540}
# (smaller runs for a dry run: RCHUNK cases per robustness chunk, RCHUNKS chunks, PCOUNT ptxas mutants -- 0: no
# ptxas campaign, every core to the robustness campaign --, BCOUNT run/launch cases under the default budget)
RCHUNK=${RCHUNK:-10000}; RCHUNKS=${RCHUNKS:-10}; PCOUNT=${PCOUNT:-10000}; BCOUNT=${BCOUNT:-400}
# RFIRST: the first chunk (a continuation of an earlier run stopped by its deadline: chunk k covers cases
# k*RCHUNK .. (k+1)*RCHUNK-1 of seed 2029)
RFIRST=${RFIRST:-0}
cd "$(dirname "$0")/../.." || exit 2
# simpy is not on the GPU machines' image: the wheel the project carries in .whl/ (when there is one)
python3 -c "import simpy" 2>/dev/null || python3 -m pip install -q --no-deps .whl/*.whl >/dev/null 2>&1
source calib/device_setup.sh
command -v ptxas >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
T0=$(date +%s)
N=$(nproc)
PJ=$(( N * 45 / 100 )); [ "$PJ" -lt 1 ] && PJ=1
[ "$PCOUNT" -eq 0 ] && PJ=0             # PCOUNT=0: the robustness campaign alone, on every core
RJ=$(( N - PJ )); [ "$RJ" -lt 1 ] && RJ=1
TMP=$(mktemp -d)
(echo "nproc $N (robust jobs $RJ, ptxas jobs $PJ, deadline $DEADLINE s)"; python3 --version; ptxas --version | tail -n 2;
 lscpu | grep -m1 "Model name"; git rev-parse HEAD 2>/dev/null) > "$OUT/machine.txt" 2>&1

PTXAS=
if [ "$PCOUNT" -gt 0 ]; then
    python3 -m calib.ptxas_agree --seed 19 --count "$PCOUNT" --jobs "$PJ" --time-limit $(( DEADLINE - 15 )) \
        --out "$OUT/ptxas_record.json" > "$TMP/ptxas_log.txt" 2>&1 &
    PTXAS=$!
fi

MIX='{"check": 0.98, "run": 0.008, "launch": 0.008, "cli": 0.004}'
records=()
for k in $(seq "$RFIRST" $(( RFIRST + RCHUNKS - 1 ))); do
    left=$(( DEADLINE - ($(date +%s) - T0) ))
    # a chunk takes ~10,000 x 0.05 / RJ s; do not start one that cannot end before the deadline
    if [ "$left" -lt $(( RCHUNK / 20 / RJ + 20 )) ]; then echo "robust: deadline, stopped before chunk $k" >> "$TMP/log.txt"; break; fi
    python3 -m calib.robust --seed 2029 --start $(( k * RCHUNK )) --count "$RCHUNK" --jobs "$RJ" --time-limit 60 \
        --mix "$MIX" --out "$TMP/f_$k" --record "$TMP/r_$k.json" >> "$TMP/log.txt" 2>&1
    [ -f "$TMP/r_$k.json" ] && records+=("$TMP/r_$k.json")
    [ -f "$TMP/f_$k/findings.jsonl" ] && cat "$TMP/f_$k/findings.jsonl" >> "$OUT/robust_findings.jsonl"
done
left=$(( DEADLINE - ($(date +%s) - T0) ))
if [ "$left" -gt 150 ] && [ "$BCOUNT" -gt 0 ]; then
    timeout $(( left - 20 )) python3 -m calib.robust --seed 2030 --count "$BCOUNT" --jobs "$RJ" --time-limit 60 --budget 0 \
        --mix '{"run": 0.6, "launch": 0.4}' --out "$TMP/f_budget" --record "$TMP/r_budget.json" >> "$TMP/log.txt" 2>&1
    [ -f "$TMP/r_budget.json" ] && records+=("$TMP/r_budget.json")
    [ -f "$TMP/f_budget/findings.jsonl" ] && cat "$TMP/f_budget/findings.jsonl" >> "$OUT/robust_findings.jsonl"
fi
[ "${#records[@]}" -gt 0 ] && python3 -m calib.robust --combine "${records[@]}" --record "$OUT/robust_record.json" \
    >> "$TMP/log.txt" 2>&1
[ -n "$PTXAS" ] && wait $PTXAS && cat "$TMP/ptxas_log.txt" >> "$TMP/log.txt"
echo "wall $(( $(date +%s) - T0 )) s" >> "$TMP/log.txt"
cp "$TMP/log.txt" "$OUT/log.txt"
tail -n 40 "$OUT/log.txt"
rm -rf "$TMP"
