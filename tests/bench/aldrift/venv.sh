#!/usr/bin/env bash
# venv.sh [DIR] - the benchmark-only Python environment of aldrift's peers,
# from PyPI (tests never use it): pycma (CMA-ES, BIPOP restarts) and
# Nevergrad (NGOpt; numpy < 2: its metamodel calls float() on a 1-element
# array, an error under numpy 2). DIR defaults to build/bench-venv-aldrift; a finished one
# is reused. Prints the interpreter's path on its last line.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
dir=${1:-$root/build/bench-venv-aldrift}
if [ ! -f "$dir/.complete" ]; then
  rm -rf "$dir"
  /usr/bin/python3 -m venv "$dir"
  "$dir/bin/pip" install -q --upgrade pip >&2
  "$dir/bin/pip" install -q "numpy<2" h5py "cma==4.*" "nevergrad==1.0.*" >&2
  touch "$dir/.complete"
fi
echo "$dir/bin/python"
