#!/usr/bin/env bash
# tests/bench/dllm-sparse/model.sh BIN - Step-dLLM inside a real diffusion
# model (issue #38): the shipped 2M-parameter diffusion model (context 256)
# and a 1024-token variant this script trains from it (nk-lm train --init,
# RoPE base 4e4, 300 steps of 4 x 1024 tokens, one thread: about 9 minutes,
# kept in OUT and reused). Three parts, one run:
#  A. real denoising trajectories (nk-lm capture --trajectory) through
#     dllm-sparse plan/eval unchanged: output error, mass recall and anchors
#     per policy, and how locally consistent the attention is (the exact best
#     blocks' overlap from step to step, per layer; SVGs in OUT);
#  B. the model generating: WordNet nouns of the training split as prompts
#     ("lemma, lemma (noun):"; the answer fills the context, the gloss is its
#     first line), each policy against the model's own attention: the
#     teacher-forced agreement and KL of its predictions (--teacher-forced),
#     the share of answer tokens equal to the dense generation's, the gloss's
#     content-word F1 against WordNet's definition, and LLaDA's likelihood
#     bound of the answer under the model (nk-lm score);
#  C. end-to-end time of one long generation per policy on the 1024-token
#     model, with the kernel's and the planner's share;
#  D. task accuracy on real text: validation GCIDE entries, the sampler
#     forced along the true continuation (nk-lm generate --reference), the
#     share of its predictions that were the true token, per policy and the
#     oracle (exact block masses at every step: the best the budget allows)
#     (16 rows on the shipped model, N_LONG (4) of 1024 tokens on the long one).
# OUT (default build/bench/dllm-sparse-model), N (prompts, default 32; 4 on
# the 1024-token model), SPARSITIES (default "0.9 0.95"), PARTS (default ABCD), N_LONG (4),
# ANCHOR_SWEEP (part D and C: step with --anchor-every K for each K, default "4 2"),
# SAMPLE_SWEEP (part D: step with --sparse-samples K for each K, default 16).
# Run on an idle machine: part C's times are wall-clock.
set -euo pipefail
bin=$(cd "${1:?usage: model.sh BIN}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
src=${NK_SOURCE:-$(cd "$here/../../.." && pwd)}
OUT=${OUT:-build/bench/dllm-sparse-model}
N=${N:-32}
SPARSITIES=${SPARSITIES:-"0.9 0.95"}
PARTS=${PARTS:-ABCD}
N_LONG=${N_LONG:-4}
ANCHOR_SWEEP=${ANCHOR_SWEEP:-"4 2"}  # part D: step re-scored at least every K steps (default 8), accuracy against cost
SAMPLE_SWEEP=${SAMPLE_SWEEP:-"16"}   # part D: step's block scores from K query rows per block (default 4)
export PATH="$bin:/usr/bin:$PATH"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$OUT"
PY=/usr/bin/python3
attr() { nk-data info "$1" --format tsv | awk -F'\t' -v k="$2" '$1=="attribute" && $2==k {print $7}'; }
SHIPPED=$src/data/lm/diffusion.h5
LONG=$OUT/diffusion-1k.h5

echo "== the models"
[ -s corpus.h5 ] || nk-lm -q corpus --tokenizer "$SHIPPED" -o corpus.h5
[ -s wordnet.tsv ] || nk-lm corpus --source wordnet --list > wordnet.tsv
if [ ! -s "$LONG" ]; then
  nk-lm -q --threads 1 train --seed 1 --corpus corpus.h5 --init "$SHIPPED" --context 1024 --rope-theta 40000 --batch 4 \
    --steps 300 --lr 1e-3 --warmup 30 --eval-every 100 --eval-batches 2 --log diffusion-1k.train.tsv --log-every 20 \
    --dtype bfloat16 -o "$LONG"
fi
echo "shipped: data/lm/diffusion.h5 (context 256); long: $LONG (context 1024, validation loss $(tail -1 diffusion-1k.train.tsv | cut -f7))"

# MODEL ANSWER BLOCK STEPS: the model and its generation shape per size.
shapes() {
  case $1 in
    shipped) echo "$SHIPPED 200 40 50" ;;
    long) echo "$LONG 960 64 120" ;;
  esac
}

if [[ $PARTS == *A* ]]; then
echo
echo "== A. real trajectories through dllm-sparse plan / eval (block 16)"
printf '%-8s %-9s %-14s %11s %9s %8s\n' model sparsity policy "mean error" recall anchors
for size in shipped long; do
  read -r model answer block steps <<< "$(shapes $size)"
  echo "A dog is" > p.txt
  nk-lm -q capture -m "$model" --text p.txt --trajectory traj-$size.h5 --max-new "$answer" --block "$block" \
    --steps $((answer / block * 2)) -o cap.h5
  for s in $SPARSITIES; do
    [ $size = shipped ] && [ "$s" = 0.95 ] && continue  # 16 blocks of 16 keep at most 93.75%
    for spec in once-uniform every-uniform step "step --drift 0" oracle; do
      set -- $spec
      policy=$1; shift
      name=$policy$(printf '%s' "$*" | tr -d ' -')
      dllm-sparse -q plan -i traj-$size.h5 --policy $policy --sparsity "$s" --block 16 "$@" -o plan.h5
      dllm-sparse -q eval -i traj-$size.h5 --plan plan.h5 -o eval-$size-$s-$name.h5
      anchors=$($PY -c "import h5py; f = h5py.File('plan.h5'); print(sum(len(f['layers'][l]['anchor_steps']) for l in f['layers']))")
      printf '%-8s %-9s %-14s %11.4f %9.4f %8s\n' $size "$s" "$name" "$(attr eval-$size-$s-$name.h5 mean_error)" \
        "$(attr eval-$size-$s-$name.h5 mean_recall)" "$anchors"
    done
    dllm-sparse -q plot -i eval-$size-$s-step.h5 -o overlap-$size.svg --error error-$size-$s.svg
    $PY -c "
import h5py
f = h5py.File('eval-$size-$s-step.h5')
print('   overlap of the exact best blocks from step to step, per layer:',
      ', '.join('%s %.3f' % (l, f['layers'][l]['overlap'][()].mean()) for l in sorted(f['layers'])), '(mean %.3f)' % f.attrs['mean_overlap'])"
  done
  rm -f traj-$size.h5 cap.h5
done
fi

if [[ $PARTS == *B* ]]; then
echo
echo "== B. generation: WordNet nouns (\"lemma, lemma (noun):\"), each policy against the model's own attention"
for size in shipped long; do
  read -r model answer block steps <<< "$(shapes $size)"
  n=$N
  [ $size = long ] && n=$((N < 4 ? N : 4))
  mkdir -p gen-$size && rm -f gen-$size/*
  $PY "$here/model_task.py" prompts "$n" 1 wordnet.tsv gen-$size
  G="--prompts gen-$size/prompts.txt --max-new $answer --block $block --steps $steps --greedy --ignore-eos --jsonl --threads 2"
  nk-lm -q generate -m "$model" $G -o gen-$size/dense.h5 > gen-$size/dense.jsonl
  names=(dense)
  declare -A agreement=() kl=()
  for s in $SPARSITIES; do
    [ $size = shipped ] && [ "$s" = 0.95 ] && continue  # 13 blocks of 16 keep at most 92%
    specs=(once-uniform every-uniform step "step --drift 0" oracle)
    [ $size = long ] && specs=(once-uniform step "step --drift 0")
    for spec in "${specs[@]}"; do
      set -- $spec
      policy=$1; shift
      name=$policy$(printf '%s' "$*" | tr -d ' -')-$s
      nk-lm -q generate -m "$model" $G --sparse-policy $policy --sparsity "$s" "$@" -o gen-$size/$name.h5 > gen-$size/$name.jsonl
      nk-lm -q generate -m "$model" $G --sparse-policy $policy --sparsity "$s" "$@" --teacher-forced -o gen-$size/tf-$name.h5 > /dev/null
      agreement[$name]=$(attr gen-$size/tf-$name.h5 agreement)
      kl[$name]=$(attr gen-$size/tf-$name.h5 kl_per_prediction)
      names+=("$name")
    done
  done
  for name in "${names[@]}"; do nk-lm -q score -m "$model" --token-ids gen-$size/$name.h5 --samples 16 --seed 1 -o gen-$size/$name.score.h5; done
  echo "-- $size: $n prompts, answers of $answer tokens in blocks of $block, $steps steps (greedy)"
  $PY "$here/model_task.py" measures gen-$size dense "${names[@]}" > gen-$size/measures.tsv
  printf '%-22s %10s %10s %8s %9s %10s %8s\n' generation agreement KL same "gloss F1" "nll/token" seconds
  tail -n +2 gen-$size/measures.tsv | while IFS=$'\t' read -r name same f1 nll secs; do
    printf '%-22s %10.4f %10.4f %8.3f %9.4f %10.3f %8.2f\n' "$name" "${agreement[$name]:-1}" "${kl[$name]:-0}" "$same" "$f1" "$nll" "$secs"
  done
  unset agreement kl
done
echo "goal: step within 1 point of dense at 90% (task accuracy) and ahead of once-uniform on every measure"
fi

if [[ $PARTS == *D* ]]; then
echo
echo "== D. task accuracy on real text: GCIDE entries of the validation split, the sampler forced along the true answer (--reference)"
# Rows of the validation split's GCIDE documents, concatenated: 16 of 224
# tokens for the shipped model (prompt 64, answer 160), N_LONG of 1024 for
# the long one (prompt 256, answer 768); blocks of 32, two tokens a step.
$PY - "$N_LONG" <<'EOF2'
import sys, h5py, numpy as np
f = h5py.File('corpus.h5')
names, split, off, tok = f['names'][()], f['split'][()], f['doc_offsets'][()], f['tokens']
docs = [i for i in range(len(names)) if split[i] == 1 and names[i].decode().startswith('gcide')]
text = np.concatenate([tok[off[i]:off[i + 1]] for i in docs[:3000]])
bos = int(f['tokenizer'].attrs['vocab']) - 4  # BOS, EOS, MASK, PAD are the tokenizer's last four ids
for name, rows, width in (('rows-shipped.h5', 16, 224), ('rows-long.h5', int(sys.argv[1]), 1024)):
    out = [np.concatenate([[bos], text[r * (width - 1):(r + 1) * (width - 1)]]) for r in range(rows)]
    with h5py.File(name, 'w') as o:
        o['tokens'] = np.array(out, dtype=np.int32)
EOF2
printf '%-8s %-22s %9s %10s %12s %8s\n' model attention accuracy "vs dense" "tokens (SE)" seconds
for size in shipped long; do
  if [ $size = shipped ]; then model=$SHIPPED; P=64; answer=160; steps=80; else model=$LONG; P=256; answer=768; steps=384; fi
  R="--token-ids rows-$size.h5 --reference --prompt-length $P --max-new $answer --block 32 --steps $steps --greedy --threads 2"
  nk-lm -q generate -m "$model" $R -o ref-$size-dense.h5
  dense=$(attr ref-$size-dense.h5 reference_accuracy)
  row() {  # row NAME FILE
    awk -v m=$size -v n="$1" -v a="$(attr $2 reference_accuracy)" -v d="$dense" -v t="$(attr $2 reference_tokens)" -v s="$(attr $2 seconds)" 'BEGIN {
      printf "%-8s %-22s %9.4f %+9.2f pt %6d (%.2f) %8.1f\n", m, n, a, 100 * (a - d), t, 100 * sqrt(a * (1 - a) / t), s }'
  }
  row "model's own (dense)" ref-$size-dense.h5
  for s in $SPARSITIES; do
    [ $size = shipped ] && [ "$s" = 0.95 ] && continue  # 14 blocks of 16 keep at most 93%
    for spec in once-uniform step "step --drift 0" oracle $(for k in $ANCHOR_SWEEP; do echo "step:--anchor-every:$k"; done) \
                $(for k in $SAMPLE_SWEEP; do echo "step:--sparse-samples:$k"; done); do
      set -- ${spec//:/ }
      policy=$1; shift
      name=$policy$(printf '%s' "$*" | tr -d ' -')-$s
      nk-lm -q generate -m "$model" $R --sparse-policy $policy --sparsity "$s" "$@" -o ref-$size-$name.h5
      label="$policy $s"
      case "$*" in --drift*) label="$label drift 0" ;; --anchor-every*) label="$label anchors/$2" ;; --sparse-samples*) label="$label samples $2" ;; esac
      row "$label" ref-$size-$name.h5
      [ -n "$*" ] && [ "$1" = --anchor-every ] && echo "         (anchors: $(attr ref-$size-$name.h5 anchors) of $(attr ref-$size-$name.h5 layer_steps) layer-steps)"
    done
  done
done
echo "(accuracy: the share of the unmasked answer positions where the prediction was the true token; SE in points)"
echo "goal: step within 1 point of dense at 90% and ahead of once-uniform"
fi

[[ $PARTS == *C* ]] || exit 0
echo
echo "== C. end-to-end time on the 1024-token model: one prompt, 960 tokens in blocks of 64, 120 steps, $(nproc) threads"
read -r model answer block steps <<< "$(shapes long)"
echo "dog, domestic dog, Canis familiaris (noun):" > one.txt
G="--prompts one.txt --max-new $answer --block $block --steps $steps --greedy --ignore-eos --threads 2"
nk-lm -q generate -m "$model" $G -o t-own.h5 > /dev/null
own=$(attr t-own.h5 seconds)
printf '%-22s %10s %9s %11s %10s %9s\n' attention seconds speedup "kernel s" "plan s" density
printf '%-22s %10.2f %8.2fx %11s %10s %9s\n' "model's own (dense)" "$own" 1 - - 1
for spec in dense:0 $(for s in $SPARSITIES; do echo "step:$s step:$s:0 once-uniform:$s"; for k in $ANCHOR_SWEEP; do echo "step:$s::$k"; done; done); do
  IFS=: read -r policy s drift every <<< "$spec"
  nk-lm -q generate -m "$model" $G --sparse-policy $policy --sparsity "$s" ${drift:+--drift $drift} ${every:+--anchor-every $every} -o t.h5 > /dev/null
  printf '%-22s %10.2f %8.2fx %11.2f %10.2f %9.4f\n' "$policy $s${drift:+ drift 0}${every:+ anchors/$every}" "$(attr t.h5 seconds)" \
    "$(awk -v a="$own" -v b="$(attr t.h5 seconds)" 'BEGIN { print a / b }')" "$(attr t.h5 attention_seconds)" \
    "$(attr t.h5 plan_seconds)" "$(attr t.h5 density)"
  [ $policy = dense ] && cp t.h5 t-dense.h5
done
$PY -c "
import h5py
d = h5py.File('t-dense.h5').attrs
a = d['attention_seconds'] / d['seconds']
print('the fused dense kernel is %.0f%% of a dense generation: at most %.2fx end to end with attention free;' % (100 * a, 1 / (1 - a)),
      'Amdahl at 10x / 20x kernel speedups: %.2fx / %.2fx' % (1 / ((1 - a) + a / 10), 1 / ((1 - a) + a / 20)))"
