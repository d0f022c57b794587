#!/usr/bin/env bash
# venv.sh [DIR] - shred-unlearn's benchmark-only Python environment (PyPI,
# never used by tests): PyTorch (its x86 wheels use MKL/oneDNN: the fair eager
# peer; Debian's python3-torch links the generic BLAS), numpy, h5py. nk-lm's
# fuller venv (tests/bench/nk-lm/venv.sh) is used instead when it exists.
# Prints the interpreter's path on its last line.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
if [ -f "$root/build/bench-venv/.complete" ]; then echo "$root/build/bench-venv/bin/python"; exit 0; fi
dir=${1:-$root/build/bench-venv-torch}
if [ ! -f "$dir/.complete" ]; then
  rm -rf "$dir"
  /usr/bin/python3 -m venv "$dir"
  "$dir/bin/pip" install -q --upgrade pip >&2
  "$dir/bin/pip" install -q "numpy<2.5" h5py "torch==2.15.*" >&2 ||
    "$dir/bin/pip" install -q "numpy<2.5" h5py torch >&2
  touch "$dir/.complete"
fi
echo "$dir/bin/python"
