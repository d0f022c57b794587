#!/usr/bin/env bash
# proxy-certify on the GPU (needs one; not run by run_all.sh): CERTIFY's noisy
# forwards per second with --device cuda (the smoothing family: the noise
# streams replayed on the device, im2col + cuBLAS SGEMM, arg-max counts) for
# the MLP and the CNN of run.sh, against our CPU path on every core and the
# same networks in PyTorch on the GPU (torch_certify.py --device cuda: the
# peer a user would write), with the limit: torch's FP32 GEMM rate on the
# device (8192^3).
. "$(dirname "$0")/../lib.sh" "$1" proxy-certify-cuda
here=$(cd "$(dirname "$0")" && pwd)
PY=${PY:-python3}
threads=${THREADS:-$(nproc)}
N=${N:-200000}
FM=${FM:-/usr/share/datasets/fashion-mnist}
echo "== proxy-certify certify on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $threads CPU threads, n = $N"
if [ -f "$FM/train-images-idx3-ubyte.gz" ]; then
  nk-data -q import-idx "$FM/train-images-idx3-ubyte.gz" "$FM/train-labels-idx1-ubyte.gz" --limit 4000 -o "$work/train.h5"
else  # no Fashion-MNIST on the GPU machine: random labelled images (throughput does not depend on them)
  $PY -c "
import h5py, numpy as np
r = np.random.default_rng(1)
with h5py.File('$work/train.h5', 'w') as f:
    f['/images'] = r.random((4000, 28, 28, 1), dtype=np.float32); f['/labels'] = r.integers(0, 10, 4000)"
fi
nk-data -q info "$work/train.h5" > /dev/null
$PY -c "
import h5py
with h5py.File('$work/train.h5') as f, h5py.File('$work/few.h5', 'w') as g: g['/images'] = f['/images'][:8]"
gemm=$($PY "$here/torch_certify.py" --sgemm --device cuda --size 8192 | sed -n 's/^sgemm_gflops=//p')
printf '%-4s | %-24s %14s %10s | %s\n' net system "forwards/s" "GFLOP/s" "FP32 GEMM limit $gemm GFLOP/s"
for arch in mlp cnn; do
  proxy-certify -q --device cpu train -i "$work/train.h5" --arch $arch --epochs 1 -o "$work/$arch.h5"
  macs=$([ $arch = mlp ] && echo 268800 || echo 333056)
  for dev in cpu cuda; do
    n=$([ $dev = cpu ] && echo 20000 || echo "$N")
    proxy-certify -q --device $dev --threads "$threads" certify -i "$work/few.h5" --model "$work/$arch.h5" --n0 1 --n "$n" -o "$work/c.h5"
    rate=$($PY -c "import h5py; c = h5py.File('$work/c.h5')['/certify']; print(len(c['pred']) * (c.attrs['n0'] + c.attrs['n']) / c.attrs['seconds'], c.attrs['device'])")
    set -- $rate
    awk -v a=$arch -v s="proxy-certify $2" -v r="$1" -v m=$macs -v g="$gemm" 'BEGIN { printf "%-4s | %-24s %14.0f %10.1f | %.3f\n", a, s, r, 2 * m * r / 1e9, 2 * m * r / 1e9 / g }'
  done
  for dev in cpu cuda; do
    n=$([ $dev = cpu ] && echo 20000 || echo "$N")
    batch=$([ $dev = cpu ] && echo 1000 || echo 65536)
    r=$($PY "$here/torch_certify.py" "$work/$arch.h5" "$work/few.h5" --n "$n" --items 8 --threads "$threads" --device $dev --batch "$batch" |
      sed -n 's/^forwards_per_second=\([0-9.]*\).*/\1/p')
    awk -v a=$arch -v s="torch $dev" -v r="$r" -v m=$macs -v g="$gemm" 'BEGIN { printf "%-4s | %-24s %14.0f %10.1f | %.3f\n", a, s, r, 2 * m * r / 1e9, 2 * m * r / 1e9 / g }'
  done
done
