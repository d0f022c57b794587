#!/bin/bash
# tests/bench/teacher-limits/run.sh BIN: the benchmark of issue #26.
#   (1) theory at d = k = 1024, he3, Delta = 1, beta in {0.75, 1, 1.5}: the
#       feature-learning, refinement and onset slopes against the laws, and
#       eps_BO / eps_kc; the solve time (k = 10^4 at 200 n too).
#   (2) HMC at d = 64, beta = 1, he3, Delta = 0.1 (2.5 decades of n are
#       feature-learning there), 4 data seeds x 8 n against the equations;
#       Gibbs/BO; HMC's own onsets; d = 16..96 at three n/d.
#   (3) Adam at widths kc/2, kc, 2kc, k on the same n beside random-features
#       ridge, the restarts' mean prediction at k_c and HMC's Gibbs error
#       (when part 2 ran); Adam at k_c for d = 64, 128, 256 at n = 150 d.
#   (4) HMC gradients/s at d = 64, n = 16384 against the same HMC in PyTorch
#       (Debian's python3-torch, and PyPI's MKL build in the benchmarks' venv,
#       tests/bench/nk-lm/venv.sh),
#       with the GEMM rate at the gradient's shapes as the limit.
# PARTS=1234 picks parts; HMC_SEEDS, ADAM_SEEDS shrink the runs.
set -eu
BIN=${1:-build/bin}
OUT=${OUT:-build/bench/teacher-limits}
THREADS=${THREADS:-2}
mkdir -p "$OUT"
TL="$BIN/teacher-limits -q --threads $THREADS"
PY=/usr/bin/python3
here=$(cd "$(dirname "$0")" && pwd)

PARTS=${PARTS:-1234}
if [[ $PARTS == *1* ]]; then
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
echo
fi

N64=300,600,1200,2400,4800,9600,19200,38400
if [[ $PARTS == *2* || $PARTS == *3* ]]; then
  $TL teacher --d 64 --k 64 --beta 1 --activation he3 --noise 0.1 --seed 1 -o "$OUT/t64.h5"
  $TL theory -i "$OUT/t64.h5" --n-range 100:1e6:160 -o "$OUT/th64.h5"
fi
if [[ $PARTS == *2* ]]; then
  echo "## (2) HMC against the equations: d = k = 64, beta = 1, he3, Delta = 0.1"
  echo
  start=$(date +%s)
  $TL hmc -i "$OUT/t64.h5" --n $N64 --data-seeds ${HMC_SEEDS:-0,1,2,3} --test 4000 --chains 2 --samples 150 --warmup 500 \
    --leapfrog 10 --seed 11 -o "$OUT/hmc64.h5"
  $PY "$here/hmc_theory.py" hmc "$OUT/th64.h5" "$OUT/hmc64.h5"
  echo "(HMC: $(( $(date +%s) - start )) s for $(echo $N64 | tr ',' '\n' | wc -l) n x $(echo ${HMC_SEEDS:-0,1,2,3} | tr ',' '\n' | wc -l) seeds, 2 chains x (500 + 150) x 10 leapfrog, row metric adapted in warm-up)"
  echo
  echo "### d = 16 .. 96 (k = d) at n/d = 20, 80, 320, 2 data seeds"
  echo
  scan=()
  for d in 16 32 64 96; do
    $TL teacher --d $d --k $d --beta 1 --activation he3 --noise 0.1 --seed 1 -o "$OUT/t$d.h5"
    $TL theory -i "$OUT/t$d.h5" --n-range $((d * 10)):$((d * 640)):60 -o "$OUT/ths$d.h5"
    $TL hmc -i "$OUT/t$d.h5" --n $((d * 20)),$((d * 80)),$((d * 320)) --data-seeds 0,1 --test 4000 --chains 2 --samples 150 \
      --warmup 500 --leapfrog 10 --seed 12 -o "$OUT/hmcs$d.h5"
    scan+=("$d:$OUT/ths$d.h5:$OUT/hmcs$d.h5")
  done
  $PY "$here/hmc_theory.py" scan "${scan[@]}"
  echo
fi
if [[ $PARTS == *3* ]]; then
  echo "## (3) Adam against eps_BO, and random-features ridge (d = 64, the same teacher)"
  echo
  start=$(date +%s)
  $TL adam -i "$OUT/t64.h5" --n $N64 --data-seeds ${ADAM_SEEDS:-0} --test 4000 --restarts 4 --seed 13 -o "$OUT/adam64.h5"
  hmc_file=""
  [ -f "$OUT/hmc64.h5" ] && hmc_file="$OUT/hmc64.h5"
  $PY "$here/hmc_theory.py" adam "$OUT/th64.h5" "$OUT/adam64.h5" $hmc_file
  echo "(Adam: $(( $(date +%s) - start )) s: widths kc/2, kc, 2kc, k x lr 0.003, 0.01 x 4 restarts, batch 64, <= 200 epochs)"
  echo
  echo "### Adam at k_c as d grows (k = d, n = 150 d, the same beta, he3 and Delta)"
  echo
  start=$(date +%s)
  ascan=()
  for d in 64 128 256; do
    $TL teacher --d $d --k $d --beta 1 --activation he3 --noise 0.1 --seed 1 -o "$OUT/ta$d.h5"
    $TL theory -i "$OUT/ta$d.h5" --n $((d * 150)) -o "$OUT/tha$d.h5"
    $TL adam -i "$OUT/ta$d.h5" --n $((d * 150)) --data-seeds 0 --test 4000 --widths kc --restarts 4 --ridge-features 0 \
      --seed 14 -o "$OUT/adama$d.h5"
    ascan+=("$d:$OUT/tha$d.h5:$OUT/adama$d.h5")
  done
  $PY "$here/hmc_theory.py" adam-scan "${ascan[@]}"
  echo "(Adam scan: $(( $(date +%s) - start )) s)"
  echo
  if [ -f "$OUT/hmc64.h5" ]; then
    $TL report -i "$OUT/th64.h5" "$OUT/hmc64.h5" "$OUT/adam64.h5" --svg "$OUT/fig64" -o "$OUT/fit64.h5" > "$OUT/fit64.tsv"
    echo "report: $OUT/fit64.tsv and the figures $OUT/fig64-*.svg"
    echo
  fi
fi
if [[ $PARTS == *4* ]]; then
  echo "## (4) HMC gradients/s at d = k = 64, n = 16384, $THREADS threads"
  echo
  $TL teacher --d 64 --k 64 --beta 1 --activation he3 --noise 0.1 --seed 1 -o "$OUT/t64.h5"
  $TL data -i "$OUT/t64.h5" --n 16384 --test 1000 --seed 2 -o "$OUT/d16k.h5"
  $TL --device cpu hmc -i "$OUT/d16k.h5" --chains 1 --samples 100 --warmup 50 --leapfrog 10 -o "$OUT/hmc16k.h5"
  read -r ours step < <($PY -c "import h5py; h = h5py.File('$OUT/hmc16k.h5')['/hmc']; print(h['gradients'][0] / h['gradient_seconds'][0], h['step'][0])")
  flops=$($PY -c "print(4 * 16384 * 64 * 64)")
  echo "| system | gradients/s | GFLOP/s | GEMM rate at [n,d]x[d,k] / [k,n]x[n,d] (GFLOP/s) |"
  echo "|---|---|---|---|"
  best=0
  peers=("Debian python3-torch:$PY")
  # PyPI's PyTorch (MKL) from the benchmarks' shared venv (tests/bench/nk-lm/venv.sh; built once, reused).
  venv=$(bash "$here/../nk-lm/venv.sh" | tail -n 1)
  peers+=("PyPI torch (MKL):$venv")
  for peer in "${peers[@]}"; do
    name=${peer%%:*}; py=${peer#*:}
    read -r version rate g1 g2 acc < <(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$py" "$here/hmc_torch.py" "$OUT/d16k.h5" "$THREADS" 600 10 "$step")
    echo "| $name $version | $rate | $($PY -c "print(f'{$rate * $flops * 1e-9:.1f}')") | $g1 / $g2 |"
    # Both GEMMs have the same FLOPs: the limit of the pair is the harmonic mean of the two rates.
    best=$($PY -c "print(max($best, 2 / (1 / $g1 + 1 / $g2)))")
    peer_rate=$rate
  done
  echo "| teacher-limits hmc | $($PY -c "print(f'{$ours:.1f}')") | $($PY -c "print(f'{$ours * $flops * 1e-9:.1f}')") | |"
  echo
  $PY -c "
ours, peer, best, flops = $ours, $peer_rate, $best, $flops
print(f'teacher-limits / last peer: {ours / peer:.2f}x (goal >= 2); {ours * flops * 1e-9:.1f} GFLOP/s = {ours * flops * 1e-9 / best:.2f} of the best GEMM rate '
      f'measured at these shapes ({best:.1f} GFLOP/s; goal >= 0.5)')"
fi
