#!/usr/bin/env bash
# venv.sh [DIR] - the benchmark venv of nk-lm (tests/bench/nk-lm/venv.sh: PyPI
# torch with MKL) plus SAELens, the peer of sae-buffer (benchmark only; tests
# never use it). Prints the interpreter's path on its last line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
py=$(bash "$here/../nk-lm/venv.sh" "$@" | tail -1)
dir=$(dirname "$(dirname "$py")")
if [ ! -f "$dir/.complete-saelens" ]; then
  "$dir/bin/pip" install -q "sae-lens==6.54.*" "torch==2.15.*" "transformers==5.23.*" >&2
  touch "$dir/.complete-saelens"
fi
echo "$py"
