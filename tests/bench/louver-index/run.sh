#!/usr/bin/env bash
# louver-index benchmark: the index against the dense exact scan in one run.
# N in {8K, 32K, 128K} (override: SIZES="8192 32768"), d = 128, llm profile,
# T = the top-k oracle with k = 1% of N, M = 200 queries, 2 threads; times
# are the fastest of REPEAT (3) rounds, each the index then the dense scan.
# Reported: recall against the dense scan (the tool fails unless identical),
# scanned fraction, time per query of each, build time and 10K appends (the
# next 10K keys of the same cache), set against the dense scans; then
# the Quest baselines: page bounds as an exact filter (quest-threshold) and
# Quest's top-K pages at Louver's scanned fraction (quest-topk, approximate);
# and FAISS IVF (Debian's python3-faiss, faiss_peers.py) at 1x, 2x and 4x
# Louver's scanned fraction (approximate; recall against the exact hits;
# FAISS=0 skips it), FAISS's exact dense peer (IndexFlatIP.range_search with
# each query's T) and FAISS HNSW top-k at Louver's budget (same script).
. "$(dirname "$0")/../lib.sh" "$1" louver-bench
sizes=${SIZES:-"8192 32768 131072"}
queries=${QUERIES:-200}
repeat=${REPEAT:-3}  # timing rounds per query run: the fastest counts (louver-index(1), --repeats)

limits
printf '%-8s %6s | %8s %9s %10s %10s %8s | %9s %12s %9s\n' N k recall scanned "index ms" "dense ms" speedup "build s" "10K append s" "peak MiB"
for n in $sizes; do
  k=$(( n / 100 ))
  louver-index -q gen --n "$n" --d 128 --queries "$queries" --seed 1 -o "$work/kv.h5"
  louver-index -q build -i "$work/kv.h5" -o "$work/index.h5"
  # 10K appends as the cache grows: an index built on the first N keys of a
  # cache of N + 10K takes its next 10K keys (later positions).
  louver-index -q gen --n $(( n + 10000 )) --d 128 --queries 1 --seed 1 -o "$work/grow.h5"
  /usr/bin/python3 "$(dirname "$0")/split_keys.py" "$work/grow.h5" "$n" "$work" 10000 > /dev/null
  louver-index -q build -i "$work/first.h5" -o "$work/grown.h5"
  louver-index -q append -i "$work/grown.h5" --keys "$work/part_000.h5" -o "$work/index2.h5"
  rm -f "$work"/part_*.h5 "$work"/first.h5 "$work/grown.h5"
  /usr/bin/time -f '%M' -o "$work/rss" louver-index -q query -i "$work/index.h5" --queries "$work/kv.h5" --topk-oracle "$k" --repeats "$repeat" --compare-dense -o "$work/hits.h5"
  awk -v n="$n" -v k="$k" -v f="$(attr "$work/hits.h5" scanned_fraction)" -v qi="$(attr "$work/hits.h5" query_seconds)" \
      -v qd="$(attr "$work/hits.h5" dense_seconds)" -v b="$(attr "$work/index.h5" build_seconds)" \
      -v a="$(attr "$work/index2.h5" append_seconds)" -v m="$queries" -v rss="$(cat "$work/rss")" 'BEGIN {
    printf "%-8d %6d | %8s %8.1f%% %10.3f %10.3f %7.2fx | %9.3f %12.3f %9.0f\n", n, k, "1.0", 100 * f, 1e3 * qi / m, 1e3 * qd / m, qd / qi, b, a, rss / 1024
    printf "         build + 10K appends: %.2f s = %.1fx the dense scans of these %d queries, %.3fx those of the 10K decode steps that append the keys\n",
           b + a, (b + a) / qd, m, (b + a) / (1e4 * qd / m) }'
  # Bytes a query must read, against the triad: the dense scan every key row
  # (512 B) and its norm; the index at least its warm codes (4 subspaces x 4 B
  # per key) and the rows of the keys it scores exactly (the norm-test
  # survivors' tail reads come on top).
  awk -v n="$n" -v f="$(attr "$work/hits.h5" scanned_fraction)" -v qi="$(attr "$work/hits.h5" query_seconds)" \
      -v qd="$(attr "$work/hits.h5" dense_seconds)" -v m="$queries" -v bw="$TRIAD_GBS" 'BEGIN {
    bi = 16 * n + f * n * 512; bd = 516 * n; ti = qi / m; td = qd / m
    printf "         bytes a query reads: index >= %.2f MB (%.1f GB/s, %.0f%% of the triad'"'"'s %s GB/s; at the triad it would take %.3f ms), dense %.2f MB (%.1f GB/s, %.0f%%; %.3f ms)\n",
           bi / 1e6, bi / ti / 1e9, 100 * bi / ti / 1e9 / bw, bw, 1e3 * bi / bw / 1e9, bd / 1e6, bd / td / 1e9, 100 * bd / td / 1e9 / bw, 1e3 * bd / bw / 1e9 }'
  louver-index -q query -i "$work/index.h5" --queries "$work/kv.h5" --topk-oracle "$k" --repeats "$repeat" --method quest-threshold -o "$work/qt.h5"
  budget=$(attr "$work/hits.h5" scanned_fraction)
  louver-index -q query -i "$work/index.h5" --queries "$work/kv.h5" --topk-oracle "$k" --repeats "$repeat" --method quest-topk --budget "$budget" --compare-dense -o "$work/qk.h5"
  awk -v n="$n" -v f="$(attr "$work/qt.h5" scanned_fraction)" -v t="$(attr "$work/qt.h5" query_seconds)" -v m="$queries" \
      -v b="$budget" -v r="$(attr "$work/qk.h5" recall)" -v tk="$(attr "$work/qk.h5" query_seconds)" 'BEGIN {
    printf "         quest-threshold (exact): scanned %.1f%%, %.3f ms/query; quest-topk at %.1f%% of keys: recall %.3f, %.3f ms/query\n",
           100 * f, 1e3 * t / m, 100 * b, r, 1e3 * tk / m }'
  if [ "${FAISS:-1}" = 0 ]; then
    echo "         faiss-ivf: skipped (FAISS=0)"
  elif /usr/bin/python3 -c 'import faiss' 2>/dev/null; then
    /usr/bin/python3 "$(dirname "$0")/faiss_peers.py" "$work/kv.h5" "$work/hits.h5" 2 2>/dev/null | sed 's/^/         /'
  else
    echo "         faiss-ivf: skipped (install Debian's python3-faiss: make -f Makefile.dist bench does)"
  fi
done

# Appends as a cache grows: build on the first half of the keys (positions
# 0..N/2), append the second half (later RoPE positions) 4096 keys at a time,
# and compare the pruning (scanned fraction, time) with a fresh build over all
# N keys, on the same queries and thresholds; with codebook rebuilds turned
# off, and with the defaults (rebuild on drift or when the keys double).
echo
echo "== appends vs a fresh build: build on N/2 keys, append N/2 more in chunks of 4096"
printf '%-8s %-8s | %14s %14s | %14s %14s | %10s %8s %11s\n' N rebuild "appended scan" "fresh scan" "appended ms/q" "fresh ms/q" "appends s" rebuilds "final ratio"
for n in $sizes; do
for rebuild in "--rebuild-ratio 0 --rebuild-growth 0" ""; do
  k=$(( n / 100 ))
  louver-index -q gen --n "$n" --d 128 --queries "$queries" --seed 1 -o "$work/kv.h5"
  parts=$(/usr/bin/python3 "$(dirname "$0")/split_keys.py" "$work/kv.h5" $(( n / 2 )) "$work" 4096)
  louver-index -q build -i "$work/first.h5" -o "$work/grown.h5"
  total=0 rebuilds=0 ratio=0
  for p in $(seq 0 $(( parts - 1 ))); do
    f=$(printf '%s/part_%03d.h5' "$work" "$p")
    louver-index -q append -i "$work/grown.h5" --keys "$f" $rebuild -o "$work/grown2.h5"
    total=$(awk -v a="$total" -v b="$(attr "$work/grown2.h5" append_seconds)" 'BEGIN{print a+b}')
    rebuilds=$(( rebuilds + $(attr "$work/grown2.h5" rebuilt_heads) ))
    ratio=$(attr "$work/grown2.h5" residual_ratio)
    mv "$work/grown2.h5" "$work/grown.h5"
  done
  louver-index -q build -i "$work/kv.h5" -o "$work/fresh.h5"
  louver-index -q query -i "$work/grown.h5" --queries "$work/kv.h5" --topk-oracle "$k" --repeats "$repeat" --compare-dense -o "$work/h1.h5"
  louver-index -q query -i "$work/fresh.h5" --queries "$work/kv.h5" --topk-oracle "$k" --repeats "$repeat" -o "$work/h2.h5"
  awk -v n="$n" -v r="${rebuild:+never}" -v a="$(attr "$work/h1.h5" scanned_fraction)" -v b="$(attr "$work/h2.h5" scanned_fraction)" \
      -v ta="$(attr "$work/h1.h5" query_seconds)" -v tb="$(attr "$work/h2.h5" query_seconds)" -v m="$queries" -v s="$total" \
      -v nr="$rebuilds" -v fr="$ratio" 'BEGIN {
    printf "%-8d %-8s | %13.1f%% %13.1f%% | %14.3f %14.3f | %10.3f %8d %11.2f\n", n, (r == "" ? "default" : r), 100 * a, 100 * b, 1e3 * ta / m, 1e3 * tb / m, s, nr, fr }'
  rm -f "$work"/part_*.h5 "$work"/first.h5
done
done
echo "recall 1.0: --compare-dense fails the run unless every query's hits equal the dense exact scan's"
echo "goals: recall 1.0 with scanned <= 15% and >= 3x faster than the dense scan at N = 128K; build + 10K appends <= 5x a dense scan's cost"
