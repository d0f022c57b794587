#!/usr/bin/env bash
# train_sparse_gqa.sh BIN [OUT] - the recipe of the shipped sparse-gqa model
# (data/lm/sparse-gqa.h5 and its log sparse-gqa.train.tsv): long-context
# continued pretraining of data/lm/causal.h5 (context 256) at a context of
# 4096 with the RoPE base raised from 1e4 to 1e5 and InfLLM-v2 block-sparse
# attention (32-token blocks; the first block, the local 2 and the top 8 by
# the selector: at most 352 keys a query), on Debian's text (fortunes,
# WordNet, GCIDE) plus needle-task documents (facts hidden in GCIDE text,
# asked later; training keys only), documents concatenated. About 17 minutes
# on 2 cores.
set -euo pipefail
bin=${1:?usage: train_sparse_gqa.sh BIN [OUT]}
here=$(cd "$(dirname "$0")/../../.." && pwd)
out=${2:-$here/data/lm}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin/sparda-forecast" needle --docs 2000 --chars 12000 --facts 8 --split train --seed 1 -o "$tmp/needles.txt"
"$bin/nk-lm" corpus --source fortunes,wordnet,gcide --text "$tmp/needles.txt" --paragraphs \
  --tokenizer "$here/data/lm/causal.h5" -o "$tmp/corpus.h5"
"$bin/nk-lm" --threads 2 train --seed 1 --corpus "$tmp/corpus.h5" --init "$here/data/lm/causal.h5" \
  --context 4096 --rope-theta 100000 --attention sparse-gqa --sparse-block 32 --sparse-init 1 --sparse-local 2 \
  --sparse-topk 8 --batch 2 --steps 400 --lr 1e-3 --warmup 40 --eval-every 100 --eval-batches 2 \
  --log "$out/sparse-gqa.train.tsv" --log-every 20 --dtype bfloat16 -o "$out/sparse-gqa.h5"
