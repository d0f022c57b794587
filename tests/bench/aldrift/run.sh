#!/bin/bash
# tests/bench/aldrift/run.sh BIN: the benchmark of issue #27.
#   (A) {0,1}^12, sticky prior (stay 0.9), d = Hamming distance to
#       010110100101, T = 5, budget 40,000: tv_law and coverage per stage for
#       aldrift (markov, markov-h, table), SIR, CEM and CbAS, SEEDS seeds
#       each (default 5); the time of each run and of the exact
#       law propagation against numpy's dense N x N matrix (the limit: one
#       N x N matrix-vector product per move is what the dense way costs).
#   (B) global optimisation: rastrigin (A = 1, 10), levy, ackley and
#       styblinski-tang at n = 2, 5, 10, 20: median evaluations to 1e-1 ..
#       1e-6 for aldrift (each learner), random search, CEM, CbAS, SOO, DOO,
#       and the peers pycma (BIPOP) and Nevergrad NGOpt from PyPI (the
#       benchmark venv, tests/bench/aldrift/venv.sh); the log fit of each.
#       SEEDS, CMA_SEEDS, NG_SEEDS, BUDGET, NG_BUDGET, DIMS, FUNCTIONS shrink it.
#   (C) experiment C on strings of the shipped nk-lm model (data/lm/causal.h5,
#       trained on Debian's English text): letter:e (a lipogram), T = 20,
#       32 tokens, 4 stages x 512 chains x 3 moves (burn-in 1): per stage the
#       mean cost and KL(q||L) (1000 draws) of aldrift (bias learner at
#       --bias-l2 10, 30 and cv, the full fine-tuning learner, and the default
#       learner with C_BIG (2048) chains a stage) and CEM, SIR at the same cost calls, against
#       the reference point by importance sampling from 100,000 prior draws.
#       C_REFERENCE, C_CHAINS shrink it.
# PARTS=ABC picks parts (default all).
set -eu
BIN=${1:-build/bin}
OUT=${OUT:-build/bench/aldrift}
THREADS=${THREADS:-2}
PARTS=${PARTS:-ABC}
mkdir -p "$OUT"
AL="$BIN/aldrift -q --threads $THREADS"
PY=/usr/bin/python3
here=$(cd "$(dirname "$0")" && pwd)

if [[ $PARTS == *A* ]]; then
A_SEEDS=${A_SEEDS:-5}
echo "## (A) {0,1}^12, stay 0.9, Hamming to 010110100101, T = 5, budget 40,000 ($A_SEEDS seeds)"
echo
$AL gen-exact -o "$OUT/problem.h5"
: > "$OUT/times.txt"
runs=()
for spec in aldrift:markov:0.5 aldrift:markov-h:0.5 aldrift:table:0.5 aldrift:table:0.01 sir:none:0 cem:markov:0.5 cbas:markov:0.5; do
  IFS=: read -r method learner alpha <<<"$spec"
  name="$method-$learner-$alpha"
  [ "$method" = sir ] && name=sir
  start=$(date +%s.%N)
  for seed in $(seq 1 "$A_SEEDS"); do
    args=(--method "$method" --smoothing "$alpha")
    [ "$learner" != none ] && args+=(--learner "$learner")
    $AL exact -i "$OUT/problem.h5" --T 5 --budget 40000 "${args[@]}" --seed "$seed" -o "$OUT/$name-$seed.h5"
  done
  end=$(date +%s.%N)
  echo "$name $(echo "($end - $start) / $A_SEEDS" | bc -l)" >> "$OUT/times.txt"
  runs+=("$name")
done
$PY "$here/stages.py" "$OUT" "$A_SEEDS" "${runs[@]}"
$AL plot -i "$OUT/aldrift-markov-0.5-1.h5" "$OUT/aldrift-markov-h-0.5-1.h5" "$OUT/sir-1.h5" "$OUT/cem-markov-0.5-1.h5" \
  "$OUT/cbas-markov-0.5-1.h5" -o "$OUT/stages.svg"
echo
echo "Figure: $OUT/stages.svg"
echo
echo "### The exact law: sorted prefix sums against the dense matrix (numpy, one stage of 9 moves)"
$PY "$here/law_timing.py" "$OUT/problem.h5" "$OUT/times.txt"
fi

if [[ $PARTS == *B* ]]; then
echo
echo "## (B) global optimisation to eps = 1e-6"
echo
VPY=$(bash "$here/venv.sh" | tail -1)
"$VPY" "$here/global_bench.py" "$BIN" "$OUT/global"
fi

if [[ $PARTS == *C* ]]; then
echo
echo "## (C) strings of data/lm/causal.h5, cost letter:e, T = 20, length 32"
echo
SRC=$(cd "$here/../../.." && pwd)
C_REFERENCE=${C_REFERENCE:-100000}
C_CHAINS=${C_CHAINS:-512}
C_BIG=${C_BIG:-2048}
base=(--prior "$SRC/data/lm/causal.h5" --cost letter:e --T 20 --length 32 --stages 4 --steps 3 --burn-in 1 --kl-samples 1000)
common=("${base[@]}" --chains "$C_CHAINS")
start=$(date +%s)
$AL lm "${common[@]}" --reference "$C_REFERENCE" --learner bias --seed 1 -o "$OUT/lm-bias.h5"
mid=$(date +%s)
$AL lm "${common[@]}" --reference 0 --learner full --methods aldrift,cem --seed 1 -o "$OUT/lm-full.h5"
end=$(date +%s)
$AL lm "${common[@]}" --reference 0 --learner bias --bias-l2 30 --methods aldrift --seed 1 -o "$OUT/lm-bias30.h5"
last=$(date +%s)
$AL lm "${common[@]}" --reference 0 --learner bias --bias-l2 cv --methods aldrift --seed 1 -o "$OUT/lm-biascv.h5"
cv=$(date +%s)
$AL lm "${base[@]}" --chains "$C_BIG" --reference 0 --learner bias --methods aldrift --seed 1 -o "$OUT/lm-bias-big.h5"
big=$(date +%s)
echo "bias run (reference, aldrift, sir, cem): $((mid - start)) s; full-learner run (aldrift, cem): $((end - mid)) s; bias-l2 30 (aldrift): $((last - end)) s; bias-l2 cv (aldrift): $((cv - last)) s; $C_BIG chains (aldrift): $((big - cv)) s"
echo
$PY "$here/lm_table.py" "$OUT/lm-bias.h5" "$OUT/lm-full.h5" "$OUT/lm-bias30.h5" "$OUT/lm-biascv.h5" "$OUT/lm-bias-big.h5"
$AL plot -i "$OUT/lm-bias.h5" "$OUT/lm-full.h5" "$OUT/lm-bias30.h5" "$OUT/lm-biascv.h5" "$OUT/lm-bias-big.h5" -o "$OUT/lm.svg"
echo
echo "Figure: $OUT/lm.svg"
fi
