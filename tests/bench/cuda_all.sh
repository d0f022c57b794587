#!/usr/bin/env bash
# cuda_all.sh BIN_DIR - on a machine with an NVIDIA GPU: the CUDA-vs-CPU unit
# tests, then every GPU benchmark (tests/bench/*/cuda.sh), one after the other.
# ONLY=REGEX runs only the benchmarks whose folder name matches it (e.g.
# ONLY='teacher-limits|sagesched'); a failing part does not stop the rest.
set -uo pipefail
bin=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
status=0
"$bin/nk_unit_tests" --test-case='*CUDA*' || status=1
for bench in "$here"/*/cuda.sh; do
  [ -n "${ONLY:-}" ] && ! [[ "$(basename "$(dirname "$bench")")" =~ ^($ONLY)$ ]] && continue
  echo "== $(basename "$(dirname "$bench")") (GPU)"
  bash "$bench" "$bin" || status=1
done
exit $status
