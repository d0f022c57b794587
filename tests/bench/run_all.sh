#!/usr/bin/env bash
# run_all.sh BIN_DIR - every benchmark under tests/bench/*/run.sh, one after the
# other (never two at once: timings on 2 cores would be meaningless).
set -euo pipefail
bin=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
# The machine's limits first (memory bandwidth, SGEMM rate): each benchmark
# prints its hot kernel's rate against them (lib.sh, limits).
echo "== limits"
bash "$here/limits/limits.sh"
for bench in "$here"/*/run.sh; do
  echo "== $(basename "$(dirname "$bench")")"
  bash "$bench" "$bin"
done
