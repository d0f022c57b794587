#!/usr/bin/env bash
# run.sh BIN_DIR [OUT_DIR] - shred-unlearn's benchmark, one run (2 threads,
# nothing else running):
#  1. a mini-TOFU (AUTHORS x QUESTIONS), the target model (nk-lm's shipped
#     checkpoint fine-tuned on it) and per split the retain model and the
#     reference evaluations; the scale and the target's forget ROUGE-L printed;
#  2. per split: SHRED at every P, shred-all, shred-random, GA, GradDiff, NPO,
#     NPO + retain, KL-retain, each at every learning rate, evaluated every
#     epoch for EPOCHS epochs (run --curve), then relearning on the last
#     checkpoint; the Pareto plot and table of every checkpoint;
#  3. sequential: forget10 in 10 requests for shred, graddiff and npo;
#  4. speed: one SHRED step against the same step in eager PyTorch (PyPI's,
#     from venv.sh; Debian's too), and the FLOPs a step needs against the
#     CPU's FMA peak.
# Environment: AUTHORS (200), QUESTIONS (20), FT_EPOCHS (20), FT_LR (1e-3),
# SPLITS ("forget01 forget05 forget10"), LRS ("1e-5 3e-5 1e-4"), EPOCHS (5),
# BATCH (8), PERCENTS ("5 10 20 30"), MAX_ROWS (400), SHARD (I/N: this shard's
# share of the part-2 runs, e.g. from a Slurm array; the summary then runs
# when SHARD is unset, over every shard's files in OUT_DIR), PARTS ("1 2 3 4").
set -euo pipefail
. "$(dirname "$0")/../lib.sh" "$1" shred-unlearn
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=${2:-$root/build/bench/shred-unlearn}
mkdir -p "$out"
PY=/usr/bin/python3
AUTHORS=${AUTHORS:-200} QUESTIONS=${QUESTIONS:-20} FT_EPOCHS=${FT_EPOCHS:-20} FT_LR=${FT_LR:-1e-3}
SPLITS=${SPLITS:-"forget01 forget05 forget10"} LRS=${LRS:-"1e-5 3e-5 1e-4"} EPOCHS=${EPOCHS:-5} BATCH=${BATCH:-8}
PERCENTS=${PERCENTS:-"5 10 20 30"} MAX_ROWS=${MAX_ROWS:-400} PARTS=${PARTS:-"1 2 3 4"}
shard=${SHARD:-0/1}
S="shred-unlearn -q --threads 2"
EV="--max-rows $MAX_ROWS --ppl-docs 64"
has() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
rows_of() { $PY -c "import h5py; print(len(h5py.File('$out/tofu.h5')['/splits/$1']))"; }

# 1. Data and models (made once; a rerun or another shard reuses them).
if [ ! -f "$out/tofu.h5" ]; then $S tofu --authors "$AUTHORS" --questions "$QUESTIONS" --seed 1 -o "$out/tofu.h5"; fi
if [ ! -f "$out/target.h5" ]; then
  start=$(date +%s)
  $S finetune -m "$root/data/lm/causal.h5" -i "$out/tofu.h5" --epochs "$FT_EPOCHS" --lr "$FT_LR" --seed 1 -o "$out/target.h5"
  echo "target model: $(( $(date +%s) - start )) s of fine-tuning"
fi
for split in $SPLITS; do
  if [ ! -f "$out/retain-$split.h5" ]; then
    $S finetune -m "$root/data/lm/causal.h5" -i "$out/tofu.h5" --epochs "$FT_EPOCHS" --lr "$FT_LR" --exclude "$split" --seed 1 \
      -o "$out/retain-$split.h5"
  fi
  [ -f "$out/ev-retain-$split.h5" ] || $S eval -m "$out/retain-$split.h5" -i "$out/tofu.h5" --split "$split" $EV -o "$out/ev-retain-$split.h5"
  [ -f "$out/ev-target-$split.h5" ] || $S eval -m "$out/target.h5" -i "$out/tofu.h5" --split "$split" $EV \
    --reference "$out/ev-retain-$split.h5" -o "$out/ev-target-$split.h5"
done
if has 1; then
  echo
  echo "scale: $AUTHORS authors x $QUESTIONS questions, nk-lm's shipped model (2.0M parameters, 4 layers, d 192) fine-tuned $FT_EPOCHS epochs"
  for split in $SPLITS; do
    $PY - "$out" "$split" <<'PYEOF'
import sys, h5py
out, split = sys.argv[1:]
t, r = h5py.File(f"{out}/ev-target-{split}.h5")["/eval"], h5py.File(f"{out}/ev-retain-{split}.h5")["/eval"]
rouge = t["forget/rouge_l"][()].mean()
print(f"  {split}: {len(t['forget/rows'])} forget rows; target forget ROUGE-L {rouge:.3f} (goal >= 0.9: {'met' if rouge >= 0.9 else 'NOT met'}), "
      f"utility {t.attrs['model_utility']:.4f}, forget quality {t.attrs['forget_quality']:.3g}; retain model forget ROUGE-L "
      f"{r['forget/rouge_l'][()].mean():.3f}, utility {r.attrs['model_utility']:.4f}; ppl target {t.attrs['ppl_general']:.1f}")
PYEOF
  done
fi

if has 1; then
  echo "  the support's share of the original's probability mass (select, forget05; aim >= 99%):"
  for K in 32 128 512; do
    $S select -m "$out/target.h5" -i "$out/tofu.h5" --split forget05 --topk "$K" -o "$work/sel-$K.h5"
    $PY -c "import h5py; a = h5py.File('$work/sel-$K.h5').attrs; print(f'    K = $K: mean {a[\"coverage_mean\"]:.2%}, min {a[\"coverage_min\"]:.2%}')"
  done
fi

# 2. Every method at every learning rate, evaluated every epoch.
if has 2; then
  k=0
  I=${shard%/*} N=${shard#*/}
  for split in $SPLITS; do
    n=$(rows_of "$split")
    per=$(( (n + BATCH - 1) / BATCH ))
    steps=$(( EPOCHS * per ))
    jobs=()
    for P in $PERCENTS; do jobs+=("shred-P$P:shred:--percent $P"); done
    for m in shred-all shred-random ga graddiff npo npo-retain kl-retain; do jobs+=("$m:$m:"); done
    for job in "${jobs[@]}"; do
      label=${job%%:*} rest=${job#*:} method=${rest%%:*} extra=${rest#*:}
      for lr in $LRS; do
        if [ $(( k % N )) -eq "$I" ] && [ ! -f "$out/relearn-$split-$label-$lr.h5" ]; then
          start=$(date +%s.%N)
          $S run -m "$out/target.h5" -i "$out/tofu.h5" --split "$split" --method "$method" $extra --steps "$steps" --batch "$BATCH" \
            --lr "$lr" --seed 1 --eval-every "$per" --curve "$out/curve-$split-$label-$lr.h5" --reference "$out/ev-retain-$split.h5" \
            $EV -o "$out/model-$split-$label-$lr.h5"
          wall=$($PY -c "import time; print(round(time.time() - $start, 1))")
          $S relearn -m "$out/model-$split-$label-$lr.h5" --target "$out/target.h5" -i "$out/tofu.h5" --split "$split" --seed 1 \
            -o "$out/relearn-$split-$label-$lr.h5"
          echo "$wall" > "$out/wall-$split-$label-$lr.txt"
          rm -f "$out/model-$split-$label-$lr.h5"
          echo "  $split $label lr $lr: $steps steps, $wall s with $((EPOCHS + 1)) evaluations"
        fi
        k=$((k + 1))
      done
    done
  done
fi
[ -n "${SHARD:-}" ] && exit 0

if has 2; then
  for split in $SPLITS; do
    shred-unlearn -q pareto "$out"/curve-"$split"-*.h5 --target "$out/ev-target-$split.h5" --retain "$out/ev-retain-$split.h5" \
      --plot "$out/pareto-$split.svg" -o "$out/pareto-$split.h5"
  done
  $PY "$here/summary.py" "$out" $SPLITS
fi

# 3. Sequential requests on forget10.
if has 3; then
  A=$($PY -c "import h5py, numpy as np; f = h5py.File('$out/tofu.h5'); print(len(set(f['/qa/author'][()][f['/splits/forget10'][()]])))")
  R=$(( A < 10 ? A : 10 ))
  n=$(rows_of forget10)
  per=$(( (n / R + BATCH - 1) / BATCH ))
  for m in shred graddiff npo; do
    lr=3e-5
    [ -f "$out/seq-$m.h5" ] || $S sequential -m "$out/target.h5" -i "$out/tofu.h5" --split forget10 --requests "$R" --method "$m" \
      --steps $(( EPOCHS * per )) --batch "$BATCH" --lr "$lr" --seed 1 $EV -o "$out/seq-$m.h5"
  done
  $PY - "$out" "$R" <<'PYEOF'
import sys, h5py
out, R = sys.argv[1], int(sys.argv[2])
print(f"\nsequential: forget10 in {R} requests (lr 3e-5, {R} x the steps of one request); utility (and forget ROUGE-L of the requests so far) after each:")
rows = {}
for m in ["shred", "graddiff", "npo"]:
    s = h5py.File(f"{out}/seq-{m}.h5")["/sequential"]
    u, r = s["model_utility"][()], s["forget_rouge_l_done"][()]
    rows[m] = u
    print(f"  {m:9s} " + " ".join(f"{x:.3f}" + (f"({y:.2f})" if y == y else "") for x, y in zip(u, r)))
u0 = rows["shred"][0]
last = {m: v[-1] for m, v in rows.items()}
print(f"  goal: SHRED's utility after {R} requests >= 90% of the original ({last['shred'] / u0:.1%}) and above graddiff's "
      f"({last['graddiff']:.3f}) and npo's ({last['npo']:.3f}): "
      + ("met" if last["shred"] >= 0.9 * u0 and last["shred"] > max(last["graddiff"], last["npo"]) else "NOT met"))
PYEOF
fi

# 4. Speed: nk's SHRED step against eager PyTorch on the same model and selection.
if has 4; then
  echo
  echo "speed: one SHRED step (forward, restricted top-K KL, backward, AdamW), batch $BATCH of forget05 instances, 2 threads:"
  $S select -m "$out/target.h5" -i "$out/tofu.h5" --split forget05 -o "$work/sel.h5"
  nk=$(shred-unlearn --threads 2 run -m "$out/target.h5" -i "$out/tofu.h5" --split forget05 --steps 41 --batch "$BATCH" -o "$work/u.h5" 2>&1 |
       sed -n 's/.*(\([0-9.]*\) s a step.*/\1/p')
  tokens=$($PY -c "import h5py, numpy as np; t = h5py.File('$work/sel.h5')['/tokens'][()]; print(round((t >= 0).sum(1).mean() * $BATCH))")
  flops=$($PY -c "print(6 * 1967808 * $tokens)")
  mhz=$(awk -F: '/cpu MHz/{gsub(/ /, "", $2); print $2; exit}' /proc/cpuinfo)
  peak=$($PY -c "print(2 * 32 * $mhz / 1e3)")
  echo "  nk shred-unlearn: $nk s a step ($tokens tokens: $($PY -c "print(round($flops / $nk / 1e9, 1))") GFLOP/s at 6 N a token)"
  PYV=$(bash "$here/venv.sh" | tail -1)
  for py in "$PYV" /usr/bin/python3; do
    line=$("$py" "$here/torch_shred.py" "$out/target.h5" "$work/sel.h5" --steps 20 --batch "$BATCH" --threads 2)
    sec=$(echo "$line" | awk '{print $2}')
    echo "  PyTorch $(echo "$line" | awk '{print $NF}') ($py): $sec s a step -> nk is $($PY -c "print(round($sec / $nk, 2))")x faster"
  done
  echo "  machine limit: 2 cores x 32 flop/cycle x $mhz MHz = $($PY -c "print(round($peak))") GFLOP/s (AVX2 FMA); a step's $(( flops / 1000000 )) MFLOP take >= $($PY -c "print(round($flops / $peak / 1e9 * 1e3, 2))") ms there"
fi
