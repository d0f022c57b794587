#!/usr/bin/env bash
# spike-sft benchmark, convolutional network: two conv-LIF-pool blocks (8 and
# 16 channels, 3x3 kernels, 2x2 average pooling, T = 8) pre-trained on 20K
# Fashion-MNIST training images (3 epochs, learning rate 1e-2), then Stage 1
# on two derived tasks (5K training / 1K test images each, 2 epochs, seed 1):
# SPE at q = 5% against full fine-tuning, random and large-magnitude masks.
# Reported: test accuracy, time per epoch and trainable state, as run.sh does
# for the dense network. Called by run.sh; alone: conv.sh build/bin.
. "$(dirname "$0")/../lib.sh" "$1" spike-conv
F=/usr/share/datasets/fashion-mnist
nk-data -q import-idx "$F/train-images-idx3-ubyte.gz" "$F/train-labels-idx1-ubyte.gz" --limit 20000 -o "$work/train.h5"
nk-data -q import-idx "$F/t10k-images-idx3-ubyte.gz" "$F/t10k-labels-idx1-ubyte.gz" -o "$work/test.h5"
spike-sft -q --seed 1 pretrain -i "$work/train.h5" --test "$work/test.h5" --conv 8,16 --lr 1e-2 --epochs 3 -o "$work/base.h5"
echo "conv base (8,16): $(attr "$work/base.h5" test_accuracy) test accuracy, $(/usr/bin/python3 -c "import h5py; print('%.1f' % h5py.File('$work/base.h5','r')['/metrics/epoch_seconds'][-1])") s per epoch of 20K images"
spike-sft -q --seed 1 tasks -i "$work/train.h5" --kinds rotate90,invert --train 5000 --test 1000 -o "$work/tasks.h5"
printf '%-9s %-7s | %9s %9s | %10s %12s %8s\n' task method "base acc" "acc" "s/epoch" "state bytes" "vs full"
for task in rotate90 invert; do
  full_bytes=0 full_secs=0
  for method in full spe random large; do
    spike-sft -q --seed 1 spe -i "$work/base.h5" --task "$work/tasks.h5:$task" --method "$method" --epochs 2 -o "$work/a.h5"
    bytes=$(attr "$work/a.h5" trainable_state_bytes) secs=$(attr "$work/a.h5" epoch_seconds)
    [ "$method" = full ] && full_bytes=$bytes full_secs=$secs
    awk -v t="$task" -v m="$method" -v b="$(attr "$work/a.h5" base_accuracy)" -v a="$(attr "$work/a.h5" test_accuracy)" -v sec="$secs" \
        -v by="$bytes" -v fb="$full_bytes" -v fs="$full_secs" 'BEGIN {
      printf "%-9s %-7s | %8.2f%% %8.2f%% | %6.2f (%3.0f%%) %12d %7.1f%%\n", t, m, 100 * b, 100 * a, sec, 100 * sec / fs, by, 100 * by / fb }'
  done
done
