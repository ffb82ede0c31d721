# Sourced by every device script of the campaigns (calib/*device_run.sh, calib/*/device_run.sh), which run on a GPU
# machine from a copy of this repository.  It goes to the repository root and makes the simulator importable
# under its installed name, tcsim (sim/ is no module of its own): when `import tcsim` does not already find this
# checkout's sim/, it installs the checkout in editable mode with the python3 on PATH (no dependencies, no
# network: setuptools >= 64 must be there, as on the lent GPU machines; numpy, simpy, ml_dtypes and cuda-python
# must be importable, e.g. through PYTHONPATH).  The campaigns themselves (calib) are imported from the root.
#
# The scripts' common prologue lives here too.  A script whose first argument is the output folder sets
# DEVICE_SUB (and DEVICE_USAGE, the arguments after OUTDIR for its usage line) and sources this file without
# arguments:
#
#     DEVICE_SUB=timing DEVICE_USAGE="[--case GLOB ...]" source "$(dirname "$0")/device_setup.sh"
#
# which sets `set -uo pipefail` and PYTHONUNBUFFERED, takes OUTDIR from $1 (or $OUT; a usage line and exit 2
# without either), shifts it off the script's arguments, makes OUTDIR/DEVICE_SUB and sets D to its absolute path
# -- then goes to the root and installs as above.  Every script also gets ptxas on PATH (when the machine has
# the CUDA toolkit) and two functions: `device_header` (the date and the GPU, for a log) and `device_sass DIR`
# (the SASS of every DIR/fuzz_*.ptx next to it, ptxas + cuobjdump).
if [ -n "${DEVICE_SUB:-}" ]; then
    set -uo pipefail
    export PYTHONUNBUFFERED=1
    OUTDIR=${1:-${OUT:-}}
    if [ -z "$OUTDIR" ]; then echo "usage: bash $0 OUTDIR${DEVICE_USAGE:+ $DEVICE_USAGE}" >&2; exit 2; fi
    [ $# -gt 0 ] && shift
    mkdir -p "$OUTDIR/$DEVICE_SUB" || exit 2
    D=$(cd "$OUTDIR/$DEVICE_SUB" && pwd)
fi
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
if ! python3 - <<'PY' 2>/dev/null
import pathlib, sys, tcsim
sys.exit(pathlib.Path(tcsim.__file__).resolve().parent != pathlib.Path("sim").resolve())
PY
then
    python3 -m pip install -q --no-deps --no-build-isolation -e . >/tmp/tcsim_install.log 2>&1 || {
        echo "device_setup: cannot install tcsim from $(pwd) (pip install -e .; log in /tmp/tcsim_install.log):" >&2
        tail -n 5 /tmp/tcsim_install.log >&2
        exit 2
    }
fi
# simpy is no part of the GPU image: the wheel travels in .whl/ (carried by the device call)
if ! python3 -c "import simpy" 2>/dev/null; then
    for w in .whl/simpy-*.whl; do [ -e "$w" ] && python3 -m pip install -q --no-deps "$w" >/dev/null 2>&1; done
    python3 -c "import simpy" 2>/dev/null || echo "device_setup: simpy is not importable (carry .whl/ with its wheel)" >&2
fi
command -v ptxas >/dev/null || { [ -x /usr/local/cuda/bin/ptxas ] && export PATH=/usr/local/cuda/bin:$PATH; }

device_header() {
    date -u
    nvidia-smi --query-gpu=name,driver_version,compute_cap,clocks.sm,clocks.max.sm --format=csv 2>&1
}

device_sass() {
    local f
    for f in "$1"/fuzz_*.ptx; do
        [ -e "$f" ] || continue
        ptxas -arch=sm_90a "$f" -o "${f%.ptx}.cubin" 2>"${f%.ptx}.ptxas_err" && cuobjdump -sass "${f%.ptx}.cubin" \
            > "${f%.ptx}.sass" 2>&1
        rm -f "${f%.ptx}.cubin"
    done
}
