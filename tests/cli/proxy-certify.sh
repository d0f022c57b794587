# proxy-certify.sh - Fashion-MNIST (Debian) through import-idx | train |
# certify | calibrate | approve | eval: CERTIFY's outputs and their
# independence of --shard and --threads, the proxy against a model of another
# file, the FA guarantee over 200 splits with the uncalibrated proxy caught by
# the same check, a torch model exported to nk-nn.model/1, the numpy model
# command giving CERTIFY's counts, bad input.
. "$(dirname "$0")/lib.sh"

PC="proxy-certify -q"
IMG=$FMNIST/train-images-idx3-ubyte.gz LAB=$FMNIST/train-labels-idx1-ubyte.gz
check "import-idx | train (MLP, sigma 0.25) through a pipe" sh -c "nk-data -q import-idx $IMG $LAB --limit 2000 -o - | $PC train -i - --arch mlp --sigma 0.25 --epochs 4 --seed 1 -o mlp.h5"
check "train a CNN" sh -c "nk-data -q import-idx $IMG $LAB --limit 1000 -o small.h5 && $PC train -i small.h5 --arch cnn --epochs 1 -o cnn.h5"
# The same classifier with an over-confident softmax (logits x 20): the same
# smoothed classifier, so ref.h5 is its reference too.
check "an over-confident copy of the MLP (last layer x 20)" "$PY" -c "
import h5py, shutil
shutil.copy('mlp.h5', 'sharp.h5')
with h5py.File('sharp.h5', 'r+') as f:
    for k in ('weight', 'bias'): f['/model/params/005/' + k][...] *= 20
"
check "pool of 300 test items, calibration and head splits" sh -c "nk-data -q import-idx $FMNIST/t10k-images-idx3-ubyte.gz $FMNIST/t10k-labels-idx1-ubyte.gz --limit 300 -o pool.h5 && nk-data -q import-idx $IMG --offset 5000 --limit 100 -o head.h5"
check "certify the pool (n = 600)" $PC certify -i pool.h5 --model mlp.h5 --n 600 --seed 3 -o ref.h5
expect_fail "--alpha 1e-300 (the beta quantile did not converge: exit 1)" 2 "alpha" $PC certify -i pool.h5 --model mlp.h5 --n 20 --alpha 1e-300 -o bad.h5
check "--alpha 1e-12, the smallest taken" $PC certify -i pool.h5 --model mlp.h5 --n0 5 --n 20 --alpha 1e-12 -o tiny_alpha.h5
# The shards on the pool's first 60 items: each item's noise depends on its index and the seed only.
check "certify the first 60 items in two shards, merged" sh -c "nk-data -q import-idx $FMNIST/t10k-images-idx3-ubyte.gz $FMNIST/t10k-labels-idx1-ubyte.gz --limit 60 -o pool60.h5 && $PC certify -i pool60.h5 --model mlp.h5 --n 600 --seed 3 --shard 0/2 --threads 2 -o s0.h5 && $PC certify -i pool60.h5 --model mlp.h5 --n 600 --seed 3 --shard 1/2 --threads 1 -o s1.h5 && nk-data -q merge s0.h5 s1.h5 -o merged.h5"
check "certify the CNN" sh -c "$PC certify -i pool.h5 --model cnn.h5 --n 100 --n0 20 -o cnn_cert.h5"
check "predict" $PC predict -i pool.h5 --model mlp.h5 --n 200 -o pred.h5
check "calibrate: margin single, margin heavy, head heavy" sh -c "$PC calibrate -i pool.h5 --model mlp.h5 --radii 0.25,0.5 --target 0.1 -o px1.h5 && $PC calibrate -i pool.h5 --model mlp.h5 --recipe heavy --n 300 --radii 0.25,0.5 --target 0.1 -o px2.h5 && $PC calibrate -i pool.h5 --model mlp.h5 --proxy head --head-data head.h5 --head-n 300 --recipe heavy --n 300 --radii 0.25,0.5 --target 0.1 -o px3.h5"
check "approve standalone and fallback" sh -c "$PC approve -i pool.h5 --model mlp.h5 --proxy px2.h5 -o ap.h5 && $PC approve -i pool.h5 --model mlp.h5 --proxy px3.h5 --mode fallback --n 300 -o apf.h5"
check "eval: 200 splits (mlp), 200 splits (over-confident)" sh -c "$PC eval -i pool.h5 --model mlp.h5 --reference ref.h5 --calibration 150 --splits 200 --target 0.1 --radii 0.25,0.5 --cheap-n 200 --head-data head.h5 --head-n 300 --svg curve.svg -o ev.h5 > table.tsv && $PC eval -i pool.h5 --model sharp.h5 --reference ref.h5 --calibration 150 --splits 200 --target 0.1 --radii 0.25,0.5 --cheap-n 200 -o ev_sharp.h5 > /dev/null"
check "a torch CNN exported to nk-nn.model/1" "$PY" - <<'PYEOF'
import os, sys, torch, torch.nn as nn
sys.path.insert(0, os.environ["NK_SOURCE"] + "/data/nn")
from export_torch import export
torch.manual_seed(0)
m = nn.Sequential(nn.Conv2d(1, 4, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(4, 6, 3, 2, 1), nn.GroupNorm(2, 6), nn.SiLU(),
                  nn.Flatten(), nn.Linear(6 * 7 * 7, 16), nn.GELU(), nn.Linear(16, 10)).eval()
export(m, "torch.h5", (28, 28, 1), classes=10, sigma=0.25)
PYEOF
check "  calibrate and approve with it" sh -c "$PC calibrate -i pool.h5 --model torch.h5 --radii 0.25 -o px_torch.h5 && $PC approve -i pool.h5 --model torch.h5 --proxy px_torch.h5 -o ap_torch.h5"
check "certify through --model-cmd (numpy model, data/proxy-certify/model_cmd.py)" sh -c "nk-data -q import-idx $FMNIST/t10k-images-idx3-ubyte.gz --limit 4 -o four.h5 && $PC certify -i four.h5 --model-cmd '$PY $NK_SOURCE/data/proxy-certify/model_cmd.py mlp.h5' --sigma 0.25 --n 300 --seed 5 -o cmd.h5 && $PC certify -i four.h5 --model mlp.h5 --n 300 --seed 5 -o own.h5"
check "a spike-sft network through --model-cmd 'spike-sft serve'" sh -c "spike-sft -q pretrain -i small.h5 --hidden 32 --epochs 1 --batch 100 -o snn.h5 && $PC certify -i four.h5 --model-cmd 'spike-sft -q serve -i snn.h5' --sigma 0.25 --n 200 -o snn_cert.h5 && $PC certify -i four.h5 --model-cmd 'spike-sft -q serve -i snn.h5' --sigma 0.25 --n 200 -o snn_cert2.h5"
"$PY" -c "
import h5py, numpy as np, sys
a, b = h5py.File('snn_cert.h5')['/certify'], h5py.File('snn_cert2.h5')['/certify']
sys.exit(0 if np.array_equal(a['count'][()], b['count'][()]) and (a['count'][()] > 0).all() else 1)" && pass "  spike-sft serve: counts reproduce, every item counted" || fail "  spike-sft serve: counts"
check "the same spike-sft network read directly (--model snn.h5), 1 and 2 threads" sh -c "$PC certify -i four.h5 --model snn.h5 --sigma 0.25 --n 200 -o snn_own.h5 && $PC --threads 2 certify -i four.h5 --model snn.h5 --sigma 0.25 --n 200 -o snn_own2.h5"
"$PY" -c "
import h5py, numpy as np, sys
a, b, c = (h5py.File(f)['/certify'] for f in ('snn_cert.h5', 'snn_own.h5', 'snn_own2.h5'))
sys.exit(0 if np.array_equal(a['count'][()], b['count'][()]) and np.array_equal(b['count'][()], c['count'][()]) else 1)" && pass "  spike-sft --model: CERTIFY's counts equal those through 'spike-sft serve' (direct coding), for any thread count" || fail "  spike-sft --model: counts"
check "  the head proxy on the spiking network's firing rates: calibrate and approve" sh -c "$PC calibrate -i pool.h5 --model snn.h5 --sigma 0.25 --proxy head --head-data head.h5 --head-n 100 --radii 0.25 --n 100 -o px_snn.h5 && $PC approve -i pool.h5 --model snn.h5 --proxy px_snn.h5 -o ap_snn.h5"

"$PY" - <<'PYEOF'
import h5py, numpy as np, os, sys, torch, torch.nn as nn
from scipy import stats
sys.path.insert(0, os.environ["NK_SOURCE"] + "/tests/cli")
from nk_check import report, finish
ref, pool = h5py.File("ref.h5"), h5py.File("pool.h5")
c = ref["/certify"]
pred, radius, count, labels = c["pred"][()], c["radius"][()], c["count"][()], pool["/labels"][()]
report(c.attrs["n"] == 600 and c.attrs["n0"] == 100 and c.attrs["sigma"] == 0.25 and c.attrs["alpha"] == 0.001, "certify: attributes n, n0, sigma (the model's), alpha")
report(pred.dtype == np.int64 and count.dtype == np.int64 and radius.shape == (300,), "certify: /certify/pred, /count int64 [N], /radius [N]")
pa = np.where(count > 0, stats.beta.ppf(0.001, np.maximum(count, 1), 600 - count + 1), 0)
want = np.where(pa >= 0.5, 0.25 * stats.norm.ppf(np.clip(pa, 1e-300, 1)), 0)
report(np.allclose(np.where(pred >= 0, radius, 0), want, atol=1e-9) and np.all((pred < 0) == (pa < 0.5)), "certify: radius = sigma Phi^-1(Beta(alpha; nA, n - nA + 1)) recomputed in scipy; abstains where pA < 1/2")
report(np.all(radius <= 0.25 * stats.norm.ppf(0.001 ** (1 / 600)) + 1e-12), "certify: no radius above sigma Phi^-1(alpha^(1/n))")
acc = np.mean(pred == labels)
report(acc > 0.6, f"certify: smoothed accuracy {acc:.3f} > 0.6 (MLP, 2000 training items)")
m = h5py.File("merged.h5")
report(all(np.array_equal(m["/certify/" + k][()], c[k][()][:60]) for k in ["pred", "count", "radius", "index"]), "certify: two shards (one on 1 thread) merge into the unsharded result (its first 60 items)")
p = h5py.File("pred.h5")["/predict"]
agree = np.mean((p["pred"][()] == pred)[(p["pred"][()] >= 0) & (pred >= 0)])
report(agree > 0.97, f"predict: agrees with CERTIFY's class where both answer ({agree:.3f})")
report(np.all((p["pred"][()] < 0) == (p["p_value"][()] > 0.001)), "predict: abstains exactly where the binomial p-value exceeds alpha")

px = h5py.File("px2.h5")
lam, sc, loss = px["/proxy/lambda"][()], px["/calibration/score"][()], px["/calibration/loss"][()]
n = len(sc)
ok = True
for r in range(2):
    level = 0.1 - 0.001
    cond = lambda l: (loss[:, r] * (sc >= l)).sum() / (n + 1) + 1 / (n + 1) <= level
    cands = [l for l in np.concatenate([np.unique(sc), [np.inf]]) if cond(l)]
    ok &= min(cands) == lam[r]
report(ok, "calibrate heavy: lambda recomputed by brute force from /calibration/{score,loss}")
px1 = h5py.File("px1.h5")
B = 1 / (1 - stats.norm.cdf(np.array([0.25, 0.5]) / 0.25))
l1 = px1["/calibration/loss"][()]
report(np.all((l1 == 0) | np.isclose(l1, B[None, :])), "calibrate single: F_i is 0 or B(r) = 1/(1 - Phi(r/sigma))")
a = h5py.File("ap.h5")["/approve"]
report(np.array_equal(a["approved"][()], (a["score"][()][:, None] >= lam[None, :]).astype(np.uint8)) and np.all(a["forwards"][()] == 1), "approve: approved = score >= lambda(r), one forward each")
f = h5py.File("apf.h5")["/approve"]
used = f["used_certify"][()].astype(bool)
report(np.all(used == (f["approved"][()][:, 0] == 0)) and np.all(f["forwards"][()] == np.where(used, 401, 1)) and np.all(f["count"][()][~used] == -1), "approve fallback: CERTIFY exactly where the proxy rejects r, forwards 1 or 1 + n0 + n")
report(np.all(f["final_radius"][()][~used] >= 0.25), "approve fallback: final radius >= r where the proxy approved")

ev, sharp = h5py.File("ev.h5")["/eval"], h5py.File("ev_sharp.h5")["/eval"]
names = [s.decode() if isinstance(s, bytes) else s for s in ev["methods"][()]]
fa = ev["false_approval"][()]
for name in ["margin-single", "margin-heavy", "head-single", "head-heavy"]:
    i = names.index(name)
    report(np.all(fa[i] <= 0.1 + 0.01), f"eval: {name} mean FA over 200 splits {np.round(fa[i], 4)} <= target 0.1 (+0.01 for the splits' noise)")
sn = [s.decode() if isinstance(s, bytes) else s for s in sharp["methods"][()]]
sfa = sharp["false_approval"][()]
uncal, heavy = sfa[sn.index("uncalibrated")], sfa[sn.index("margin-heavy")]
report(np.all(heavy <= 0.11) and np.any(uncal > 0.11), f"eval, over-confident model: margin-heavy FA {np.round(heavy, 3)} holds the target, the uncalibrated proxy's {np.round(uncal, 3)} does not")
acc = ev["certified_accuracy"][()]
report(acc[names.index("margin-heavy"), 0] >= 0.8 * acc[0, 0], "eval: margin-heavy certified accuracy >= 80% of CERTIFY's at r = 0.25")
report(np.isclose(ev["forwards"][()][0, 0], 700) and np.isclose(ev["forwards"][()][names.index("margin-heavy"), 0], 1), "eval: forwards n0 + n = 700 for CERTIFY, 1 for the proxy")
report(open("curve.svg").read().startswith("<svg") or "<svg" in open("curve.svg").read()[:200], "eval: --svg writes an SVG")
t = open("table.tsv").read().splitlines()
report(t[0].split("\t")[:4] == ["method", "radius", "cert_acc", "FA"] and len(t) == 1 + len(names) * 2, "eval: the table on stdout, one row per method and radius")

# The exported torch network: our margins are torch's.
sys.path.insert(0, os.environ["NK_SOURCE"] + "/data/nn")
torch.manual_seed(0)
mt = nn.Sequential(nn.Conv2d(1, 4, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(4, 6, 3, 2, 1), nn.GroupNorm(2, 6), nn.SiLU(),
                   nn.Flatten(), nn.Linear(6 * 7 * 7, 16), nn.GELU(), nn.Linear(16, 10)).eval()
x = torch.tensor(pool["/images"][()]).reshape(300, 28, 28, 1).permute(0, 3, 1, 2)
with torch.no_grad():
    z = mt(x).numpy()
top2 = np.sort(z, axis=1)[:, -2:]
ours = h5py.File("ap_torch.h5")["/approve"]
report(np.allclose(ours["score"][()], top2[:, 1] - top2[:, 0], atol=1e-4) and np.array_equal(ours["pred"][()], z.argmax(1)), "export_torch.py: our forward of the exported network gives torch's margins and classes")
cmd, own = h5py.File("cmd.h5")["/certify"], h5py.File("own.h5")["/certify"]
report(np.array_equal(cmd["pred"][()], own["pred"][()]) and np.abs(cmd["count"][()] - own["count"][()]).max() <= 2, "--model-cmd: the numpy model's CERTIFY matches --model's (same noise streams)")
finish()
PYEOF
[ $? -eq 0 ] || fail "the numpy/scipy/torch checks above"

# Bad input.
"$PY" -c "
import h5py, numpy as np
x = h5py.File('pool.h5')['/images'][:5].copy()
x[2, 3, 4] = np.nan
with h5py.File('nan.h5', 'w') as f: f['/images'] = x
with h5py.File('wide.h5', 'w') as f: f['/images'] = np.zeros((3, 20, 20, 1), np.float32)
with h5py.File('badmodel.h5', 'w') as f:
    f.attrs['nk_schema'] = 'nk-nn.model/1'; f['/model/arch'] = [b'flatten', b'linear 784 10', b'softplus']; f['/model'].attrs['input'] = '28,28,1'
"
expect_fail "NaN pixel" 3 "nan.h5.*/images.*NaN" $PC certify -i nan.h5 --model mlp.h5 --n 10 -o out.h5
expect_fail "images of another shape than the model's input" 3 "wide.h5.*/images.*28,28,1" $PC certify -i wide.h5 --model mlp.h5 -o out.h5
expect_fail "unknown layer" 3 "badmodel.h5.*/model/arch.*softplus" $PC certify -i pool.h5 --model badmodel.h5 -o out.h5
expect_fail "a proxy file of another model" 3 "px2.h5.*/proxy.*another model" $PC approve -i pool.h5 --model cnn.h5 --proxy px2.h5 -o out.h5
expect_fail "sigma 0" 2 "sigma" $PC certify -i pool.h5 --model mlp.h5 --sigma 0 -o out.h5
expect_fail "alpha 0.5" 2 "alpha" $PC certify -i pool.h5 --model mlp.h5 --alpha 0.5 -o out.h5
expect_fail "n = 0" 2 "--n" $PC certify -i pool.h5 --model mlp.h5 --n 0 -o out.h5
expect_fail "target 1" 2 "target" $PC calibrate -i pool.h5 --model mlp.h5 --target 1 -o out.h5
expect_fail "no model" 2 "model" $PC certify -i pool.h5 -o out.h5
expect_fail "head without --head-data" 2 "head-data" $PC calibrate -i pool.h5 --model mlp.h5 --proxy head -o out.h5
expect_fail "a model command that dies" 1 "model-cmd.*ended" $PC certify -i four.h5 --model-cmd "head -c 0" --sigma 0.25 -o out.h5
"$PY" -c "import struct, sys; sys.stdout.buffer.write(struct.pack('<q', 2) + b'\\0' * 100)" > short.bin
expect_fail "spike-sft serve: a frame that ends early" 3 "frame 0: ends before" sh -c "spike-sft -q serve -i snn.h5 < short.bin > /dev/null"
"$PY" -c "import h5py; h5py.File('huge.h5', 'w').create_dataset('images', shape=(2**40, 28, 28, 1), dtype='f4', chunks=(1, 28, 28, 1))"
expect_fail "a file declaring 2^40 images" 3 "huge.h5.*/images.*more than 2\\^24" $PC certify -i huge.h5 --model mlp.h5 --n 10 -o out.h5
expect_fail "empty stdin" 3 "standard input" $PC certify -i - --model mlp.h5 -o out.h5 < /dev/null
[ -e out.h5 ] && fail "a failed run left out.h5" || pass "no output left by the failures"
no_temp_files "no temporary files" .
finish
