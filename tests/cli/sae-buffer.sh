# sae-buffer.sh - gen | train | eval through files and pipes; every encoding
# and metric recomputed in numpy from the saved weights; usage counts; an
# easy source recovered; a 6-point grid at m = 32, its shards merged, fit and
# size (against a Python bisection); nk-lm capture | labels | eval --labels;
# bad input.
. "$(dirname "$0")/lib.sh"

SB="sae-buffer -q"
check "gen | train through a pipe" sh -c "sae-buffer -q gen --dim 16 --features 64 --rows 2000 --seed 1 -o - | $SB train -i - --buffer 500 --budget 2000 --latents 64 --k 4 --batch 128 -o piped.h5"
check "gen training and held-out rows (same dictionary)" sh -c "$SB gen --dim 32 --features 256 --active 6 --rows 30000 --seed 3 -o acts.h5 && $SB gen --dim 32 --features 256 --active 6 --rows 4000 --seed 3 --first-row 1000000000 -o held.h5"
for arch in topk batchtopk jumprelu; do
  check "train $arch" $SB train -i acts.h5 --arch $arch --buffer 4096 --budget 65536 --latents 128 --k 6 --batch 256 --lr 3e-3 --seed 2 -o sae_$arch.h5
  check "eval $arch" $SB eval -i sae_$arch.h5 --acts held.h5 --truth held.h5 -o ev_$arch.h5
done

"$PY" - <<'PYEOF'
import h5py, numpy as np, os, sys
sys.path.insert(0, os.environ["NK_SOURCE"] + "/tests/cli")
from nk_check import report, finish
x = h5py.File("held.h5")["/acts"][()].astype(np.float64)
truth = h5py.File("held.h5")["/truth/dictionary"][()].astype(np.float64)
for arch in ["topk", "batchtopk", "jumprelu"]:
    f = h5py.File(f"sae_{arch}.h5")
    s = f["/sae"]
    W_enc, b_enc, W_dec, b_dec, thr = (s[k][()].astype(np.float64) for k in ["W_enc", "b_enc", "W_dec", "b_dec", "threshold"])
    k = int(s.attrs["k"])
    report(s.attrs["arch"] == arch and W_enc.shape == (32, 128) and W_dec.shape == (128, 32), f"{arch}: layout /sae/W_enc [m,n], W_dec [n,m]")
    pre = (x - b_dec) @ W_enc + b_enc
    if arch == "topk":
        z = np.zeros_like(pre)
        top = np.argsort(-pre, axis=1, kind="stable")[:, :k]
        rows = np.arange(len(x))[:, None]
        z[rows, top] = np.maximum(pre[rows, top], 0)
    else:
        z = np.where((pre > thr) & (pre > 0), pre, 0)
        if arch == "batchtopk":
            report(np.ptp(thr) == 0 and thr[0] > 0, "batchtopk: one positive threshold, repeated")
    x_hat = z @ W_dec + b_dec
    ev = 1 - ((x - x_hat) ** 2).sum() / ((x - x.mean(0)) ** 2).sum()
    mse = ((x - x_hat) ** 2).mean()
    l0 = (z != 0).sum(1).mean()
    dead = ((z != 0).sum(0) == 0).mean()
    unit = truth / np.linalg.norm(truth, axis=1, keepdims=True)
    dec = W_dec / np.linalg.norm(W_dec, axis=1, keepdims=True)
    best = (unit @ dec.T).max(1)
    e = h5py.File(f"ev_{arch}.h5")
    a = e.attrs
    for name, ref in [("ev", ev), ("mse", mse), ("l0", l0), ("dead_fraction", dead), ("mmcs", best.mean()), ("recovered", (best >= 0.9).mean())]:
        report(abs(a[name] - ref) <= 2e-4 * max(1, abs(ref)), f"{arch}: {name} {a[name]:.6g} = numpy {ref:.6g}")
    report(np.allclose(np.linalg.norm(W_dec, axis=1), 1, atol=1e-5), f"{arch}: decoder rows have unit norm")
    t = f["/train"]
    usage, rows = t["usage"][()], t["buffer_rows"][()]
    report(usage.sum() == 65536 and usage.max() - usage.min() <= 1 and len(rows) == 4096, f"{arch}: usage sums to B, max - min <= 1")
    report(np.all(np.diff(rows) > 0), f"{arch}: buffer rows distinct and sorted")
    if arch == "topk":
        report(ev > 0.6, f"topk: held-out EV {ev:.3f} > 0.6")
    if arch == "jumprelu":
        report(2 <= l0 <= 12, f"jumprelu: L0 {l0:.2f} steered near k = 6")
finish()
PYEOF
[ $? -eq 0 ] && pass "encodings and metrics equal numpy" || fail "encodings and metrics equal numpy"

check "an easy source" sh -c "$SB gen --dim 32 --features 64 --active 3 --rows 20000 --seed 1 -o easy.h5 && $SB train -i easy.h5 --buffer 20000 --budget 300000 --latents 128 --k 3 --batch 256 --lr 1e-2 -o easy_sae.h5 && $SB eval -i easy_sae.h5 --acts easy.h5 --truth easy.h5 -o easy_ev.h5"
"$PY" -c "import h5py,sys; r=h5py.File('easy_ev.h5').attrs['recovered']; print(r); sys.exit(int(r < 0.8))" >/dev/null && pass "easy source: recovered >= 0.8" || fail "easy source: recovered < 0.8"

GRID="--buffers 1024,4096,16384 --budgets 1024,4096,16384 --latents 128 --k 6 --batch 128 --lr 3e-3 --heldout-rows 4000"
check "grid: 6 points at m = 32" $SB grid -i acts.h5 $GRID --seed 5 -o grid.h5
check "grid in two shards" sh -c "$SB grid -i acts.h5 $GRID --seed 5 --shard 1/2 -o g1.h5 && $SB grid -i acts.h5 $GRID --seed 5 --shard 0/2 -o g0.h5 && nk-data -q merge g1.h5 g0.h5 -o merged.h5"
check "merged shards equal the whole grid" sh -c 'for d in U B heldout_ev heldout mmcs; do h5diff grid.h5 merged.h5 /grid/$d /grid/$d || exit 1; done'
check "fit" $SB fit -i grid.h5 -o fit.h5 --plot fit.svg
check "fit's SVG" grep -q "held-out EV" fit.svg
check "size --grid" sh -c "$SB size --fit fit.h5 --budget 16384 --grid grid.h5 -o size.h5 > size.tsv"
"$PY" - <<'PYEOF'
import h5py, math, sys
f = h5py.File("fit.h5")["/fit/law"].attrs
E, A, alpha, R = f["E"], f["A"], f["alpha"], f["Rstar"]
def ev(U, B):
    d = U * (1 + R * (1 - math.exp(-(B / U - 1) / R)))
    return 1 - (E + A * d ** -alpha)
B = 16384
target = 0.99 * ev(B, B)
lo, hi = 1, B
while lo < hi:  # smallest U with ev >= target
    mid = (lo + hi) // 2
    if ev(mid, B) >= target: hi = mid
    else: lo = mid + 1
s = h5py.File("size.h5").attrs
ok = s["U_min"] == lo and abs(s["reduction"] - B / lo) < 1e-9 and s["bytes_saved"] == (B - lo) * 32 * 4 and "measured_U_min" in s
print(("ok   " if ok else "FAIL ") + f"size: U_min {s['U_min']} = Python bisection {lo}")
g = h5py.File("grid.h5")["/grid"]
ok2 = len(g["U"]) == 6 and g["heldout"][()].sum() == 2 and all(g["B"][()] >= g["U"][()])
print(("ok   " if ok2 else "FAIL ") + "grid: 6 points with B >= U, 2 held out")
sys.exit(0 if ok and ok2 else 1)
PYEOF
[ $? -eq 0 ] && pass "size equals a Python bisection" || fail "size equals a Python bisection"
check "size prints a TSV table" grep -q "^budget	tolerance	U_min" size.tsv
check "fit --min-buffer at the smallest U" $SB fit -i grid.h5 --min-buffer 1024 -o fit_all.h5
"$PY" - <<'PYEOF'
import h5py, numpy as np, sys
a, b = h5py.File("fit.h5"), h5py.File("fit_all.h5")
same = all(np.array_equal(a[f"/fit/{k}/predicted"][()], b[f"/fit/{k}/predicted"][()]) for k in ["law", "power_b", "power_ub"])
counts = (b.attrs["fit_points"], b.attrs["scored_points"], b.attrs["min_buffer"])
print(("ok   " if same else "FAIL ") + "fit --min-buffer 1024 (every U) equals the default fit")
print(("ok   " if counts == (4, 2, 1024) else "FAIL ") + f"fit_points, scored_points, min_buffer = {counts}")
sys.exit(0 if same and counts == (4, 2, 1024) else 1)
PYEOF
[ $? -eq 0 ] && pass "fit --min-buffer keeps every point at U0 = the smallest U" || fail "fit --min-buffer keeps every point at U0 = the smallest U"
expect_fail "fit --min-buffer leaving 3 points" 3 "at least 4 points" $SB fit -i grid.h5 --min-buffer 2048 -o o.h5

# Real activations: nk-lm's shipped model over a little text, labelled by WordNet.
head -c 60000 /usr/share/games/fortunes/fortunes > text.txt
check "nk-lm corpus of fortunes (the model's tokenizer)" nk-lm -q corpus --text text.txt --paragraphs --tokenizer "$NK_SOURCE/data/lm/causal.h5" --validation 0 -o corpus.h5
check "nk-lm capture of the corpus (--resid-only)" nk-lm -q capture -m "$NK_SOURCE/data/lm/causal.h5" --corpus corpus.h5 --split train --layers 1,2,4 --resid-only -o cap.h5
check "the capture holds the residuals alone" sh -c 'h5ls -r cap.h5 | grep -q "layer_02/resid" && ! h5ls -r cap.h5 | grep -q "attn_in\|/q "' 
check "labels" $SB labels -i cap.h5 -m "$NK_SOURCE/data/lm/causal.h5" -o labels.h5
check "train on the middle layer (--hook middle)" $SB train -i cap.h5 --hook middle --buffer 200 --budget 2000 --latents 384 --k 16 --batch 128 -o lm_sae.h5
check "eval with labels: probes and absorption" $SB eval -i lm_sae.h5 --acts cap.h5 --hook 2 --labels labels.h5 -o lm_ev.h5
expect_fail "--hook 2^64 (was 'stoll', exit 1)" 2 "hook '18446744073709551616'" $SB eval -i lm_sae.h5 --acts cap.h5 --hook 18446744073709551616 -o bad.h5
"$PY" - <<'PYEOF'
import h5py, sys
a = h5py.File("lm_ev.h5").attrs
l = h5py.File("labels.h5")["/labels"]
pos, first = l["pos"][()], l["first_letter"][()]
ok = all(0 <= a[k] <= 1 for k in ["probe_f1_k1", "probe_f1_k5", "probe_f1_raw", "absorption"]) and a["probe_tasks"] >= 2
ok = ok and (pos == 1).sum() > 0 and (pos == 2).sum() > 0 and (first >= 0).sum() > 0 and first.max() <= 25
print(("ok   " if ok else "FAIL ") + f"probes: F1 k=1 {a['probe_f1_k1']:.3f} k=5 {a['probe_f1_k5']:.3f} raw {a['probe_f1_raw']:.3f}, absorption {a['absorption']:.3f}")
sys.exit(0 if ok else 1)
PYEOF
[ $? -eq 0 ] && pass "probe metrics in range, labels present" || fail "probe metrics"

check "eval --judge-cmd (a stand-in judge over the protocol)" $SB eval -i lm_sae.h5 --acts cap.h5 --hook 2 -m "$NK_SOURCE/data/lm/causal.h5" --judge-cmd "$PY $NK_SOURCE/tests/cli/sae_judge.py" --judge-latents 6 -o judged.h5
"$PY" -c "
import h5py, sys
f = h5py.File('judged.h5'); s = f['/eval/autointerp/score'][()]
ok = f.attrs['autointerp_latents'] == 6 == len(s) and 0 <= s.min() and s.max() <= 1 and abs(s.mean() - f.attrs['autointerp_score']) < 1e-12 and s.mean() > 0.5
print(s.mean()); sys.exit(0 if ok else 1)" > /dev/null && pass "autointerp: 6 latents judged, above chance" || fail "autointerp scores"
expect_fail "a judge out of protocol" 1 "not JSON" $SB eval -i lm_sae.h5 --acts cap.h5 --hook 2 -m "$NK_SOURCE/data/lm/causal.h5" --judge-cmd "$PY $NK_SOURCE/tests/cli/sae_judge.py bad" -o o.h5
expect_fail "a judge that fails" 1 "failed" $SB eval -i lm_sae.h5 --acts cap.h5 --hook 2 -m "$NK_SOURCE/data/lm/causal.h5" --judge-cmd "false" -o o.h5
expect_fail "--judge-cmd without --model" 2 "needs --model" $SB eval -i lm_sae.h5 --acts cap.h5 --hook 2 --judge-cmd "false" -o o.h5

# Bad input.
"$PY" - <<'PYEOF'
import h5py, numpy as np
x = np.random.default_rng(0).normal(size=(300, 8)).astype(np.float32)
x[123, 5] = np.nan
with h5py.File("nan.h5", "w") as f: f["acts"] = x
with h5py.File("plain.h5", "w") as f: f["acts"] = np.ones((300, 8), np.float32)
with h5py.File("rank3.h5", "w") as f: f["acts"] = np.ones((3, 4, 5), np.float32)
with h5py.File("tiny_grid.h5", "w") as f:
    f["grid/U"] = [1024, 4096]; f["grid/B"] = [4096, 4096]; f["grid/heldout_ev"] = [0.5, 0.6]; f["grid/heldout"] = [0, 0]
with h5py.File("cut_grid.h5", "w") as f:
    f["grid/U"] = [4096]; f["grid/B"] = [1024]; f["grid/heldout_ev"] = [0.5]
PYEOF
expect_fail "NaN in activations names row and column" 3 "nan.h5.*/acts.*123" $SB train -i nan.h5 --buffer 300 --budget 300 --latents 32 --k 2 -o o.h5
expect_fail "U above the rows available" 3 "needs more than the 300 rows" $SB train -i plain.h5 --buffer 301 --budget 400 --latents 32 --k 2 -o o.h5
expect_fail "k >= n" 3 "k = 32 must be in" $SB train -i plain.h5 --buffer 100 --budget 400 --latents 32 --k 32 -o o.h5
expect_fail "U <= 0" 3 "must be positive" $SB train -i plain.h5 --buffer 0 --budget 400 -o o.h5
expect_fail "B < U is a usage error" 2 "budget 100 < --buffer 200" $SB train -i plain.h5 --buffer 200 --budget 100 -o o.h5
expect_fail "SAE and activation widths differ" 3 "width 8.*width 32" $SB eval -i sae_topk.h5 --acts plain.h5 -o o.h5
expect_fail "rank 3 activations" 3 "expected rank 2" $SB train -i rank3.h5 --buffer 1 --budget 1 -o o.h5
expect_fail "a grid with fewer points than parameters" 3 "tiny_grid.h5.*at least 4 points" $SB fit -i tiny_grid.h5 -o o.h5
expect_fail "a grid point with B < U" 3 "B < U" $SB fit -i cut_grid.h5 -o o.h5
expect_fail "empty stdin" 3 "standard input is empty" sh -c "$SB train -i - --buffer 1 --budget 1 -o o.h5 < /dev/null"
head -c 3000 acts.h5 > truncated.h5
expect_fail "truncated file" 3 "truncated.h5" $SB train -i truncated.h5 --buffer 1 --budget 1 -o o.h5
expect_fail "--hook on a plain file" 2 "--hook applies to nk-lm capture" $SB train -i plain.h5 --hook early --buffer 1 --budget 1 -o o.h5
expect_fail "a missing layer" 3 "layer_03/resid" $SB train -i cap.h5 --hook 3 --buffer 1 --budget 1 -o o.h5
check "no output left by the failures" test ! -e o.h5
no_temp_files "no temp files" .
finish
