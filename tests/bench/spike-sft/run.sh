#!/usr/bin/env bash
# spike-sft benchmark, one run: a base LIF network on Fashion-MNIST (60K
# training images from Debian's dataset-fashion-mnist, 784-256-10, T = 8,
# 5 epochs), four derived tasks (rotate90, invert, permute, relabel; 10K
# training and 2K test images each), and Stage 1 on each task: SPE (the
# smallest-magnitude 5% of each layer) against full fine-tuning, a random
# mask and a large-magnitude mask of the same size; 3 epochs each, SEEDS
# seeds (default "1 2 3"), and LoRA adapters of the same parameter budget. Reported: test accuracy (mean over seeds), time
# per epoch, and trainable-state bytes (gradients + Adam moments + indices).
# Then Stage 2: the SPE models of the first seed merged by weight averaging,
# task arithmetic, TIES (trim, sign election, disjoint mean) and PickIt (TIES
# + spike-rate calibration), each evaluated on every task. Last, conv.sh: SPE
# and its baselines on a conv-LIF-pool network.
set -euo pipefail
bin=$(cd "$1" && pwd)
export PATH="$bin:$PATH"
work=$(mktemp -d "${TMPDIR:-/tmp}/spike-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
seeds=${SEEDS:-"1 2 3"}
taskset=${TASKS:-"rotate90 invert permute relabel"}
F=/usr/share/datasets/fashion-mnist
attr() { nk-data info "$1" --format tsv | awk -F'\t' -v k="$2" '$1=="attribute" && $2==k {print $7}'; }
nk-data -q import-idx "$F/train-images-idx3-ubyte.gz" "$F/train-labels-idx1-ubyte.gz" -o "$work/train.h5"
nk-data -q import-idx "$F/t10k-images-idx3-ubyte.gz" "$F/t10k-labels-idx1-ubyte.gz" -o "$work/test.h5"
spike-sft -q --seed 1 pretrain -i "$work/train.h5" --test "$work/test.h5" --epochs 5 -o "$work/base.h5"
echo "base: $(attr "$work/base.h5" test_accuracy) test accuracy on Fashion-MNIST, $(nk-data info "$work/base.h5" --format tsv | awk -F'\t' '$2=="/metrics/epoch_seconds"{print $3}') epochs"
spike-sft -q --seed 1 tasks -i "$work/train.h5" --kinds "$(echo $taskset | tr ' ' ',')" -o "$work/tasks.h5"
printf '%-9s %-7s | %9s %9s | %10s %12s %8s\n' task method "base acc" "acc (mean)" "s/epoch" "state bytes" "vs full"
for task in $taskset; do
  full_bytes=0
  for method in full spe random large lora; do
    sum=0 secs=0 n=0
    for seed in $seeds; do
      spike-sft -q --seed "$seed" spe -i "$work/base.h5" --task "$work/tasks.h5:$task" --method "$method" -o "$work/a.h5"
      [ "$method" = spe ] && [ "$seed" = "$(echo $seeds | cut -d' ' -f1)" ] && cp "$work/a.h5" "$work/spe_$task.h5"
      sum=$(awk -v a="$sum" -v b="$(attr "$work/a.h5" test_accuracy)" 'BEGIN{print a+b}')
      secs=$(awk -v a="$secs" -v b="$(attr "$work/a.h5" epoch_seconds)" 'BEGIN{print a+b}')
      n=$((n + 1))
    done
    bytes=$(attr "$work/a.h5" trainable_state_bytes)
    [ "$method" = full ] && full_bytes=$bytes
    awk -v t="$task" -v m="$method" -v b="$(attr "$work/a.h5" base_accuracy)" -v s="$sum" -v sec="$secs" -v n="$n" -v by="$bytes" -v fb="$full_bytes" 'BEGIN {
      printf "%-9s %-7s | %8.2f%% %8.2f%% | %10.3f %12d %7.1f%%\n", t, m, 100 * b, 100 * s / n, sec / n, by, 100 * by / fb }'
  done
done
echo "goals: q = 5%: state <= 10% of full, time/epoch <= 70% of full, accuracy within 2 points of full; SPE above random and large masks"

# Stage 2: merge the SPE models of the first seed into one model; accuracy of
# the merged model on each task's test split, and the mean.
echo
printf '%-16s |' merge; for task in $taskset; do printf ' %9s' "$task"; done; printf ' | %7s\n' mean
models=$(for task in $taskset; do printf '%s ' "$work/spe_$task.h5"; done)
for method in average task-arithmetic ties pickit; do
  scale=1; [ "$method" = task-arithmetic ] && scale=0.5
  spike-sft -q pickit -i $models --tasks "$work/tasks.h5" --method "$method" --scale "$scale" -o "$work/merged.h5"
  printf '%-16s |' "$method"; sum=0
  for task in $taskset; do
    acc=$(spike-sft -q eval -i "$work/merged.h5" --task "$work/tasks.h5:$task" | awk -F'\t' '$1=="accuracy"{print $2}')
    printf ' %8.2f%%' "$(awk -v a="$acc" 'BEGIN{print 100*a}')"; sum=$(awk -v a="$sum" -v b="$acc" 'BEGIN{print a+b}')
  done
  awk -v s="$sum" -v n="$(echo $taskset | wc -w)" 'BEGIN{printf " | %6.2f%%\n", 100*s/n}'
done
printf '%-16s |' "own SPE models"; sum=0
for task in $taskset; do
  acc=$(spike-sft -q eval -i "$work/spe_$task.h5" --task "$work/tasks.h5:$task" | awk -F'\t' '$1=="accuracy"{print $2}')
  printf ' %8.2f%%' "$(awk -v a="$acc" 'BEGIN{print 100*a}')"; sum=$(awk -v a="$sum" -v b="$acc" 'BEGIN{print a+b}')
done
awk -v s="$sum" -v n="$(echo $taskset | wc -w)" 'BEGIN{printf " | %6.2f%%\n", 100*s/n}'
echo "goal: PickIt's mean at least 1 point above the best merging baseline"

# Training throughput against the same network in PyTorch (Debian's
# python3-torch; `make -f Makefile.dist bench` installs it), 2 threads each,
# 2 epochs on the 60K images; time of the second epoch.
echo
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  spike-sft -q --threads 2 --seed 1 pretrain -i "$work/train.h5" --test "$work/test.h5" --epochs 2 -o "$work/ours.h5"
  ours=$(/usr/bin/python3 -c "import h5py; f=h5py.File('$work/ours.h5','r'); print(f['/metrics/epoch_seconds'][1], f['/metrics/test_accuracy'][1])")
  theirs=$(NK_THREADS=2 /usr/bin/python3 "$(dirname "$0")/torch_snn.py" "$work/train.h5" "$work/test.h5" 2 | tail -1 | awk '{print $3, $7}')
  read -r t_ours a_ours <<< "$ours"
  read -r t_torch a_torch <<< "$theirs"
  awk -v a="$t_ours" -v b="$t_torch" -v aa="$a_ours" -v ab="$a_torch" 'BEGIN {
    printf "throughput, 784-256-10 LIF, T = 8, batch 128, 2 threads: spike-sft %.2f s/epoch (test %.2f%%), PyTorch %.2f s/epoch (test %.2f%%): %.2fx\n", a, 100 * aa, b, 100 * ab, b / a }'
  echo "goal: ours at least 2x faster"
else
  echo "PyTorch comparison skipped (install Debian's python3-torch: make -f Makefile.dist bench does)"
fi

# The same Stage 1 comparison on a convolutional network (conv.sh).
echo
bash "$(dirname "$0")/conv.sh" "$bin"
