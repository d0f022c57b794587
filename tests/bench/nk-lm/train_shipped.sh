#!/usr/bin/env bash
# train_shipped.sh BIN_DIR [OUT_DIR] - the recipe of data/lm/causal.h5 and
# data/lm/diffusion.h5: the Debian corpus (fortunes, WordNet, GCIDE; vocab
# 2048), then one causal and one masked-diffusion model of the same shape
# (4 layers, d 192, 6 heads / 2 KV heads, d_ff 512, context 256: 1.97M
# parameters, 3.9 MB in bfloat16), 1000 steps of 16 x 256 tokens (4.1M
# tokens, a fifth of the 19M training tokens). Two threads, the same seed and
# the same kernel copy (AVX-512 where the CPU has it; NK_LM_ISA caps it) give
# the same files bit for bit. About 11 minutes per model on 2 idle cores.
# data/lm/mla.h5 (snapmla-decode's model): DeepSeek-V2's multi-head latent
# attention at d_c = 8 d_R (DeepSeek's ratio: latent 128, RoPE key 16; 4 heads
# of 32 = 16 content + 16 RoPE), 4 layers, d 128, d_ff 384 (1.15M parameters,
# 2.3 MB: the data folder's budget), the same corpus and schedule; ~6 minutes.
# MODELS="causal diffusion mla" (default all three) picks which to train.
set -euo pipefail
bin=$(cd "$1" && pwd)
out=${2:-data/lm}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PATH="$bin:$PATH"
SHAPE="--layers 4 --d-model 192 --heads 6 --kv-heads 2 --d-ff 512 --context 256"
SCHEDULE="--steps 1000 --batch 16 --lr 3e-3 --warmup 100 --min-lr 0.1 --eval-every 250"
nk-lm corpus --threads 2 -o "$work/corpus.h5"
MLA_SHAPE="--attention mla --kv-rank 128 --rope-dim 16 --layers 4 --d-model 128 --heads 4 --head-dim 32 --d-ff 384 --context 256"
for model in ${MODELS:-causal diffusion mla}; do
  case $model in
    causal | diffusion) args="--mode $model $SHAPE" ;;
    mla) args="--mode causal $MLA_SHAPE" ;;
    *) echo "train_shipped.sh: unknown model '$model' (causal, diffusion or mla)" >&2; exit 2 ;;
  esac
  nk-lm train --threads 2 --seed 1 --corpus "$work/corpus.h5" $args $SCHEDULE \
    --log "$out/$model.train.tsv" --log-every 50 --dtype bfloat16 -o "$out/$model.h5"
done
