#!/usr/bin/env bash
# louver-index on the GPU (needs one; not run by run_all.sh): the Louver
# search against the dense exact scan, both on the GPU, same hits.
# N in {32K, 128K, 512K} (override: SIZES=...), d = 128, llm profile,
# T = the top-k oracle with k = 1% of N, M = 1000 queries (QUERIES=...).
# Times per query: the GPU kernels (CUDA events, summed over KV heads,
# divided by M); Louver's per-query tables are built on the CPU and listed
# apart ("prep"); copies are not included.
. "$(dirname "$0")/../lib.sh" "$1" louver-cuda
sizes=${SIZES:-"32768 131072 524288"}
queries=${QUERIES:-1000}
echo "== louver-index on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1): d = 128, top 1%, $queries queries"
printf '%-8s %6s | %8s %9s | %12s %12s %12s %8s\n' N k recall scanned "louver us/q" "prep us/q" "dense us/q" speedup
for n in $sizes; do
  k=$(( n / 100 ))
  louver-index -q gen --n "$n" --d 128 --queries "$queries" --seed 1 -o "$work/kv.h5"
  louver-index -q build -i "$work/kv.h5" -o "$work/index.h5"
  louver-index -q --device cuda query -i "$work/index.h5" --queries "$work/kv.h5" --topk-oracle "$k" --compare-dense -o "$work/hits.h5"
  awk -v n="$n" -v k="$k" -v f="$(attr "$work/hits.h5" scanned_fraction)" -v qi="$(attr "$work/hits.h5" query_seconds)" \
      -v p="$(attr "$work/hits.h5" prepare_seconds)" -v qd="$(attr "$work/hits.h5" dense_seconds)" \
      -v r="$(attr "$work/hits.h5" recall)" -v m="$queries" 'BEGIN {
    printf "%-8d %6d | %8.4f %8.1f%% | %12.2f %12.2f %12.2f %7.2fx\n", n, k, r, 100 * f, 1e6 * qi / m, 1e6 * p / m, 1e6 * qd / m, qd / qi }'
  rm -f "$work"/*.h5
done
