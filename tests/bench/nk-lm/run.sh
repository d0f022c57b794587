#!/usr/bin/env bash
# run.sh BIN_DIR [OUT_DIR] - nk-lm's benchmark, one run (2 threads, nothing else running):
#  1. training throughput and peak memory of nk-lm against the same model and
#     batch in eager float32 PyTorch (torch_train.py under PyPI's torch, MKL),
#     the same number of steps, at the shipped size and at a 4x larger one;
#     the four loss curves overlaid in OUT_DIR/loss.svg;
#  2. the machine's limit for training: the FLOPs a step needs at the
#     measured rate against the CPU's FMA peak;
#  3. decoding (decode.py): greedy, KV cache, batch 1 and 8, against
#     transformers and llama.cpp on the exported model, at the shipped size and
#     at a memory-bound one (12 layers, d 768) next to the memory bandwidth
#     (STREAM triad, tests/bench/limits/triad.cpp); and the Hugging Face round trip (a tiny
#     LlamaForCausalLM from transformers imported, exported, loaded back);
#  4. quality: validation bits per byte of the shipped models next to gzip -9,
#     xz -9, unigram / bigram models of the same tokens; with RECIPE=1 also
#     PyTorch trained by the shipped model's recipe (1000 steps, ~20 min more)
#     and scored by nk-lm after import.
# The peers come from the benchmark venv (venv.sh, PyPI; built on first use,
# ~10 min). STEPS (default 60) sets the training steps of every run;
# DEBIAN_TORCH=1 adds Debian's python3-torch (generic BLAS: ~25x slower) for
# PEER_STEPS (default 10) steps.
set -euo pipefail
bin=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=${2:-$root/build/bench/nk-lm}
mkdir -p "$out"
steps=${STEPS:-60}
peer_steps=${PEER_STEPS:-10}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PATH="$bin:$PATH"
PY=/usr/bin/python3
PYV=$(bash "$here/venv.sh" | tail -1)
nk-lm -q corpus --threads 2 -o "$work/corpus.h5"

row() { printf '| %-7s | %-16s | %10s | %9s | %8s | %12s |\n' "$@"; }
mean_rate() { $PY -c "import csv; r=[float(x['tokens_per_s']) for x in csv.DictReader(open('$1'),delimiter='\t')][2:]; print(round(sum(r)/len(r)))"; }
last_loss() { $PY -c "import csv; r=[float(x['loss']) for x in csv.DictReader(open('$1'),delimiter='\t')][-10:]; print(round(sum(r)/len(r), 3))"; }
echo
echo "training, $steps steps of 16 x 256 tokens, 2 threads:"
row "size" "system" "params" "tokens/s" "peak MB" "loss, last 10"
row "----" "------" "------" "--------" "-------" "-------------"
svg_runs=()
for size in shipped 4x; do
  if [ $size = shipped ]; then shape="--layers 4 --d-model 192 --heads 6 --kv-heads 2 --d-ff 512"
  else shape="--layers 8 --d-model 384 --heads 6 --kv-heads 2 --d-ff 1024"; fi
  /usr/bin/time -f "%M" -o "$work/nk.mem" nk-lm -q train --threads 2 --corpus "$work/corpus.h5" $shape --context 256 \
    --batch 16 --steps "$steps" --warmup 100 --log "$work/nk-$size.tsv" --log-every 1 -o "$work/m-$size.h5"
  nk_rate=$(mean_rate "$work/nk-$size.tsv")
  params=$(nk-lm info -m "$work/m-$size.h5" | awk '/^parameters/{print $2}')
  row "$size" "nk-lm" "$params" "$nk_rate" "$(( $(cat "$work/nk.mem") / 1024 ))" "$(last_loss "$work/nk-$size.tsv")"
  /usr/bin/time -f "%M" -o "$work/pt.mem" "$PYV" "$here/torch_train.py" "$work/corpus.h5" "$work/pt-$size.tsv" $shape \
    --context 256 --batch 16 --steps "$steps" --threads 2 > "$work/pt.out"
  pt_rate=$(mean_rate "$work/pt-$size.tsv")
  row "$size" "PyTorch (PyPI)" "$(awk '{print $9}' "$work/pt.out")" "$pt_rate" "$(( $(cat "$work/pt.mem") / 1024 ))" "$(last_loss "$work/pt-$size.tsv")"
  if [ "${DEBIAN_TORCH:-0}" = 1 ]; then
    /usr/bin/time -f "%M" -o "$work/pd.mem" $PY "$here/torch_train.py" "$work/corpus.h5" "$work/pd-$size.tsv" $shape \
      --context 256 --batch 16 --steps "$peer_steps" --threads 2 > "$work/pd.out"
    row "$size" "PyTorch (Debian)" "$(awk '{print $9}' "$work/pd.out")" "$(mean_rate "$work/pd-$size.tsv")" "$(( $(cat "$work/pd.mem") / 1024 ))" "($peer_steps steps)"
  fi
  flops=$($PY -c "print(6 * $params * $nk_rate / 1e9)")
  echo "  $size: nk-lm / PyTorch = $($PY -c "print(round($nk_rate / $pt_rate, 2))")x (goal 1.5x); nk-lm sustains ~${flops%.*} GFLOP/s (6 N per token)"
  svg_runs+=("nk-lm $size=$work/nk-$size.tsv" "PyTorch $size=$work/pt-$size.tsv")
done
$PY "$here/loss_svg.py" "$out/loss.svg" "nk-lm and PyTorch, the same model, batch and steps" "${svg_runs[@]}"
echo "  loss curves: $out/loss.svg"
# The CPU's FMA peak: 2 FMA units x 8 float lanes (AVX2) x 2 flops x clock x cores.
mhz=$(awk -F: '/cpu MHz/{gsub(/ /, "", $2); print $2; exit}' /proc/cpuinfo)
echo "  machine limit: 2 cores x 32 flop/cycle x $mhz MHz = $($PY -c "print(round(2 * 32 * $mhz / 1e3))") GFLOP/s (AVX2 FMA)"

echo
echo "decoding, greedy, KV cache, 16-token prompts, 128 new tokens each (EOS ignored), 2 threads:"
g++ -O3 -march=native -fopenmp "$here/../limits/triad.cpp" -o "$work/triad"
bandwidth=$(OMP_NUM_THREADS=2 "$work/triad")
echo "  memory bandwidth (STREAM triad, 2 threads): $bandwidth GB/s"
(cd "$work" && "$PYV" "$here/decode.py" "$work" "$root/data/lm/causal.h5" shipped --checks)
nk-lm -q train --threads 2 --corpus "$work/corpus.h5" --layers 12 --d-model 768 --heads 12 --kv-heads 4 --d-ff 2048 \
  --context 256 --batch 1 --steps 1 -o "$work/big.h5"
(cd "$work" && "$PYV" "$here/decode.py" "$work" "$work/big.h5" 12L-d768 --new 64 --bandwidth "$bandwidth")

echo
echo "validation bits per byte (lower is better):"
$PY - "$work/corpus.h5" "$work/val.txt" <<'PYEOF'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1]); tok, off, split = f['tokens'][()], f['doc_offsets'][()], f['split'][()]
V = int(f['tokenizer'].attrs['vocab'])
train = np.concatenate([tok[off[d]:off[d+1]] for d in np.flatnonzero(split == 0)])
val_docs = [tok[off[d]:off[d+1]] for d in np.flatnonzero(split == 1)]
nbytes = int(f['doc_bytes'][()][split == 1].sum())
uni = np.bincount(train, minlength=V) + 0.5; lu = np.log(uni / uni.sum())
big = np.ones((V, V)) * 0.1; np.add.at(big, (train[:-1], train[1:]), 1); lb = np.log(big / big.sum(1, keepdims=True))
nu = -sum(lu[d].sum() for d in val_docs); nb = -sum(lu[d[0]] + lb[d[:-1], d[1:]].sum() for d in val_docs if len(d))
# The validation text itself (decoded from the merges), for the compressors.
table = [bytes([i]) for i in range(256)]
for a, b in f['tokenizer/merges'][()]: table.append(table[a] + table[b])
open(sys.argv[2], 'wb').write(b''.join(b''.join(table[t] for t in d) for d in val_docs))
print(f"  unigram tokens   {nu / np.log(2) / nbytes:.3f}")
print(f"  bigram tokens    {nb / np.log(2) / nbytes:.3f}")
PYEOF
bytes=$(stat -c %s "$work/val.txt")
for z in "gzip -9" "xz -9"; do
  packed=$($z -c "$work/val.txt" | wc -c)
  echo "  $z          $($PY -c "print(round(8 * $packed / $bytes, 3))")"
done
for m in causal diffusion; do
  [ $m = diffusion ] && continue  # score needs next-token probabilities
  [ -f "$root/data/lm/$m.h5" ] || continue
  nk-lm -q score -m "$root/data/lm/$m.h5" --corpus "$work/corpus.h5" --threads 2 -o "$work/score-$m.h5"
  echo "  nk-lm $m model  $($PY -c "import h5py; print(round(float(h5py.File('$work/score-$m.h5').attrs['bits_per_byte']), 3))")"
done

if [ "${RECIPE:-0}" = 1 ]; then
  bash "$here/recipe_torch.sh" "$bin"
fi
