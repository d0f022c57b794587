#!/usr/bin/env bash
# run.sh BIN_DIR [OUT_DIR] - ssd-distill's benchmark, one run (2 threads,
# nothing else running), on the shipped reader (data/lm/reader.h5):
#  1. per task (memo, update, skill): the task file; the sizes, the base
#     student closed-book and the teacher open-book (the ceiling) printed;
#  2. per task: `sweep` of the 5 methods x SEEDS seeds, then ssd's tau sweep
#     (0.1, 0.2, 0.5, ln 2; 0.3 is in the first) and its losses (rkl, jsd;
#     fkl is in the first) at one seed; the shards merged; `report`: the table
#     and the SVGs (test accuracy vs supervised tokens; teacher fraction);
#  3. the goals over the three tasks (summary.py);
#  4. speed: one on-policy and one ssd step of ssd-distill on each task, and
#     (memo) against the same steps in eager PyTorch (torch_ssd.py: PyPI's, from shred-unlearn's
#     venv.sh; Debian's too), and the FLOPs a step needs against the CPU's
#     FMA peak.
# Environment: STEPS (400), EVERY (25), SEEDS (3), LR (3e-4), BATCH (8),
# TASKS ("memo update skill"), DOCS ("8 12 12", one per task), SHARD (I/N:
# this shard's share of every sweep, e.g. from a Slurm array; parts 3 and 4
# then run when SHARD is unset), PARTS ("1 2 3 4").
set -euo pipefail
. "$(dirname "$0")/../lib.sh" "$1" ssd-distill
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=${2:-$root/build/bench/ssd-distill}
mkdir -p "$out"
PY=/usr/bin/python3
STEPS=${STEPS:-400} EVERY=${EVERY:-25} SEEDS=${SEEDS:-3} LR=${LR:-3e-4} BATCH=${BATCH:-8}
TASKS=${TASKS:-"memo update skill"} DOCS=${DOCS:-"8 12 12"} PARTS=${PARTS:-"1 2 3 4"}
S="ssd-distill -q --threads 2"
has() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
docs_of() { local i=0 t; for t in $TASKS; do i=$((i + 1)); [ "$t" = "$1" ] && echo "$DOCS" | cut -d' ' -f$i; done; }
start=$(date +%s)

# 1. Task files (made once; a rerun or another shard reuses them).
for task in $TASKS; do
  [ -f "$out/$task.tasks.h5" ] || $S tasks --task "$task" --docs "$(docs_of "$task")" --seed 1 -o "$out/$task.tasks.h5"
done
if has 1; then
  echo "scale: the shipped reader (nk-lm, 2.0M parameters, 4 layers, d 192, context 256); $STEPS steps x batch $BATCH, lr $LR, test accuracy every $EVERY steps, $SEEDS seeds"
  for task in $TASKS; do
    $PY -c "
import h5py; f = h5py.File('$out/$task.tasks.h5')
print(f'  $task: {len(f[\"/docs/text\"])} documents, {len(f[\"/train/question\"])} training and {len(f[\"/test/question\"])} held-out test questions')"
  done
fi

# 2. The sweeps.
if has 2; then
  shard=${SHARD:-0/1}
  tag="s${shard%/*}of${shard#*/}"
  SW="sweep --steps $STEPS --eval-every $EVERY --lr $LR --batch $BATCH --seed 1 --shard $shard"
  for task in $TASKS; do
    i="$out/$task.tasks.h5"
    [ -f "$out/$task-main-$tag.h5" ] || $S $SW -i "$i" --seeds "$SEEDS" -o "$out/$task-main-$tag.h5"
    [ -f "$out/$task-tau-$tag.h5" ] || $S $SW -i "$i" --methods ssd --taus 0.1,0.2,0.5,0.6931471805599453 -o "$out/$task-tau-$tag.h5"
    [ -f "$out/$task-loss-$tag.h5" ] || $S $SW -i "$i" --methods ssd --losses rkl,jsd -o "$out/$task-loss-$tag.h5"
  done
  echo "sweeps ($shard): $(( $(date +%s) - start )) s"
fi
[ -n "${SHARD:-}" ] && exit 0

if has 2 || has 3; then
  for task in $TASKS; do
    nk-data -q merge -o "$out/$task.h5" "$out/$task"-main-s*.h5 "$out/$task"-tau-s*.h5 "$out/$task"-loss-s*.h5
    echo
    $S report -i "$out/$task.h5" -o "$out/$task.report.h5" --svg "$out/$task"
    cp "$out/$task-accuracy.svg" "$out/$task-teacher.svg" "$here/"
  done
fi
if has 3; then
  echo
  $PY "$here/summary.py" "$out" $TASKS
fi

# 4. Speed: the same step in ssd-distill and in eager PyTorch.
if has 4; then
  echo
  echo "speed: one training step (batch $BATCH rollouts of at most 32 tokens, their scoring, forward + backward, AdamW), 2 threads:"
  mhz=$(awk -F: '/cpu MHz/{gsub(/ /, "", $2); print $2; exit}' /proc/cpuinfo)
  peak=$($PY -c "print(2 * 32 * $mhz / 1e3)")
  declare -A nk_s nk_tok
  for task in $TASKS; do
    i="$out/$task.tasks.h5"
    for m in on-policy ssd; do
      ssd-distill --threads 2 train -i "$i" --method "$m" --steps 41 --batch "$BATCH" --lr "$LR" --seed 1 -o "$work/st-$m.h5" 2>"$work/st-$m.log"
      read -r sec roll sup tf sf pre tt < <($PY -c "
import h5py; a = h5py.File('$work/st-$m.h5')['/curve'].attrs
print(a['seconds_per_step'], a['rollout_seconds_per_step'], a['supervised_tokens'] / 41, a['teacher_forward_tokens'] / 41,
      a['student_forward_tokens'] / 41, a['document_prefill_tokens'] / 41, a['training_tokens'] / 41)")
      nk_s[$task-$m]=$sec nk_tok[$task-$m]=$sup
      # FLOPs: 2 N per forward token (rollouts, scoring, document prefill; the student's count includes
      # the training pass), 4 N more per training token (its backward).
      flops=$($PY -c "print(2 * 1967808 * ($tf + $pre + $sf) + 4 * 1967808 * $tt)")
      echo "  $task, nk ssd-distill $m: $sec s a step ($roll s of rollouts), $sup supervised tokens a step; >= $($PY -c "print(round($flops / $peak / 1e9 * 1e3, 2))") ms at the machine's peak ($($PY -c "print(round($flops / $sec / 1e9, 1))") GFLOP/s)"
    done
    echo "  $task: ssd / on-policy step $($PY -c "print(round(${nk_s[$task-ssd]} / ${nk_s[$task-on-policy]}, 2))")x (goal <= 1.5x, aim 1.2x; the limit is 1.0x)"
  done
  i="$out/memo.tasks.h5"
  $S rollout -i "$i" --limit 400 --method on-policy -o "$work/prompts.h5"
  PYV=$(bash "$root/tests/bench/shred-unlearn/venv.sh" | tail -1)
  for py in "$PYV" /usr/bin/python3; do
    for m in on-policy ssd; do
      line=$("$py" "$here/torch_ssd.py" "$root/data/lm/reader.h5" "$work/prompts.h5" --method "$m" --steps 10 --batch "$BATCH" --threads 2)
      sec=$(echo "$line" | awk '{print $2}')
      echo "  memo, PyTorch $(echo "$line" | awk '{print $NF}') $m ($py): $sec s a step ($(echo "$line" | awk '{print $4}') s of rollouts, $(echo "$line" | awk '{print $6}') supervised tokens) -> nk is $($PY -c "print(round($sec / ${nk_s[memo-$m]}, 2))")x faster a step, $($PY -c "print(round($sec / $(echo "$line" | awk '{print $6}') / (${nk_s[memo-$m]} / ${nk_tok[memo-$m]}), 2))")x a supervised token"
    done
  done
  echo "  machine limit: 2 cores x 32 flop/cycle x $mhz MHz = $($PY -c "print(round($peak))") GFLOP/s (AVX2 FMA)"
fi
echo "total: $(( $(date +%s) - start )) s"
