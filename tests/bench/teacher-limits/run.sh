#!/bin/bash
# tests/bench/teacher-limits/run.sh BIN: the benchmark of issue #26.
#   (1) theory at d = k = 1024, he3, Delta = 1, beta in {0.75, 1, 1.5}: the
#       feature-learning, refinement and onset slopes against the laws, and
#       eps_BO / eps_kc; the solve time (k = 10^4 at 200 n too).
# Parts (2) HMC against theory, (3) Adam at k_c and the ridge baseline, (4)
# HMC gradients/s against torch come with the hmc and adam verbs.
set -eu
BIN=${1:-build/bin}
OUT=${OUT:-build/bench/teacher-limits}
THREADS=${THREADS:-2}
mkdir -p "$OUT"
TL="$BIN/teacher-limits -q --threads $THREADS"
PY=/usr/bin/python3
here=$(cd "$(dirname "$0")" && pwd)

echo "## (1) theory, d = k = 1024, he3, Delta = 1 (200 log-spaced n)"
echo
echo "| beta | feature-learning slope (goal) | refinement slope | onset slope (goal) | eps_BO / eps_kc | C | points FL / refinement |"
echo "|---|---|---|---|---|---|---|"
for spec in 0.75:1e11 1:1e12 1.5:1e15; do
  beta=${spec%%:*}; top=${spec##*:}
  start=$(date +%s.%N)
  $TL theory --d 1024 --k 1024 --beta "$beta" --activation he3 --noise 1 --n-range "1e3:$top:200" --widths 1024 \
    -o "$OUT/theory-beta$beta.h5"
  end=$(date +%s.%N)
  echo "$beta $(echo "$end - $start" | bc)" >> "$OUT/theory-times.txt"
  $PY "$here/theory_slopes.py" "$OUT/theory-beta$beta.h5"
done
echo
for delta in 10 100; do
  $TL theory --d 1024 --k 1024 --beta 0.75 --activation he3 --noise $delta --n-range 1e3:1e13:200 --widths 1024 \
    -o "$OUT/theory-beta0.75-delta$delta.h5"
  printf 'beta 0.75, Delta = %s: ' "$delta"
  $PY "$here/theory_slopes.py" "$OUT/theory-beta0.75-delta$delta.h5"
done
echo
start=$(date +%s.%N)
$TL theory --d 10000 --k 10000 --beta 1 --activation he3 --noise 1 --n-range 1e4:1e13:200 --widths 10000 -o "$OUT/theory-k1e4.h5"
end=$(date +%s.%N)
echo "theory solve times (s, $THREADS threads): $(tr '\n' ' ' < "$OUT/theory-times.txt"); k = 10^4 at 200 n: $(echo "$end - $start" | bc)"
rm -f "$OUT/theory-times.txt"
