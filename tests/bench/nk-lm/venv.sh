#!/usr/bin/env bash
# venv.sh [DIR] - the benchmark-only Python environment of nk-lm's peers,
# from PyPI (tests never use it): PyTorch (its x86 wheels use MKL/oneDNN, the
# fair eager-PyTorch peer; Debian's python3-torch links the generic BLAS),
# transformers and safetensors (the Hugging Face round trip and decoding
# peer), gguf and llama-cpp-python (llama.cpp, built from source by pip: the
# GGUF peer). DIR defaults to build/bench-venv; a finished one is reused.
# Prints the interpreter's path on its last line.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
dir=${1:-$root/build/bench-venv}
if [ ! -f "$dir/.complete" ]; then
  rm -rf "$dir"
  /usr/bin/python3 -m venv "$dir"
  "$dir/bin/pip" install -q --upgrade pip >&2
  "$dir/bin/pip" install -q "numpy<2.5" h5py "torch==2.15.*" "transformers==5.23.*" "safetensors==0.8.*" \
    "gguf==0.19.*" >&2
  # llama.cpp for this CPU (AVX2/FMA where it has them), two build jobs.
  CMAKE_BUILD_PARALLEL_LEVEL=${JOBS:-2} CMAKE_ARGS="-DGGML_NATIVE=ON -DLLAMA_CURL=OFF" \
    "$dir/bin/pip" install -q --no-cache-dir "llama-cpp-python==0.3.*" >&2
  touch "$dir/.complete"
fi
echo "$dir/bin/python"
