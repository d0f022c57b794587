#!/usr/bin/env bash
# dllm-sparse on the GPU (needs one; not run by run_all.sh): one step's
# attention, H = 32, d = 128, block 64, L in {4K, 8K, 16K, 32K} (override:
# SIZES=...): dense attention through cuBLAS (FP32 SGEMMs + a softmax kernel,
# scores materialised), our fused kernel dense, and our fused kernel at 90%
# and 95% block sparsity (masks from plan --policy step). Kernel time by CUDA
# events, fastest of REPEAT runs; copies to and from the GPU are not included.
. "$(dirname "$0")/../lib.sh" "$1" dllm-cuda
sizes=${SIZES:-"4096 8192 16384 32768"}
repeat=${REPEAT:-5}
echo "== dllm-sparse on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1): H = 32, d = 128, block 64, best of $repeat"
printf '%-7s | %10s %10s | %10s %8s %8s | %10s %8s %8s\n' L "cuBLAS ms" "fused ms" "90% ms" "vs cuBLAS" "vs fused" "95% ms" "vs cuBLAS" "vs fused"
for n in $sizes; do
  dllm-sparse -q gen --single-step --length "$n" --heads 32 --dims 128 --seed 1 -o "$work/step.h5"
  dllm-sparse -q gen --length "$n" --heads 32 --dims 128 --steps 1 --seed 1 -o "$work/traj.h5"
  dllm-sparse -q --device cuda attend -i "$work/step.h5" --unfused --repeats "$repeat" -o "$work/blas.h5"
  dllm-sparse -q --device cuda attend -i "$work/step.h5" --dense --repeats "$repeat" -o "$work/dense.h5"
  tb=$(attr "$work/blas.h5" seconds); td=$(attr "$work/dense.h5" seconds)
  row=()
  for s in 0.9 0.95; do
    dllm-sparse -q plan -i "$work/traj.h5" --sparsity "$s" -o "$work/plan.h5"
    dllm-sparse -q --device cuda attend -i "$work/step.h5" --mask "$work/plan.h5" --repeats "$repeat" -o "$work/sparse.h5"
    row+=("$(attr "$work/sparse.h5" seconds)")
    rm -f "$work/plan.h5" "$work/sparse.h5"
  done
  awk -v n="$n" -v tb="$tb" -v td="$td" -v a="${row[0]}" -v b="${row[1]}" 'BEGIN {
    printf "%-7d | %10.2f %10.2f | %10.2f %7.2fx %7.2fx | %10.2f %7.2fx %7.2fx\n", n, 1e3*tb, 1e3*td, 1e3*a, tb/a, td/a, 1e3*b, tb/b, td/b }'
  rm -f "$work"/*.h5
done
