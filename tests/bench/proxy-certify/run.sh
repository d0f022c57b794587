#!/usr/bin/env bash
# run.sh BIN_DIR [OUT_DIR] - proxy-certify's benchmark, one run (2 threads, nothing else running):
#  1. CERTIFY's noisy forwards/s for the MLP and the CNN: ours (--threads 2, batch 1000) against the
#     same networks in PyTorch (PyPI, MKL/oneDNN; torch_certify.py: torch.randn noise, one batched
#     forward, arg-max, bincount; 2 threads, batch 1000), and ours in GFLOP/s as a share of this
#     machine's SGEMM rate (torch/MKL, 2048^3, 2 threads: the limit of the products a forward is);
#  2. the headline table: MLP and CNN trained at sigma 0.12, 0.25, 0.5 (TRAIN Fashion-MNIST items,
#     Gaussian augmentation at sigma), a pool of POOL test items (1000 calibration, the rest test,
#     SPLITS random splits), the reference CERTIFY at n = 100,000 for the MLP at sigma 0.25 and
#     n = 10,000 elsewhere (marked in the table's first row), the head trained on 500 training items
#     (CERTIFY n = 1000); per method and radius 0.25, 0.5, 0.75, 1: certified accuracy, FA with its
#     95% interval, approval rate, forwards and seconds per input; then the goals checked (goals.py;
#     the references stay in OUT_DIR/ref-*.h5, so eval can be rerun on them);
#  3. the extra row: a spiking network of spike-sft (pretrained on the TRAIN items with one
#     Gaussian draw at sigma 0.25 added to each, direct coding, T = 8) read by --model itself, at
#     sigma 0.25: its CERTIFY throughput and the same table (reference n = SNN_N).
# POOL (default 3000), TRAIN (default 20000), SPLITS (default 20), REF_N (default 100000),
# OTHER_N (default 10000) and SNN_N (default 10000) shrink it; PARTS (default "1 2 3") picks parts.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
. "$here/../lib.sh" "$1" proxy-certify
out=${2:-$root/build/bench/proxy-certify}
mkdir -p "$out"
PY=/usr/bin/python3
FM=/usr/share/datasets/fashion-mnist
POOL=${POOL:-3000} TRAIN=${TRAIN:-20000} SPLITS=${SPLITS:-20} REF_N=${REF_N:-100000} OTHER_N=${OTHER_N:-10000}
SNN_N=${SNN_N:-10000} PARTS=${PARTS:-"1 2 3"}
has() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
T="--threads 2"
started=$SECONDS

nk-data -q import-idx $FM/train-images-idx3-ubyte.gz $FM/train-labels-idx1-ubyte.gz --limit "$TRAIN" -o "$work/train.h5"
nk-data -q import-idx $FM/train-images-idx3-ubyte.gz --offset 50000 --limit 500 -o "$work/head.h5"
nk-data -q import-idx $FM/t10k-images-idx3-ubyte.gz $FM/t10k-labels-idx1-ubyte.gz --limit "$POOL" -o "$work/pool.h5"
for arch in mlp cnn; do
  has 1 || has 2 || break
  for s in 0.12 0.25 0.5; do
    epochs=10; [ $arch = cnn ] && epochs=8
    proxy-certify -q train $T -i "$work/train.h5" --arch $arch --sigma $s --epochs $epochs --seed 1 -o "$work/$arch-$s.h5"
  done
done

if has 1; then
PYV=$(bash "$here/../nk-lm/venv.sh" | tail -1)
echo "== 1. CERTIFY throughput: noisy forwards/s, batch 1000, 2 threads (20 items x n = 20,000)"
nk-data -q import-idx $FM/t10k-images-idx3-ubyte.gz --offset 9000 --limit 20 -o "$work/few.h5"
sgemm=$("$PYV" "$here/torch_certify.py" --sgemm --threads 2 | sed -n 's/^sgemm_gflops=//p')
echo "| network | MACs/forward | ours (fwd/s) | PyTorch 2 threads (fwd/s) | ours / PyTorch | ours GFLOP/s | share of SGEMM ($sgemm GFLOP/s) |"
echo "|---|---|---|---|---|---|---|"
for arch in mlp cnn; do
  proxy-certify -q certify $T -i "$work/few.h5" --model "$work/$arch-0.25.h5" --n0 1 --n 20000 --batch 1000 -o "$work/tp-$arch.h5"
  peer=$("$PYV" "$here/torch_certify.py" "$work/$arch-0.25.h5" "$work/few.h5" --n 20000 --items 10 --threads 2 |
    sed -n 's/^forwards_per_second=\([0-9.]*\).*/\1/p')
  $PY - "$work/tp-$arch.h5" "$work/$arch-0.25.h5" "$peer" "$sgemm" "$arch" <<'PYEOF'
import sys, h5py
cert, model, peer, sgemm, arch = h5py.File(sys.argv[1]), h5py.File(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
c = cert["/certify"]
ours = len(c["pred"]) * (c.attrs["n0"] + c.attrs["n"]) / c.attrs["seconds"]
macs = 0
shape = [int(v) for v in model["/model"].attrs["input"].split(",")]
for line in [s.decode() if isinstance(s, bytes) else s for s in model["/model/arch"][()]]:
    op, *a = line.split(); a = [int(v) for v in a]
    if op == "linear": macs += a[0] * a[1]
    if op == "conv2d":
        h = (shape[0] + 2 * a[4] - a[2]) // a[3] + 1; w = (shape[1] + 2 * a[4] - a[2]) // a[3] + 1
        macs += h * w * a[1] * a[0] * a[2] ** 2; shape = [h, w, a[1]]
    if op == "maxpool": shape = [shape[0] // a[0], shape[1] // a[0], shape[2]]
gf = 2 * macs * ours / 1e9
print(f"| {arch} | {macs} | {ours:.0f} | {peer:.0f} | {ours / peer:.2f}x | {gf:.1f} | {gf / sgemm:.2f} |")
PYEOF
done
fi

if has 2; then
echo
echo "== 2. certified accuracy, false approvals and cost: pool $POOL (1000 calibration), $SPLITS splits, target 0.05"
for arch in mlp cnn; do
  for s in 0.12 0.25 0.5; do
    n=$OTHER_N; [ $arch = mlp ] && [ $s = 0.25 ] && n=$REF_N
    proxy-certify -q certify $T -i "$work/pool.h5" --model "$work/$arch-$s.h5" --n "$n" --seed 2 -o "$out/ref-$arch-$s.h5"
    echo
    echo "### $arch, sigma $s (reference CERTIFY n = $n)"
    proxy-certify -q eval $T -i "$work/pool.h5" --model "$work/$arch-$s.h5" --reference "$out/ref-$arch-$s.h5" \
      --calibration 1000 --splits "$SPLITS" --target 0.05 --radii 0.25,0.5,0.75,1 --head-data "$work/head.h5" \
      --seed 3 --svg "$out/curve-$arch-$s.svg" -o "$out/eval-$arch-$s.h5" > "$out/eval-$arch-$s.tsv"
    $PY "$here/goals.py" "$out/eval-$arch-$s.h5"
  done
done
fi

if has 3; then
  echo
  echo "== 3. a spike-sft network read by --model (spiking MLP 784-256-10, T = 8, direct coding), sigma 0.25, reference n = $SNN_N"
  $PY -c "
import h5py, numpy as np
src = h5py.File('$work/train.h5'); dst = h5py.File('$work/train-noisy.h5', 'w')
for k, v in src.attrs.items(): dst.attrs[k] = v
x = src['/images'][()]
noisy = x + np.random.default_rng(1).normal(0, 0.25, x.shape).astype(x.dtype)
dst.create_dataset('/images', data=noisy)
for k, v in src['/images'].attrs.items(): dst['/images'].attrs[k] = v
src.copy('/labels', dst)"
  start=$SECONDS
  [ -f "$out/snn-0.25.h5" ] ||
    spike-sft -q pretrain $T -i "$work/train-noisy.h5" --hidden 256 --steps 8 --epochs 3 --batch 100 --seed 1 -o "$out/snn-0.25.h5"
  echo "  spike-sft pretrain: $((SECONDS - start)) s"
  nk-data -q import-idx $FM/t10k-images-idx3-ubyte.gz --offset 9000 --limit 20 -o "$work/few.h5"
  proxy-certify -q certify $T -i "$work/few.h5" --model "$out/snn-0.25.h5" --sigma 0.25 --n0 1 --n 2000 --batch 1000 -o "$work/tp-snn.h5"
  $PY -c "
import h5py; c = h5py.File('$work/tp-snn.h5')['/certify']
print(f'  CERTIFY through the spiking network: {len(c[\"pred\"]) * (c.attrs[\"n0\"] + c.attrs[\"n\"]) / c.attrs[\"seconds\"]:.0f} noisy forwards/s (2 threads, batch 1000)')"
  # (a rerun keeps the reference of the same model: delete OUT_DIR/ref-snn-0.25.h5 to redo it)
  [ -f "$out/ref-snn-0.25.h5" ] && [ "$out/ref-snn-0.25.h5" -nt "$out/snn-0.25.h5" ] ||
    proxy-certify -q certify $T -i "$work/pool.h5" --model "$out/snn-0.25.h5" --sigma 0.25 --n "$SNN_N" --seed 2 -o "$out/ref-snn-0.25.h5"
  proxy-certify -q eval $T -i "$work/pool.h5" --model "$out/snn-0.25.h5" --reference "$out/ref-snn-0.25.h5" \
    --calibration 1000 --splits "$SPLITS" --target 0.05 --radii 0.25,0.5,0.75,1 --head-data "$work/head.h5" \
    --seed 3 --svg "$out/curve-snn-0.25.svg" -o "$out/eval-snn-0.25.h5" > "$out/eval-snn-0.25.tsv"
  $PY "$here/goals.py" "$out/eval-snn-0.25.h5"
fi
echo
echo "benchmark: $((SECONDS - started)) s; tables and curves in $out"
