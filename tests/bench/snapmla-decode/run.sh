#!/usr/bin/env bash
# run.sh BIN_DIR [OUT_DIR] - snapmla-decode's benchmark, one run (2 threads, nothing else running):
#  A. accuracy: every layout's error against float64 (eval) at N = 1K..32K on the deepseek
#     profile (2 sequences, 16 heads), snapmla644 with both PV modes, plotted against N (plot:
#     error-vs-n.svg); at 32K also with the heavy
#     RoPE channels at 500 and 2000 (the ratio snapmla644 / fp8-naive depends on them) and the iid
#     profile; the goal: snapmla644's error <= 0.2x fp8-naive's at 32K;
#  A2. the shipped MLA model (data/lm/mla.h5, d_c 128 = 8 d_R): perplexity with its cache in each
#     layout on the Debian corpus's validation split (eval --model, WINDOWS windows of 256 tokens,
#     token-by-token decoding checked against teacher forcing), and every layout's attention error
#     on its own caches at the first and last layer (capture | eval); the goal: perplexity within
#     0.5% of bf16;
#  B. the kernel: N 16K and 64K, batch 1 and 8, H 1, 2, 16, 128: ms, tokens/s, GB/s, GFLOP/s per
#     layout and x bf16 (speed); beside it this machine's limits, measured in the same run: the
#     STREAM triad (tests/bench/limits/triad.cpp) and an Eigen SGEMM (tests/bench/limits/sgemm.cpp, 2048^3); and the
#     peer, PyTorch's absorbed decode over a dense float32 cache (torch_decode.py, Debian's torch);
#     goals: snapmla644 >= 1.6x bf16 where bf16 is bandwidth-bound (small H, 64K), >= 0.95x where
#     compute-bound (H 128);
#  C. serving (serve): long outputs under one KV budget, bf16 against snapmla644, at H 2 and 16;
#     goal >= 1.6x tokens/s.
# NS, BS, HS, WINDOWS, BUDGET_MIB, REQUESTS, OUTPUT shrink it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
. "$here/../lib.sh" "$1" snapmla-decode
out=${2:-$root/build/bench/snapmla-decode}
mkdir -p "$out"
PY=/usr/bin/python3
NS=${NS:-"16384 65536"} BS=${BS:-"1 8"} HS=${HS:-"1 2 16 128"}
BUDGET_MIB=${BUDGET_MIB:-32} REQUESTS=${REQUESTS:-64} OUTPUT=${OUTPUT:-1024}
T="--threads 2"
started=$SECONDS

echo "== A. accuracy: relative L2 error of the latent outputs against float64 (eval)"
tables=()
for n in ${NS_ACC:-1024 2048 4096 8192 16384 32768}; do
  snapmla-decode -q $T gen --batch 2 --tokens $n --heads 16 --seed 1 -o "$work/acc.h5"
  echo "-- deepseek profile, N = $n"
  snapmla-decode $T eval -i "$work/acc.h5" -o "$out/eval-$n.h5"
  tables+=("$out/eval-$n.h5")
done
snapmla-decode plot "${tables[@]}" -o "$out/error-vs-n.svg"
echo "error against N per layout: $out/error-vs-n.svg"
for hs in 500 2000; do
  snapmla-decode -q $T gen --batch 2 --tokens 32768 --heads 16 --heavy-scale $hs --seed 1 -o "$work/acc.h5"
  echo "-- deepseek profile, N = 32768, heavy RoPE magnitude $hs"
  snapmla-decode $T eval -i "$work/acc.h5" -o "$out/eval-32768-heavy$hs.h5"
done
snapmla-decode -q $T gen --batch 2 --tokens 32768 --heads 16 --profile iid --seed 1 -o "$work/acc.h5"
echo "-- iid profile, N = 32768"
snapmla-decode $T eval -i "$work/acc.h5" -o "$out/eval-32768-iid.h5"
"$PY" - "$out" <<'PYEOF'
import sys, h5py
out = sys.argv[1]
for name in ["eval-32768", "eval-32768-heavy500", "eval-32768-heavy2000", "eval-32768-iid"]:
    t = h5py.File(f"{out}/{name}.h5")["/table"]
    e = {(l.decode(), p.decode()): v for l, p, v in zip(t["layout"][()], t["pv"][()], t["rel_l2"][()])}
    r = e[("snapmla644", "fp8")] / e[("fp8-naive", "fp8")]
    print(f"goal ({name}): snapmla644 / fp8-naive error = {r:.2f} (<= 0.2: {'yes' if r <= 0.2 else 'NO'})")
PYEOF

echo "== A2. the shipped MLA model: perplexity per layout (eval --model) and its own caches (capture | eval)"
nk-lm -q corpus --threads 2 -o "$work/corpus.h5"
snapmla-decode $T eval --model "$root/data/lm/mla.h5" --corpus "$work/corpus.h5" --windows ${WINDOWS:-256} --check-decode -o "$out/eval-model.h5"
for layer in 0 3; do
  snapmla-decode -q $T capture --model "$root/data/lm/mla.h5" --corpus "$work/corpus.h5" --layer $layer --windows 64 -o "$work/real.h5"
  echo "-- the model's cache at layer $layer (64 windows of 256 tokens, the last token's query)"
  snapmla-decode $T eval -i "$work/real.h5" -o "$out/eval-real-layer$layer.h5"
done
rm -f "$work/corpus.h5" "$work/real.h5"
"$PY" - "$out" <<'PYEOF'
import sys, h5py
t = h5py.File(f"{sys.argv[1]}/eval-model.h5")["/table"]
p = {(l.decode(), v.decode()): x for l, v, x in zip(t["layout"][()], t["pv"][()], t["perplexity"][()])}
for key in [("snapmla644", "fp8"), ("snapmla644", "fp32"), ("fp8-naive", "fp8")]:
    r = 100 * (p[key] / p[("bf16", "fp32")] - 1)
    print(f"goal: {key[0]} ({key[1]} PV) perplexity {r:+.3f}% of bf16 (within 0.5%: {'yes' if abs(r) <= 0.5 else 'NO'})")
PYEOF

echo "== B. the kernel (speed), 2 threads"
g++ -O3 -march=native -fopenmp "$root/tests/bench/limits/triad.cpp" -o "$work/triad"
g++ -O3 -march=native -fopenmp -I/usr/include/eigen3 "$root/tests/bench/limits/sgemm.cpp" -o "$work/sgemm"
triad=$(OMP_NUM_THREADS=2 "$work/triad")
sgemm=$(OMP_NUM_THREADS=2 "$work/sgemm" 2048)
echo "limits: STREAM triad $triad GB/s, SGEMM $sgemm GFLOP/s (2 threads)"
for n in $NS; do
  for b in $BS; do
    for h in $HS; do
      snapmla-decode -q gen --batch "$b" --tokens "$n" --heads "$h" --seed 2 -o "$work/k.h5"
      snapmla-decode -q $T speed -i "$work/k.h5" --repeats 5 -o "$out/speed-$n-$b-$h.h5" > /dev/null
      peer=$("$PY" "$here/torch_decode.py" "$work/k.h5" --threads 2 --repeats 3)
      "$PY" - "$out/speed-$n-$b-$h.h5" "$triad" "$sgemm" "$peer" "$n" "$b" "$h" <<'PYEOF'
import sys, h5py
f, triad, sgemm, peer, n, b, h = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], *sys.argv[5:]
t = h5py.File(f)["/table"]
ps = float(peer.split()[0].split("=")[1])
cells = []
for l, s, gb, gf, x in zip(t["layout"][()], t["seconds"][()], t["gb_per_s"][()], t["gflop_per_s"][()], t["speedup_vs_bf16"][()]):
    cells.append(f"{l.decode()} {s * 1e3:.2f} ms ({gb / triad:.2f} of STREAM, {gf / sgemm:.2f} of SGEMM, {x:.2f}x bf16, {ps / s:.2f}x torch)")
print(f"N {n} B {b} H {h}: " + "; ".join(cells) + f"; torch float32 {ps * 1e3:.2f} ms")
PYEOF
    done
  done
done

echo "== C. serving: $REQUESTS requests of 128 + $OUTPUT tokens under $BUDGET_MIB MiB (bf16 holds about 40% of them at once)"
for h in 2 16; do
  echo "-- H = $h"
  snapmla-decode -q $T --seed 3 serve --budget-mib "$BUDGET_MIB" --requests "$REQUESTS" --output-tokens "$OUTPUT" --heads $h -o "$out/serve-$h.h5"
done
echo "run.sh: $((SECONDS - started)) s"
