#!/usr/bin/env bash
# limits.sh [OUT] - this machine's limits for the benchmarks' hot kernels,
# measured at the start of `make bench` (tests/bench/run_all.sh) and by any
# benchmark that finds them missing (limits in lib.sh): the memory bandwidth
# (STREAM's triad, triad.cpp: 3 arrays of 256 MiB, best of 10) and the
# single-precision GEMM rate (Eigen's SGEMM of two 2048 x 2048 matrices,
# sgemm.cpp, best of 5), both on THREADS (2) threads, compiled here with
# -O3 -march=native. Writes OUT (default build/bench/limits.env) as shell
# assignments: TRIAD_GBS, SGEMM_GFLOPS, LIMIT_THREADS, LIMIT_DATE; prints it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=${1:-$root/build/bench/limits.env}
threads=${THREADS:-2}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/limits-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
g++ -O3 -march=native -fopenmp "$here/triad.cpp" -o "$tmp/triad"
g++ -O3 -march=native -fopenmp -I/usr/include/eigen3 "$here/sgemm.cpp" -o "$tmp/sgemm"
triad=$(OMP_NUM_THREADS=$threads "$tmp/triad")
sgemm=$(OMP_NUM_THREADS=$threads "$tmp/sgemm")
mkdir -p "$(dirname "$out")"
printf 'TRIAD_GBS=%s\nSGEMM_GFLOPS=%s\nLIMIT_THREADS=%s\nLIMIT_DATE=%s\n' "$triad" "$sgemm" "$threads" "$(date -u +%Y-%m-%dT%H:%MZ)" > "$out.tmp"
mv "$out.tmp" "$out"
cat "$out"
