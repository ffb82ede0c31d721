# Sourced by every device script of the campaigns (calib/*device_run.sh, calib/*/device_run.sh), which run on a GPU
# machine from a copy of this repository.  It goes to the repository root and makes the simulator importable
# under its installed name, tcsim (sim/ is no module of its own): when `import tcsim` does not already find this
# checkout's sim/, it installs the checkout in editable mode with the python3 on PATH (no dependencies, no
# network: setuptools >= 64 must be there, as on the lent GPU machines; numpy, simpy, ml_dtypes and cuda-python
# must be importable, e.g. through PYTHONPATH).  The campaigns themselves (calib) are imported from the root.
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
