#!/usr/bin/env bash
# run.sh BIN_DIR [OUT_DIR] - sae-buffer's benchmark, one run (2 threads, nothing else running):
#  1. throughput: TopK at n = 16 m, batch 4096, m = 128 (synthetic), ours
#     against SAELens (PyPI, torch CPU, the same SAE, activations preloaded;
#     saelens_step.py steps it as SAETrainer does), and ours as a share of the
#     machine's SGEMM rate on the encoder's shape (torch/MKL, the best this
#     CPU gives; the encoder GEMM bounds the step);
#  2. the (U, B) grid, fit and sizing rule on synthetic activations (m = 128,
#     F = 2048) and on nk-lm's shipped model at three layers (early, middle,
#     last; TopK), BatchTopK and JumpReLU at the middle layer; per grid:
#     U_min at 1% (law and measured), B/U_min, held-out EV / probe F1 /
#     absorption fresh vs at U_min, R*, the median held-out error of the law,
#     power_b and power_ub; OUT_DIR/fit-*.svg.
#  Each source's learning rate is the best held-out EV of fresh training at
#  the largest budget over LRS (default 1e-3, 4e-3, 1e-2), chosen in the run
#  (synthetic; nk-lm's middle layer, TopK, for every nk-lm grid).
# Trimmed to 2 cores (printed below): n = 8 m in the nk-lm grids (n = F = 16 m in the synthetic one), batch 1024,
# U 2^10..2^20 in steps of 2x, B 2^16..2^20 in steps of 4x (the issue asks up to 2^22).
# GRID_MAX (default 20) lowers the largest U and B for a quick run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
. "$here/../lib.sh" "$1" sae-buffer
out=${2:-$root/build/bench/sae-buffer}
mkdir -p "$out"
PY=/usr/bin/python3
PYV=$(bash "$here/venv.sh" | tail -1)
LM="$root/data/lm/causal.h5"
max=${GRID_MAX:-20}
pow2() { local list="" e; for e in "$@"; do [ "$e" -le "$max" ] && list="$list${list:+,}$((1 << e))"; done; echo "$list"; }
buffers=$(pow2 10 11 12 13 14 15 16 17 18 19 20)
budgets=$(pow2 16 18 20)
T="--threads 2"

echo "== throughput: TopK, m = 128, n = 2048, k = 32, batch 4096, 2 threads"
sae-buffer -q gen $T --dim 128 --features 2048 --active 16 --rows 65536 --seed 1 -o "$work/tp.h5"
sae-buffer -q train $T -i "$work/tp.h5" --buffer 65536 --budget 327680 --latents 2048 --k 32 --batch 4096 -o "$work/tp_sae.h5"
ours=$($PY -c "import h5py; print(round(h5py.File('$work/tp_sae.h5')['/train'].attrs['samples_per_second']))")
peer=$("$PYV" "$here/saelens_step.py" "$work/tp.h5" --latents 2048 --k 32 --batch 4096 --steps 20 --threads 2 2>/dev/null |
  sed -n 's/^samples_per_second=\([0-9.]*\).*/\1/p')
peer_sparse=$("$PYV" "$here/saelens_step.py" "$work/tp.h5" --latents 2048 --k 32 --batch 4096 --steps 20 --threads 2 --sparse 2>/dev/null |
  sed -n 's/^samples_per_second=\([0-9.]*\).*/\1/p' || true)
sgemm=$("$PYV" - <<'PYEOF'
import time, torch
torch.set_num_threads(2)
a, w = torch.randn(4096, 128), torch.randn(2048, 128)
for _ in range(3): a @ w.T
best = 1e9
for _ in range(10):
    t = time.perf_counter(); a @ w.T; best = min(best, time.perf_counter() - t)
print(2 * 4096 * 128 * 2048 / best / 1e9)
PYEOF
)
$PY - "$ours" "${peer:-0}" "${peer_sparse:-}" "$sgemm" <<'PYEOF'
import sys
ours, peer, sparse, sgemm = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3], float(sys.argv[4])
flop = 2 * 128 * 2048  # the encoder GEMM per sample
print(f"| system | samples/s | vs SAELens | encoder GFLOP/s | share of SGEMM ({sgemm:.0f} GFLOP/s) |")
print("|---|---|---|---|---|")
print(f"| sae-buffer train | {ours:.0f} | {ours / peer:.2f}x | {ours * flop / 1e9:.1f} | {ours * flop / 1e9 / sgemm:.0%} |")
print(f"| SAELens 6.54 TopKTrainingSAE (dense) | {peer:.0f} | 1.00x | {peer * flop / 1e9:.1f} | {peer * flop / 1e9 / sgemm:.0%} |")
print(f"| SAELens, use_sparse_activations | " + (f"{float(sparse):.0f} |" if sparse else "fails on the CPU (sparse op missing) |"))
PYEOF

summarise() {  # NAME GRID FIT SIZE: one table row from the grid, fit and size files
  $PY - "$@" <<'PYEOF'
import sys, h5py, numpy as np
name, grid, fit, size = sys.argv[1:5]
g = h5py.File(grid)["/grid"]; f = h5py.File(fit)["/fit"]; s = h5py.File(size).attrs
U, B, ev, f1, ab = (g[k][()] for k in ["U", "B", "heldout_ev", "probe_f1", "absorption"])
Bmax = B.max(); fresh = (U == Bmax) & (B == Bmax)
um = int(s.get("measured_U_min", -1)); at = (U == um) & (B == Bmax)
def pair(col):
    if not fresh.any() or not at.any() or np.isnan(col[fresh][0]): return "-"
    return f"{col[fresh][0]:.3f} / {col[at][0]:.3f}"
red = Bmax / um if um > 0 else float("nan")
l0 = g["l0"][()]
print(f"| {name} | {pair(l0)} | {s['U_min']} | {s['reduction']:.1f}x | {um} | {red:.1f}x | {pair(ev)} | {pair(f1)} | {pair(ab)} | "
      f"{f['law'].attrs['Rstar']:.3g} | {f['law'].attrs['median_rel_err']:.3f} | {f['power_b'].attrs['median_rel_err']:.3f} | "
      f"{f['power_ub'].attrs['median_rel_err']:.3f} |")
PYEOF
}

summarise_domain() {  # NAME FIT: the law and power-law errors with --min-buffer
  $PY - "$@" <<'PYEOF'
import sys, h5py
name, fit = sys.argv[1:3]
f = h5py.File(fit); a = f.attrs
err = lambda k: f"{f['fit'][k].attrs['median_rel_err']:.3f}"
print(f"| {name} | {int(a['min_buffer'])} | {a['fit_points']} | {a['scored_points']} | {f['fit/law'].attrs['Rstar']:.3g} | "
      f"{err('law')} | {err('power_b')} | {err('power_ub')} |")
PYEOF
}

run_grid() {  # NAME INPUT GRID-OPTIONS...: grid, fit (SVG), size at the largest budget
  local name=$1 input=$2; shift 2
  local start=$SECONDS
  sae-buffer -q grid $T -i "$input" --buffers "$buffers" --budgets "$budgets" --batch 1024 "$@" -o "$work/grid-$name.h5"
  sae-buffer -q fit -i "$work/grid-$name.h5" --plot "$out/fit-$name.svg" -o "$work/fit-$name.h5"
  # the same fit without the memorisation regime: U >= n m / k
  local u0
  u0=$($PY -c "import h5py; f = h5py.File('$work/grid-$name.h5'); print(int(f['/grid/latents'][0]) * int(f.attrs['dim']) // int(f.attrs['k']))")
  sae-buffer -q fit -i "$work/grid-$name.h5" --min-buffer "$u0" -o "$work/fitdom-$name.h5"
  sae-buffer -q size --fit "$work/fit-$name.h5" --budget "$((1 << max))" --grid "$work/grid-$name.h5" -o "$work/size-$name.h5" > /dev/null
  cp "$work/grid-$name.h5" "$work/fit-$name.h5" "$work/fitdom-$name.h5" "$out/"
  rows+=("$(summarise "$name" "$work/grid-$name.h5" "$work/fit-$name.h5" "$work/size-$name.h5")")
  dom+=("$(summarise_domain "$name" "$work/fitdom-$name.h5")")
  echo "   $name: $((SECONDS - start)) s" >&2
}

best_lr() {  # NAME INPUT HELDOUT-OPTIONS -- TRAIN-OPTIONS...: prints the LRS value with the best fresh held-out EV at B = 2^max
  local name=$1 input=$2 held=() best="" best_ev=-1 lr ev
  shift 2
  while [ "$1" != "--" ]; do held+=("$1"); shift; done
  shift
  for lr in ${LRS:-1e-3 4e-3 1e-2}; do
    sae-buffer -q train $T -i "$input" --buffer "$((1 << max))" --budget "$((1 << max))" --batch 1024 --lr "$lr" "$@" -o "$work/lr.h5"
    sae-buffer -q eval $T -i "$work/lr.h5" "${held[@]}" -o "$work/lr-ev.h5"
    ev=$($PY -c "import h5py; print(h5py.File('$work/lr-ev.h5').attrs['ev'])")
    echo "   $name: lr $lr, fresh B = 2^$max: held-out EV $ev" >&2
    if $PY -c "import sys; sys.exit(0 if $ev > $best_ev else 1)"; then best=$lr; best_ev=$ev; fi
  done
  echo "$best"
}

echo
echo "== grids: U in {$buffers}, B in {$budgets}, batch 1024, n = 8 m (trimmed to 2 cores)"
rows=()
dom=()
sae-buffer -q gen $T --dim 128 --features 2048 --active 16 --rows 16384 --seed 2 -o "$work/syn.h5"
sae-buffer -q gen $T --dim 128 --features 2048 --active 16 --rows 16384 --seed 2 --first-row $((1 << 50)) -o "$work/syn-held.h5"  # the grid's held-out rows
lr=$(best_lr synthetic "$work/syn.h5" --acts "$work/syn-held.h5" -- --latents 2048 --k 16)
echo "   synthetic: learning rate $lr"
run_grid synthetic-topk "$work/syn.h5" --latents 2048 --k 16 --heldout-rows 16384 --lr "$lr"  # n = F: one latent per true feature

nk-lm -q corpus $T --tokenizer "$LM" -o "$work/corpus.h5"
nk-lm -q capture $T -m "$LM" --corpus "$work/corpus.h5" --split train --shard 0/14 --layers 1,2,4 --resid-only -o "$work/train.h5"
nk-lm -q capture $T -m "$LM" --corpus "$work/corpus.h5" --split validation --layers 1,2,4 --resid-only -o "$work/held.h5"
sae-buffer -q labels -i "$work/held.h5" -m "$LM" -o "$work/labels_full.h5"
# the grid scores the first 16384 held-out rows: their labels
$PY - "$work/labels_full.h5" "$work/labels.h5" <<'PYEOF'
import sys, h5py
src = h5py.File(sys.argv[1])
with h5py.File(sys.argv[2], "w") as f:
    for k, v in src.attrs.items(): f.attrs[k] = v
    for d in ["pos", "first_letter"]: f[f"labels/{d}"] = src[f"labels/{d}"][:16384]
PYEOF
lr=$(best_lr nk-lm "$work/train.h5" --acts "$work/held.h5" --hook middle --rows 16384 -- --hook middle --latents 1536 --k 32)
echo "   nk-lm: learning rate $lr"
LMG="--latents 1536 --k 32 --heldout $work/held.h5 --heldout-rows 16384 --labels $work/labels.h5 --lr $lr"
for layer in early middle last; do
  run_grid "nk-lm-$layer-topk" "$work/train.h5" --hook $layer $LMG
done
run_grid nk-lm-middle-batchtopk "$work/train.h5" --hook middle --arch batchtopk $LMG
run_grid nk-lm-middle-jumprelu "$work/train.h5" --hook middle --arch jumprelu $LMG

echo
echo "== the rule at B = 2^$max, tolerance 1% (EV, probe F1, absorption: fresh / at the measured U_min)"
echo "| grid | L0 | U_min (law) | B/U_min (law) | U_min (measured) | B/U_min (measured) | held-out EV | probe F1 (5 latents) | absorption | R* | law err | power_b err | power_ub err |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
echo "== the fits without the memorisation regime (fit --min-buffer n m / k)"
echo "| grid | U0 | fitted points | scored held-out points | R* | law err | power_b err | power_ub err |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s\n' "${dom[@]}"
echo "SVGs and grid/fit files in $out"
