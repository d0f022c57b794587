#!/bin/bash
# tests/bench/simple-evol/venv.sh [VENV]: the benchmark-only venv of the peers
# a user would otherwise run: numba (EoH's jitted GLS in the Python
# evaluator), elkai (LKH-3) and PyVRP (HGS), with numpy, scipy and h5py.
set -eu
VENV=${1:-build/bench-venv-se}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q numpy scipy h5py numba elkai pyvrp
echo "$VENV"
