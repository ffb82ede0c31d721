#!/bin/bash
# Differential-fuzzing work for one GPU-machine call, from a copy of the repository (tcsim is installed from it:
# calib/device_setup.sh); results in $OUT.
#
#   bash calib/fuzz/device_run.sh triage GEN:WORKERS:SEEDS [GEN:WORKERS:SEEDS ...]
#       Minimise recorded findings (python -m calib.fuzz.triage), one triage per argument, all at once: generator
#       version GEN, WORKERS worker processes, SEEDS as triage takes them (A-B, A,B,C or @FILE).
#   bash calib/fuzz/device_run.sh campaign SEED COUNT
#       Record programs SEED..SEED+COUNT-1 of the current generator (python -m calib.fuzz.record gpu, simulator
#       beside it), re-compare the disagreeing ones with the verified explanations, triage what is left.
#
# Both leave $OUT/triage.tgz: per triage the minimised reproducers (fuzz_<seed>_<kind>.{ptx,json}), triage.json,
# and the SASS ptxas makes of each reproducer (<name>.sass; the evidence for a ptxas diagnosis), plus logs;
# `campaign` also leaves $OUT/rec.npz (the whole recording) and $OUT/compare.json.
# Environment: TRIAGE_TIME_PER (s per minimisation, default 25), TRIAGE_DEADLINE (s, default 200),
# RECORD_TIME_LIMIT (s, default 300), COMPARE_TIME (s the compare may take, default 120), CALL_BUDGET (s the whole campaign call may take, default 560: the triage
# gets what record and compare leave).
set -uo pipefail
export PYTHONUNBUFFERED=1
: "${OUT:?set OUT to the results folder}"
source "$(dirname "$0")/../device_setup.sh"
W=/tmp/tcsim_fuzz_device
rm -rf "$W"; mkdir -p "$W"
command -v ptxas >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
TP=${TRIAGE_TIME_PER:-25}
DL=${TRIAGE_DEADLINE:-200}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$W/gpu.txt" 2>&1
ptxas --version | tail -1 >> "$W/gpu.txt"

run_triages() {     # args: GEN:WORKERS:SEEDS ...
    local i=0 pids=()
    for spec in "$@"; do
        i=$((i + 1))
        IFS=: read -r gen workers seeds <<< "$spec"
        python3 -m calib.fuzz.triage --generator "$gen" --workers "$workers" --seeds "$seeds" --out "$W/t$i" \
            --time-per "$TP" --deadline "$DL" > "$W/triage$i.log" 2>&1 &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
    for f in "$W"/t*/fuzz_*.ptx; do
        [ -e "$f" ] || continue
        ( ptxas -arch=sm_90a "$f" -o "${f%.ptx}.cubin" 2>"${f%.ptx}.ptxas_err" \
          && cuobjdump -sass "${f%.ptx}.cubin" > "${f%.ptx}.sass" 2>&1; rm -f "${f%.ptx}.cubin" ) &
    done
    wait
    tail -n 1 "$W"/triage*.log
}

case "${1:-}" in
    triage)
        shift
        run_triages "$@"
        ;;
    campaign)
        seed=$2; count=$3
        python3 -m calib.fuzz.record gpu --seed "$seed" --count "$count" --out "$W/rec.npz" --gpu-workers 4 \
            --jobs 12 --time-limit "${RECORD_TIME_LIMIT:-300}" 2>&1 | tee "$W/record.log" | grep -v "^\[record\] [0-9]* programs, "
        tail -n 1 "$W/record.log"
        cp "$W/rec.npz" "$OUT/rec.npz"
        timeout "${COMPARE_TIME:-120}" python3 -m calib.fuzz.record compare --gpu "$W/rec.npz" --differing --jobs 14 \
            --out "$W/cmp" > "$W/compare.log" 2>&1
        grep -v "^\[compare\]" "$W/compare.log"
        cp "$W/cmp/mismatches.json" "$OUT/compare.json" 2>/dev/null
        DL=$(( ${CALL_BUDGET:-560} - SECONDS - 30 ))        # what is left of the call for minimising
        if [ "$DL" -gt 30 ] && [ -s "$W/cmp/unexplained.txt" ] && [ "$(tr -d ',\n' < "$W/cmp/unexplained.txt")" != "" ]; then
            run_triages "$(python3 -c 'from calib.fuzz.generator import VERSION; print(VERSION)'):14:@$W/cmp/unexplained.txt"
        fi
        ;;
    *)
        echo "usage: bash calib/fuzz/device_run.sh triage GEN:WORKERS:SEEDS ... | campaign SEED COUNT" >&2
        exit 2
        ;;
esac
rm -f "$W/rec.npz"
tar czf "$OUT/triage.tgz" -C "$W" .
ls -la "$OUT"
