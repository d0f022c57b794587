#!/usr/bin/env bash
# recipe_torch.sh BIN_DIR - the shipped causal model's recipe (train_shipped.sh:
# 1000 steps of 16 x 256 tokens, lr 3e-3, warm-up 100, cosine to 0.1, seed 1,
# 2 threads) run in eager PyTorch (torch_train.py, the benchmark venv's torch),
# its weights imported by nk-lm and scored the same way as data/lm/causal.h5:
# validation bits per byte of both (goal: within 1%). About 15 minutes; the
# PyTorch weights and log stay in build/bench/nk-lm/pytorch-recipe.
. "$(dirname "$0")/../lib.sh" "$1" nk-lm-recipe
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
PY=/usr/bin/python3
PYV=$(bash "$here/venv.sh" | tail -1)
nk-lm -q corpus --threads 2 -o "$work/corpus.h5"
/usr/bin/time -f "%e" -o "$work/pt.time" "$PYV" "$here/torch_train.py" "$work/corpus.h5" "$work/recipe.tsv" \
  --layers 4 --d-model 192 --heads 6 --kv-heads 2 --d-ff 512 --context 256 --batch 16 --steps 1000 --lr 3e-3 \
  --warmup 100 --min-lr 0.1 --seed 1 --threads 2 --save "$work/pt" > "$work/pt.out"
keep=$root/build/bench/nk-lm/pytorch-recipe  # kept: 15 minutes of training
mkdir -p "$keep" && cp "$work/pt/"* "$work/recipe.tsv" "$keep/"
nk-lm -q export -m "$root/data/lm/causal.h5" -o "$work/tok" && cp "$work/tok/tokenizer.json" "$work/pt/"
nk-lm -q import "$work/pt" -o "$work/pt.h5"
bpb() { nk-lm -q score -m "$1" --corpus "$work/corpus.h5" --threads 2 -o "$work/s.h5" &&
        $PY -c "import h5py; print(round(float(h5py.File('$work/s.h5').attrs['bits_per_byte']), 4))"; }
pt=$(bpb "$work/pt.h5")
nk=$(bpb "$root/data/lm/causal.h5")
echo "the shipped recipe, validation bits per byte: nk-lm (data/lm/causal.h5) $nk, PyTorch $pt" \
  "(nk-lm / PyTorch - 1 = $($PY -c "print(f'{($nk / $pt - 1) * 100:+.2f}%')"); goal within 1%);" \
  "PyTorch trained in $(cut -d. -f1 "$work/pt.time") s ($(awk '{print $3}' "$work/pt.out") tokens/s)"
