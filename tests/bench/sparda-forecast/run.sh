#!/usr/bin/env bash
# sparda-forecast benchmark, in one run:
#  A quality on the shipped causal model (2M parameters; 16-token blocks and
#    top-4 stand in for 64 and top-16 at its 256-token context): per layer the
#    Forecast's recall and coverage beside InfiniGen's (r = 32 = d and r = 8),
#    training time, and the Forecast's share of parameters here and at the
#    bench shapes.
#  A2 inside the sparse-pretrained model (data/lm/sparse-gqa.h5): the Forecast
#    trained on 8 training windows of 4096, its recall and coverage on 2
#    validation windows beside InfiniGen's, then perplexity (WINDOWS, 8) and
#    needle accuracy (NEEDLES, 32) for dense, selector, forecast, infinigen.
#  B decode at the paper's decode shapes (Hq 32, Hkv 8, d 128, D 4096, MLP
#    14336, 4 layers, random weights; top-64 + 32 local blocks of 64 tokens)
#    after N tokens (a synthesised prompt cache), batch 1 and 8: resident (Tc),
#    sync and forecast at a copy cap that makes sync's transfers take Tc
#    (Tx = Tc, the bound (Tc + Tx) / max(Tc, Tx) = 2); median step times,
#    copies, hit rates, selection time per step (the selector's Hq heads
#    against one Forecast head per group), and the machine's floor for a step
#    (the model's float32 weights over the STREAM triad bandwidth); prefill of
#    the prompt's last 256 tokens (chunks of 128) per mode at Tx = Tc.
#  C capacity: one device memory that holds resident's KV of 2 sequences at
#    32K; resident at batch 2 against forecast at batch 8 through a device
#    pool of that size; tokens/s.
# Sizes: SIZES (default "32768 65536"), STEPS (8), PREFILL (256); A=0 (A and
# A2), B=0 and C=0 skip parts.
. "$(dirname "$0")/../lib.sh" "$1" sparda-bench
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../.." && pwd)
PY=/usr/bin/python3
sizes=${SIZES:-"32768 65536"}
steps=${STEPS:-8}
M="$src/data/lm/causal.h5"
stat() { $PY -c "import h5py, sys; print(h5py.File(sys.argv[1])['stats/' + sys.argv[2]][0])" "$1" "$2"; }
# Medians over the warm steps (the first finds the device pool empty).
median() { $PY -c "import h5py, numpy as np, sys; s = h5py.File(sys.argv[1])['stats/' + (sys.argv[2] if len(sys.argv) > 2 else 'step_seconds')][1:]; print(float(np.median(s)))" "$@"; }

if [ "${A:-1}" = 1 ]; then
echo "== A. quality: the shipped causal model on Debian's fortunes (validation split), blocks of 16, top-4"
nk-lm -q corpus --source fortunes --tokenizer "$M" -o "$work/fc.h5"
nk-lm -q capture -m "$M" --corpus "$work/fc.h5" -o "$work/cap.h5"
t0=$EPOCHREALTIME
sparda-forecast -q train -i "$work/cap.h5" --block 16 --topk 4 --seed 1 -o "$work/f.h5"
echo "  train: $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s (300 Adam steps per layer, 4 layers, 2 threads)"
sparda-forecast -q eval -i "$work/cap.h5" --forecast "$work/f.h5" --block 16 --topk 4 -o "$work/ef.h5" > /dev/null
sparda-forecast -q eval -i "$work/cap.h5" --by infinigen --rank 32 --block 16 --topk 4 -o "$work/ei32.h5" > /dev/null
sparda-forecast -q eval -i "$work/cap.h5" --by infinigen --rank 8 --block 16 --topk 4 -o "$work/ei8.h5" > /dev/null
$PY - "$work" <<'PYEOF'
import h5py, sys
w = sys.argv[1]
f, i32, i8 = [h5py.File(f"{w}/{n}.h5") for n in ("ef", "ei32", "ei8")]
print(f"  {'layer':<6} {'Forecast recall':>15} {'coverage':>9} | {'InfiniGen r=32':>14} {'coverage':>9} | {'InfiniGen r=8':>13} {'coverage':>9} | queries")
for l in range(len(f["recall"])):
    print(f"  {l:<6} {f['recall'][l]:>15.3f} {f['coverage'][l]:>9.4f} | {i32['recall'][l]:>14.3f} {i32['coverage'][l]:>9.4f} | "
          f"{i8['recall'][l]:>13.3f} {i8['coverage'][l]:>9.4f} | {f['queries'][l]}")
print(f"  mean   {f.attrs['mean_recall']:>15.3f} {f.attrs['mean_coverage']:>9.4f} | {i32.attrs['mean_recall']:>14.3f} "
      f"{i32.attrs['mean_coverage']:>9.4f} | {i8.attrs['mean_recall']:>13.3f} {i8.attrs['mean_coverage']:>9.4f}")
print("  goals: recall >= 0.9, coverage >= 0.95")
# The Forecast's parameters: L x D x Hkv d, against the model's.
def share(L, D, Hq, Hkv, d, ff, V, tied=True):
    layer = D * (Hq * d) + 2 * D * (Hkv * d) + (Hq * d) * D + 3 * D * ff + 2 * D
    model = L * layer + V * D * (1 if tied else 2) + D
    return L * D * Hkv * d / model
print(f"  Forecast parameters: {100 * share(4, 192, 6, 2, 32, 512, 2048):.2f}% of the shipped model; "
      f"{100 * share(4, 4096, 32, 8, 128, 14336, 512):.2f}% at the bench shapes (4 layers)")
PYEOF

echo
echo "== A2. inside the sparse-pretrained model (data/lm/sparse-gqa.h5: 4096-token context, blocks of 32, top-8)"
S="$src/data/lm/sparse-gqa.h5"
nk-lm -q corpus --tokenizer "$S" -o "$work/sc.h5"
nk-lm -q capture -m "$S" --corpus "$work/sc.h5" --split train --stream --max-rows 8 -o "$work/scap.h5"
nk-lm -q capture -m "$S" --corpus "$work/sc.h5" --stream --max-rows 2 -o "$work/svcap.h5"
sparda-forecast -q train -i "$work/scap.h5" --block 32 --topk 8 --seed 1 -o "$work/sf.h5"
sparda-forecast -q eval -i "$work/svcap.h5" --forecast "$work/sf.h5" --block 32 --topk 8 -o "$work/sef.h5" > /dev/null
sparda-forecast -q eval -i "$work/svcap.h5" --by infinigen --block 32 --topk 8 -o "$work/sei.h5" > /dev/null
t0=$EPOCHREALTIME
sparda-forecast -q eval --model "$S" --forecast "$work/sf.h5" --corpus "$work/sc.h5" --windows ${WINDOWS:-8} --needles ${NEEDLES:-32} -o "$work/sem.h5" > /dev/null
echo "  eval --model: $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }') s"
$PY - "$work" <<'PYEOF'
import h5py, sys
w = sys.argv[1]
f, i = h5py.File(f"{w}/sef.h5"), h5py.File(f"{w}/sei.h5")
print("  blocks on 2 validation windows of 4096 (the model's own q, k): recall / coverage per layer")
print("    Forecast  " + "  ".join(f"{r:.3f}/{c:.4f}" for r, c in zip(f["recall"][...], f["coverage"][...])))
print("    InfiniGen " + "  ".join(f"{r:.3f}/{c:.4f}" for r, c in zip(i["recall"][...], i["coverage"][...])))
m = h5py.File(f"{w}/sem.h5")
names = [x.decode() if isinstance(x, bytes) else x for x in m["model/methods"][...]]
ppl, acc, lp = m["model/perplexity"][...], m["model/needle_accuracy"][...], m["model/needle_answer_logprob"][...]
sel = names.index("selector")
print(f"  {'method':<10} {'perplexity':>10} {'vs selector':>11} | {'needle acc':>10} {'vs selector':>11} {'answer logp':>11}")
for k, n in enumerate(names):
    print(f"  {n:<10} {ppl[k]:>10.3f} {100 * (ppl[k] / ppl[sel] - 1):>+10.2f}% | {acc[k]:>10.3f} {100 * (acc[k] - acc[sel]):>+10.1f}pt {lp[k]:>11.3f}")
print(f"  ({m.attrs['windows']} validation windows of {m.attrs['window']}; {m.attrs['needles']} needle documents; "
      "goals: forecast perplexity within 1% and needle accuracy within 2 points of the selector)")
PYEOF

fi

if [ "${B:-1}" = 1 ]; then
echo
echo "== B. decode at the paper's shapes (random weights, 872M parameters), top-64 + 32 local blocks of 64"
g++ -O3 -march=native -fopenmp "$src/tests/bench/limits/triad.cpp" -o "$work/triad"
triad=$(OMP_NUM_THREADS=2 "$work/triad")
echo "  memory bandwidth (STREAM triad, 2 threads): $triad GB/s; a step streams 3.49 GB of float32 weights: floor $(awk -v b="$triad" 'BEGIN { printf "%.0f", 3.488e9 / (b * 1e9) * 1e3 }') ms"
SEL="--topk 64 --local-blocks 32 --init-blocks 1 --block 64"
printf '  %-6s %-5s | %9s | %9s %9s %6s | %9s %9s %7s %8s %6s | %6s %7s | %8s %8s\n' N batch "Tc ms" "sync ms" "Tx ms" "GB/s" "fcast ms" "speedup" "bound" "bound L4" share "MiB/st" "hit %" "sel ms" "fsel ms"
for n in $sizes; do
  for b in 1 8; do
    # The host pools of batch 8 at 64K (17 GB) and the weights pass this machine's memory: skipped.
    if [ "$b" -gt 1 ] && [ "$n" -gt 40000 ]; then printf '  %-6s %-5s | skipped: %s GB of host KV pools beside 3.5 GB of weights\n' "$n" "$b" "$(( n * b * 4 * 8 * 128 * 2 * 4 / 1000000000 ))"; continue; fi
    # A device pool of 2.5 layers' selections: each layer's blocks are evicted by
    # the next ones', so every step fetches what it selects (KV offloaded).
    common="--bench-shapes --prompt-tokens $n --batch $b --steps $steps $SEL --device-mem $(( 5 * b * 8 * 97 * 64 / 1024 / 2 ))"
    sparda-forecast -q decode $common --mode resident -o "$work/res.h5"
    sparda-forecast -q decode $common --mode sync --bandwidth 0 -o "$work/sync0.h5"
    tc=$(median "$work/res.h5")
    bytes=$(median "$work/sync0.h5" step_bytes)
    bw=$(awk -v x="$bytes" -v t="$tc" 'BEGIN { printf "%.6f", x / t / 1e9 }')   # GB/s: Tx = Tc
    sparda-forecast -q decode $common --mode sync --bandwidth "$bw" -o "$work/sync.h5"
    sparda-forecast -q decode $common --mode forecast --bandwidth "$bw" -o "$work/fc.h5"
    $PY - "$work" "$n" "$b" "$tc" "$bw" <<'PYEOF'
import h5py, numpy as np, sys
w, n, b, tc, bw = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
s, f = h5py.File(f"{w}/sync.h5"), h5py.File(f"{w}/fc.h5")
steps = s.attrs["steps"]
ts, tf = [float(np.median(x["stats/step_seconds"][1:])) for x in (s, f)]
warm_bytes = float(np.median(s["stats/step_bytes"][1:]))
tx = warm_bytes / (bw * 1e9)
bound = (tc + tx) / max(tc, tx)
# Layer 0 has nothing before it to forecast from: its blocks cross at the layer, so with L layers
# lookahead hides at most (L - 1) / L of the transfers: 4 here, 32 or more in the paper's models.
L = 4
bound_l = (tc + tx) / (max(tc, tx * (L - 1) / L) + tx / L)
speed = ts / tf
hit = s["stats/hits"][0] / max(1, s["stats/requested"][0])
link = s["stats/bytes"][0] / s["stats/copy_busy_seconds"][0] / 1e9
print(f"  {n:<6} {b:<5} | {1e3 * tc:>9.1f} | {1e3 * ts:>9.1f} {1e3 * tx:>9.1f} {bw:>6.3f} | {1e3 * tf:>9.1f} {speed:>8.2f}x {bound:>6.2f}x {bound_l:>7.2f}x "
      f"{(speed - 1) / (bound - 1) if bound > 1 else float('nan'):>6.0%} | {warm_bytes / 2**20:>6.1f} {100 * hit:>6.1f}% | "
      f"{1e3 * s['stats/select_seconds'][0] / steps:>8.1f} {1e3 * f['stats/select_seconds'][0] / steps:>8.1f} | link {link:.3f} GB/s while busy ({100 * (link / bw - 1):+.1f}% of the cap)")
sc, fsc, fpr = (1e3 * x / steps for x in (s['stats/score_seconds'][0], f['stats/score_seconds'][0], f['stats/project_seconds'][0]))
print(f"  {'':<12} | scoring a step: selector {sc:.1f} ms ({s.attrs.get('parameters', 0) and 32} heads), Forecast {fsc:.1f} ms (8 heads): "
      f"{sc / fsc if fsc > 0 else float('nan'):.2f}x; the Forecast's projection {fpr:.1f} ms a step (inside the QKV GEMM in the paper)")
PYEOF
  done
done
# Prefill: the prompt's last PREFILL tokens (default 256) prefilled in chunks of 128 after a synthesised
# cache, batch 1; the link capped so that sync's prefill transfers take resident's prefill time (Tx = Tc).
echo "  prefill (batch 1, the last ${PREFILL:-256} tokens of the prompt in chunks of 128; a device pool of 640 MiB):"
printf '  %-6s | %11s | %11s %9s %7s | %11s %8s\n' N "resident s" "sync s" "MiB" "GB/s" "forecast s" speedup
for n in $sizes; do
  pre="--bench-shapes --prompt-tokens $n --prefill-tokens ${PREFILL:-256} --chunk 128 --steps 1 $SEL --device-mem 640"
  sparda-forecast -q decode $pre --mode resident -o "$work/pres.h5"
  sparda-forecast -q decode $pre --mode sync --bandwidth 0 -o "$work/psync0.h5"
  bw=$($PY -c "import h5py, sys; a, b = h5py.File(sys.argv[1]), h5py.File(sys.argv[2]); print(b['stats/prefill_bytes'][0] / a['stats/prefill_seconds'][0] / 1e9)" "$work/pres.h5" "$work/psync0.h5")
  sparda-forecast -q decode $pre --mode sync --bandwidth "$bw" -o "$work/psync.h5"
  sparda-forecast -q decode $pre --mode forecast --bandwidth "$bw" -o "$work/pfc.h5"
  $PY - "$work" "$n" "$bw" <<'PYEOF'
import h5py, sys
w, n, bw = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
r, s, f = (h5py.File(f"{w}/{x}.h5")["stats"] for x in ("pres", "psync", "pfc"))
print(f"  {n:<6} | {r['prefill_seconds'][0]:>11.2f} | {s['prefill_seconds'][0]:>11.2f} {s['prefill_bytes'][0] / 2**20:>9.1f} {bw:>7.4f} | "
      f"{f['prefill_seconds'][0]:>11.2f} {s['prefill_seconds'][0] / f['prefill_seconds'][0]:>7.2f}x")
PYEOF
done
echo "  prefill speedup = sync / forecast prefill time at Tx = Tc (goal >= 1.2x; paper 1.25x over real PCIe, where Tx < Tc)"
echo "  speedup = sync / forecast step (goal >= 1.5x at Tx ~ Tc, paper 1.7x); share = (speedup - 1) / (bound - 1) (goal >= 75% of the bound's gain);"
echo "  bound L4 = the bound when layer 0's blocks cross at the layer, as they must (nothing precedes it), with 4 layers"
echo "  sel / fsel: selection per step, the selector's 32 heads vs the Forecast's 8 (one per group) plus its projection (goal speedup >= 0.8 G = 3.2)"
fi

if [ "${C:-1}" = 1 ]; then
  echo
  echo "== C. capacity at one device memory: resident's KV of 2 sequences at 32K (2.0 GiB)"
  n=32768
  devmib=$(( 2 * n * 4 * 8 * 128 * 2 * 4 / 1048576 ))
  common="--bench-shapes --prompt-tokens $n --steps $steps $SEL"
  sparda-forecast -q decode $common --batch 2 --mode resident -o "$work/cres.h5"
  sparda-forecast -q decode $common --batch 8 --mode sync --bandwidth 0 --device-mem "$devmib" -o "$work/csync0.h5"
  tc=$(median "$work/cres.h5")
  bytes=$(median "$work/csync0.h5" step_bytes)
  tc8=$(median "$work/csync0.h5")
  bw=$(awk -v x="$bytes" -v t="$tc8" 'BEGIN { printf "%.6f", x / t / 1e9 }')
  sparda-forecast -q decode $common --batch 8 --mode forecast --bandwidth "$bw" --device-mem "$devmib" -o "$work/cfc.h5"
  sparda-forecast -q decode $common --batch 8 --mode sync --bandwidth "$bw" --device-mem "$devmib" -o "$work/csync.h5"
  $PY - "$work" "$devmib" <<'PYEOF'
import h5py, numpy as np, sys
w, dev = sys.argv[1], int(sys.argv[2])
rows = [("resident, batch 2 (its KV fills the device)", "cres", 2), ("sync offload, batch 8", "csync", 8), ("forecast, batch 8", "cfc", 8)]
base = None
for name, f, b in rows:
    step = float(np.median(h5py.File(f"{w}/{f}.h5")["stats/step_seconds"][1:]))
    tps = b / step
    base = base or tps
    print(f"  {name:<46} {1e3 * step:8.1f} ms a step  {tps:6.2f} tokens/s  {tps / base:5.2f}x")
print(f"  device memory {dev} MiB; the offload modes copy at the cap where sync's batch-8 transfers take its compute time;")
print("  goal: forecast at batch >= 8 with >= 2x resident's tokens/s (paper 5.3x)")
PYEOF
fi
