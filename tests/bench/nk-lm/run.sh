#!/usr/bin/env bash
# run.sh BIN_DIR - nk-lm's benchmark, one run (2 threads, nothing else running):
#  1. training throughput and peak memory of nk-lm against the same model and
#     batch in eager float32 PyTorch (torch_train.py), at the shipped size and
#     at a 4x larger one, and the loss curves of both overlaid (loss.svg);
#  2. the machine's limit: the FLOPs a step needs at the measured rate against
#     the CPU's FMA peak (printed);
#  3. quality: validation bits per byte of the shipped models next to gzip -9,
#     xz -9, and unigram / bigram models of the same tokens.
# STEPS (default 60) sets the steps per nk-lm training run, PEER_STEPS
# (default 10) PyTorch's (Debian's torch links the generic reference BLAS and
# runs ~25x slower; throughput is the mean over the steps after the second).
set -euo pipefail
bin=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
steps=${STEPS:-60}
peer_steps=${PEER_STEPS:-10}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PATH="$bin:$PATH"
PY=/usr/bin/python3
nk-lm -q corpus --threads 2 -o "$work/corpus.h5"

row() { printf '| %-22s | %-9s | %10s | %12s | %10s |\n' "$@"; }
echo
row "size" "system" "params" "tokens/s" "peak MB"
row "----" "------" "------" "--------" "-------"
for size in shipped 4x; do
  if [ $size = shipped ]; then shape="--layers 4 --d-model 192 --heads 6 --kv-heads 2 --d-ff 512"
  else shape="--layers 8 --d-model 384 --heads 6 --kv-heads 2 --d-ff 1024"; fi
  /usr/bin/time -f "%M" -o "$work/nk.mem" nk-lm -q train --threads 2 --corpus "$work/corpus.h5" $shape --context 256 \
    --batch 16 --steps "$steps" --warmup 100 --log "$work/nk-$size.tsv" --log-every 1 -o "$work/m.h5"
  nk_rate=$($PY -c "import csv; r=[float(x['tokens_per_s']) for x in csv.DictReader(open('$work/nk-$size.tsv'),delimiter='\t')][2:]; print(round(sum(r)/len(r)))")
  params=$(nk-lm info -m "$work/m.h5" | awk '/^parameters/{print $2}')
  row "$size" "nk-lm" "$params" "$nk_rate" "$(( $(cat "$work/nk.mem") / 1024 ))"
  /usr/bin/time -f "%M" -o "$work/pt.mem" $PY "$here/torch_train.py" "$work/corpus.h5" "$work/pt-$size.tsv" $shape \
    --context 256 --batch 16 --steps "$peer_steps" --threads 2 > "$work/pt.out"
  pt_rate=$(awk '{print $3}' "$work/pt.out")
  row "$size" "PyTorch" "$(awk '{print $9}' "$work/pt.out")" "$pt_rate" "$(( $(cat "$work/pt.mem") / 1024 ))"
  flops=$($PY -c "print(6 * $params * $nk_rate / 1e9)")
  echo "  $size: nk-lm / PyTorch = $($PY -c "print(round($nk_rate / $pt_rate, 2))")x; nk-lm sustains ~${flops%.*} GFLOP/s (6 N per token)"
done
$PY - "$work" <<'PYEOF'
import csv, sys
w = sys.argv[1]
def curve(p): return [(int(r['step']), float(r['loss'])) for r in csv.DictReader(open(p), delimiter='\t')]
a, b = curve(f'{w}/nk-shipped.tsv'), curve(f'{w}/pt-shipped.tsv')
n = min(len(a), len(b))
print(f"  loss after {n} steps: nk-lm {a[n-1][1]:.3f}, PyTorch {b[n-1][1]:.3f}")
PYEOF
# The CPU's FMA peak: 2 FMA units x 8 float lanes (AVX2) x 2 flops x clock x cores.
mhz=$(awk -F: '/cpu MHz/{print $2; exit}' /proc/cpuinfo)
echo "  machine limit: 2 cores x 32 flop/cycle x ${mhz% *} MHz = $($PY -c "print(round(2 * 32 * $mhz / 1e3))") GFLOP/s (AVX2 FMA)"

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
