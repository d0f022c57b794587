# spike-sft.sh - pretrain on a Fashion-MNIST subset (Debian's dataset-fashion-mnist,
# imported by nk-data), eval against an independent numpy LIF forward pass,
# pipes, and bad input.
. "$(dirname "$0")/lib.sh"

check "import 700 Fashion-MNIST images" nk-data -q import-idx "$FMNIST/t10k-images-idx3-ubyte.gz" "$FMNIST/t10k-labels-idx1-ubyte.gz" --limit 700 -o fm.h5
check "pretrain (1 hidden layer, direct coding)" spike-sft -q --seed 1 pretrain -i fm.h5 --hidden 48 --steps 4 --epochs 2 --batch 50 -o base.h5
check "pretrain through a pipe, zero reset, atan, rate coding, two hidden layers" sh -c 'nk-data -q import-idx "$0/t10k-images-idx3-ubyte.gz" "$0/t10k-labels-idx1-ubyte.gz" --limit 300 -o - | spike-sft -q pretrain -i - --hidden 24,16 --steps 3 --reset zero --surrogate atan --coding rate --epochs 1 --batch 30 -o rate.h5' "$FMNIST"
check "the same seed gives the same model" sh -c 'spike-sft -q --seed 1 pretrain -i fm.h5 --hidden 48 --steps 4 --epochs 2 --batch 50 -o again.h5 && h5diff base.h5 again.h5 /model /model'
check "pretrain a conv-LIF-pool network (--conv 4,8)" spike-sft -q --seed 1 pretrain -i fm.h5 --conv 4,8 --steps 4 --epochs 3 --batch 50 --lr 1e-2 -o conv.h5
spike-sft -q eval -i conv.h5 --data fm.h5 > conv_eval.txt 2>/dev/null
check "spe on the conv network, and pickit of two conv models" sh -c 'spike-sft -q --seed 2 tasks -i fm.h5 --kinds invert,rotate90 --train 300 --test 100 -o ctasks.h5 && spike-sft -q spe -i conv.h5 --task ctasks.h5:invert --epochs 1 --batch 50 -o cspe1.h5 && spike-sft -q spe -i conv.h5 --task ctasks.h5:rotate90 --epochs 1 --batch 50 -o cspe2.h5 && spike-sft -q pickit -i cspe1.h5 cspe2.h5 --tasks ctasks.h5 --calibration 32 -o cmerged.h5 && spike-sft -q eval -i cmerged.h5 --task ctasks.h5:invert'
check "eval prints accuracy and writes a file" spike-sft -q eval -i base.h5 --data fm.h5 -o eval.h5
spike-sft -q eval -i base.h5 --data fm.h5 > eval.txt 2>/dev/null
check "eval of the rate-coded model" spike-sft -q eval -i rate.h5 --data fm.h5
check "tasks (all kinds)" spike-sft -q --seed 2 tasks -i fm.h5 --kinds identity,rotate90,invert,permute,noise,shift,contrast,blur,relabel --train 400 --test 200 -o tasks.h5
check "spe with a fixed mask (no re-selection, no shrinkage)" spike-sft -q --seed 3 spe -i base.h5 --task tasks.h5:invert --fraction 0.05 --epochs 2 --batch 50 --reselect-every 0 --low-rank 0 -o spe.h5
check "spe with re-selection and shrinkage" spike-sft -q spe -i base.h5 --task tasks.h5:rotate90 --epochs 2 --batch 50 -o spe2.h5
check "spe --no-base-cache (the first layer's currents computed densely)" spike-sft -q --seed 3 spe -i base.h5 --task tasks.h5:invert --fraction 0.05 --epochs 2 --batch 50 --reselect-every 0 --low-rank 0 --no-base-cache -o spe_dense.h5
check "baselines: full, random, large, lora" sh -c 'for m in full random large lora; do spike-sft -q spe -i base.h5 --task tasks.h5:invert --method $m --epochs 1 --batch 50 -o base_$m.h5 || exit 1; done'
check "eval of an adapted model on a task" spike-sft -q eval -i spe.h5 --task tasks.h5:invert -o spe_eval.h5
check "pickit merges two adapted models (lambda fixed at 1)" spike-sft -q pickit -i spe.h5 spe2.h5 --tasks tasks.h5 --calibration 64 --scale 1 -o merged.h5
check "pickit chooses lambda on the calibration set; ties --trim 1 at that lambda" sh -c 'spike-sft -q pickit -i spe.h5 spe2.h5 --tasks tasks.h5 --calibration 64 --scale-grid 0.5,1,2 -o merged_sel.h5 && L=$("$0" -c "import h5py; print(h5py.File(\"merged_sel.h5\", \"r\").attrs[\"scale\"])") && spike-sft -q pickit -i spe.h5 spe2.h5 --method ties --trim 1 --scale "$L" -o merged_ties_sel.h5' "$PY"
expect_fail "pickit --scale-grid with a negative scale" 2 "scale-grid" spike-sft pickit -i spe.h5 spe2.h5 --tasks tasks.h5 --scale-grid 0.5,-1 -o bad.h5
check "merging baselines: ties, average, task-arithmetic" sh -c 'for m in ties average task-arithmetic; do spike-sft -q pickit -i spe.h5 spe2.h5 --method $m -o merged_$m.h5 || exit 1; done'
check "pickit --calibrate affine and layer; ties --trim 1 (pickit before its calibration)" sh -c 'spike-sft -q pickit -i spe.h5 spe2.h5 --tasks tasks.h5 --calibration 64 --calibrate affine -o merged_affine.h5 && spike-sft -q pickit -i spe.h5 spe2.h5 --tasks tasks.h5 --calibration 64 --calibrate layer -o merged_layer.h5 && spike-sft -q pickit -i spe.h5 spe2.h5 --method ties --trim 1 -o merged_ties1.h5'
check "eval of the merged model" spike-sft -q eval -i merged.h5 --task tasks.h5:rotate90
# A diverged model: spe2.h5 with its hidden neurons permuted (base and delta
# alike: the same function). Alignment must undo the permutation, so the
# merge equals the merge of the unpermuted models.
check "a permuted copy of an adapted model" "$PY" -c "
import h5py, numpy as np, shutil
shutil.copy('spe2.h5', 'spe2p.h5')
with h5py.File('spe2p.h5', 'r+') as f:
    w0 = f['/model/weight0'][...]; b0 = f['/model/bias0'][...]; w1 = f['/model/weight1'][...]
    n, d = w0.shape
    p = np.random.default_rng(5).permutation(n); inv = np.argsort(p)
    f['/model/weight0'][...] = w0[p]; f['/model/bias0'][...] = b0[p]; f['/model/weight1'][...] = w1[:, p]
    i0 = f['/delta/layer0/indices'][...]; f['/delta/layer0/indices'][...] = inv[i0 // d] * d + i0 % d
    i1 = f['/delta/layer1/indices'][...]; f['/delta/layer1/indices'][...] = (i1 // n) * n + inv[i1 % n]
"
check "pickit aligns the permuted model (ties and pickit)" sh -c 'spike-sft pickit -i spe.h5 spe2p.h5 --method ties -o merged_p.h5 2> align.log && grep -q "neurons permuted" align.log && spike-sft -q pickit -i spe.h5 spe2p.h5 --tasks tasks.h5 --calibration 64 --scale 1 -o merged_pp.h5 && spike-sft pickit -i spe.h5 spe2.h5 --method ties -o merged_q.h5 2> noop.log && grep -q "alignment: a no-op" noop.log && spike-sft -q pickit -i spe.h5 spe2p.h5 --method ties --no-align -o merged_na.h5'
check "stats: histograms, silencing curve and its plot" sh -c 'spike-sft -q stats -i base.h5 --data fm.h5 --fractions 0.5,0,0.9 --plot silence.svg -o stats.h5 > stats.txt && grep -q "<svg" silence.svg'
expect_fail "stats with a share of 1" 2 "fractions" spike-sft stats -i base.h5 --data fm.h5 --fractions 1 -o bad.h5
spike-sft -q eval -i spe.h5 --task tasks.h5:invert > spe_eval.txt 2>/dev/null

if "$PY" - <<'PYEOF'
import h5py, numpy as np, sys
fails = 0
def check(name, ok):
    global fails
    print(("ok   " if ok else "FAIL ") + name); fails += 0 if ok else 1
m = h5py.File("base.h5", "r")
check("schema spike-sft.model/1", m.attrs["nk_schema"] == b"spike-sft.model/1" or m.attrs["nk_schema"] == "spike-sft.model/1")
sizes = m["/model/sizes"][...]
check(f"sizes 784-48-10 ({sizes.tolist()})", sizes.tolist() == [784, 48, 10])
check("learned something: held-out accuracy above 50%", m.attrs["test_accuracy"] > 0.5)
# Independent forward pass in numpy (float64): direct coding, subtract reset.
a = m["/model"].attrs
T, beta, thr = int(a["steps"]), float(a["beta"]), float(a["threshold"])
W0, b0 = m["/model/weight0"][...].astype(np.float64), m["/model/bias0"][...].astype(np.float64)
W1, b1 = m["/model/weight1"][...].astype(np.float64), m["/model/bias1"][...].astype(np.float64)
d = h5py.File("fm.h5", "r")
x = d["/images"][...].reshape(d["/images"].shape[0], -1).astype(np.float64)
y = d["/labels"][...]
I = x @ W0.T + b0
U = np.zeros_like(I); count = np.zeros_like(I)
for t in range(T):
    V = beta * U + I
    S = (V - thr > 0).astype(np.float64)
    U = V - thr * S
    count += S
logits = (count / T) @ W1.T + b1
acc = float((logits.argmax(1) == y).mean())
got = dict(line.split("\t") for line in open("eval.txt").read().split("\n") if line)
check(f"eval accuracy {float(got['accuracy']):.4f} matches numpy's {acc:.4f} (within 0.5 point)", abs(float(got["accuracy"]) - acc) <= 0.005)
e = h5py.File("eval.h5", "r")
# SPE: only the smallest-magnitude 5% of each layer moved, and the adapted
# model evaluates as numpy's forward pass of base + delta.
a = h5py.File("spe.h5", "r")
t = h5py.File("tasks.h5", "r")
ok_mask = True
Ws = []
for l in range(2):
    W = a[f"/model/weight{l}"][...]
    idx, val = a[f"/delta/layer{l}/indices"][...], a[f"/delta/layer{l}/values"][...]
    k = int(round(0.05 * W.size))
    cutoff = np.sort(np.abs(W).ravel())[k - 1]
    ok_mask &= len(idx) <= k and bool(np.all(np.abs(W.ravel()[idx]) <= cutoff))
    W2 = W.astype(np.float64).ravel(); W2[idx] += val; Ws.append(W2.reshape(W.shape))
check("spe: only the smallest-|w| 5% of each layer changed", ok_mask)
lo = h5py.File("base_lora.h5", "r")
check(f"lora: trainable state {lo.attrs['trainable_state_bytes']} bytes <= 10% of full's", lo.attrs["trainable_state_bytes"] <= 0.1 * h5py.File("base_full.h5", "r").attrs["trainable_state_bytes"])
split = {f: h5py.File(f, "r").attrs for f in ("spe.h5", "base_full.h5", "base_lora.h5")}
check("trainable state = gradients + optimizer state + indices (4 + 8 + 4 bytes a masked entry; 4 + 8 per parameter for full and LoRA)",
      all(x["gradient_bytes"] + x["optimizer_bytes"] + x["index_bytes"] == x["trainable_state_bytes"] for x in split.values())
      and split["spe.h5"]["index_bytes"] == 4 * split["spe.h5"]["trainable_entries"] and split["base_full.h5"]["index_bytes"] == 0
      and split["spe.h5"]["activation_bytes"] == split["base_full.h5"]["activation_bytes"] > 0)
nc = h5py.File("spe_dense.h5", "r")
check(f"spe's base-current cache: 400 examples x 48 units x 4 bytes ({a.attrs['base_cache_bytes']}); none with --no-base-cache or for full",
      a.attrs["base_cache_bytes"] == 400 * 48 * 4 and nc.attrs["base_cache_bytes"] == 0 and h5py.File("base_full.h5", "r").attrs["base_cache_bytes"] == 0)
check("the cache changes only rounding: the same entries moved, accuracy within 5 points",
      np.array_equal(a["/delta/layer0/indices"][...], nc["/delta/layer0/indices"][...]) and abs(a.attrs["test_accuracy"] - nc.attrs["test_accuracy"]) <= 0.05)
check(f"spe: trainable state {a.attrs['trainable_state_bytes']} bytes <= 10% of full's {h5py.File('base_full.h5','r').attrs['trainable_state_bytes']}",
      a.attrs["trainable_state_bytes"] <= 0.1 * h5py.File("base_full.h5", "r").attrs["trainable_state_bytes"])
xt = t["/tasks/invert/test/images"][...].reshape(200, -1).astype(np.float64); yt = t["/tasks/invert/test/labels"][...]
I = xt @ Ws[0].T + a["/model/bias0"][...]
U = np.zeros_like(I); count = np.zeros_like(I)
for step in range(T):
    V = beta * U + I; S = (V - thr > 0).astype(np.float64); U = V - thr * S; count += S
acc_spe = float((((count / T) @ Ws[1].T + a["/model/bias1"][...]).argmax(1) == yt).mean())
got_spe = dict(line.split("\t") for line in open("spe_eval.txt").read().split("\n") if line)
check(f"eval of the adapted model {float(got_spe['accuracy']):.4f} matches numpy's base + delta {acc_spe:.4f}", abs(float(got_spe["accuracy"]) - acc_spe) <= 0.01)
st = h5py.File("stats.h5", "r")
check("stats: histogram counts add up to the weights", int(st["/histogram/layer0/counts"][...].sum()) == 784 * 48)
check("stats: fractions sorted, and silencing nothing gives eval's accuracy",
      st["/silenced/fraction"][...].tolist() == [0.0, 0.5, 0.9] and abs(st["/silenced/accuracy"][0] - float(got["accuracy"])) <= 5e-5)
mg = h5py.File("merged.h5", "r")
for a_, b_ in (("merged_p.h5", "merged_ties.h5"), ("merged_pp.h5", "merged.h5")):
    fa, fb = h5py.File(a_, "r"), h5py.File(b_, "r")
    same = all(np.allclose(fa[f"/model/weight{l}"][...], fb[f"/model/weight{l}"][...], atol=1e-6) and np.allclose(fa[f"/model/bias{l}"][...], fb[f"/model/bias{l}"][...], atol=1e-6) for l in range(2))
    check(f"alignment undoes a neuron permutation: {a_} equals {b_}", same and fa.attrs["aligned_models"] == 1)
na, ti = h5py.File("merged_na.h5", "r"), h5py.File("merged_ties.h5", "r")
check("--no-align merges the permuted model as it is (another result)", na.attrs["aligned_models"] == 0
      and not np.allclose(na["/model/weight0"][...], ti["/model/weight0"][...], atol=1e-6))
check("pickit: the merged model has the base architecture", mg["/model/sizes"][...].tolist() == a["/model/sizes"][...].tolist()
      and all(mg[f"/model/weight{l}"].shape == a[f"/model/weight{l}"].shape for l in range(2)))
# PickIt = ties --trim 1, then a per-neuron scale (and shift) of the hidden
# layer folded into its weights; the readout is untouched. The calibration
# must bring each hidden neuron's firing rate on the calibration rows (the
# first 64 training examples of each task) closer to the task models' mean
# rate, measured here by an independent numpy forward pass.
t1 = h5py.File("merged_ties1.h5", "r")
sc, sh = mg["/calibration/scale0"][...].astype(np.float64), mg["/calibration/shift0"][...].astype(np.float64)
fold_ok = (np.allclose(mg["/model/weight0"][...], sc[:, None] * t1["/model/weight0"][...], rtol=1e-5, atol=1e-6)
           and np.allclose(mg["/model/bias0"][...], sc * t1["/model/bias0"][...] + sh, rtol=1e-5, atol=1e-6)
           and np.array_equal(mg["/model/weight1"][...], t1["/model/weight1"][...]))
check(f"pickit: ties --trim 1 with the stored per-neuron scales {sc.min():.3g}..{sc.max():.3g} folded in, readout untouched",
      fold_ok and sc.shape == (48,) and mg.attrs["calibration"] in (b"neuron", "neuron") and mg.attrs["trim"] == 1.0
      and h5py.File("merged_ties.h5", "r").attrs["trim"] == 0.2)
sel, ts = h5py.File("merged_sel.h5", "r"), h5py.File("merged_ties_sel.h5", "r")
grid, ce = sel["/selection/scale"][...], sel["/selection/cross_entropy"][...]
ssc, ssh = sel["/calibration/scale0"][...].astype(np.float64), sel["/calibration/shift0"][...].astype(np.float64)
check(f"pickit's lambda {sel.attrs['scale']} is the grid's least cross-entropy against the task models ({np.round(ce, 4).tolist()}), "
      "and the model is ties --trim 1 at it with the calibration folded in",
      grid.tolist() == [0.5, 1.0, 2.0] and sel.attrs["scale"] == grid[int(np.argmin(ce))] and "/selection" not in mg
      and np.allclose(sel["/model/weight0"][...], ssc[:, None] * ts["/model/weight0"][...], rtol=1e-5, atol=1e-6)
      and np.allclose(sel["/model/bias0"][...], ssc * ts["/model/bias0"][...] + ssh, rtol=1e-5, atol=1e-6)
      and np.array_equal(sel["/model/weight1"][...], ts["/model/weight1"][...]))
def hidden(f, rows):  # an adapted model is its base plus its sparse delta
    W = f["/model/weight0"][...].astype(np.float64); b = f["/model/bias0"][...].astype(np.float64)
    if "/delta/layer0" in f:
        W.ravel()[f["/delta/layer0/indices"][...]] += f["/delta/layer0/values"][...]
    I = rows @ W.T + b; U = np.zeros_like(I); count = np.zeros_like(I)
    for step in range(T):
        V = beta * U + I; S = (V - thr > 0).astype(np.float64); U = V - thr * S; count += S
    return (count / T).mean(0), I.mean(0), I.std(0)
cal = {k: t[f"/tasks/{k}/train/images"][:64].reshape(64, -1).astype(np.float64) for k in ("invert", "rotate90")}
own = [hidden(h5py.File("spe.h5", "r"), cal["invert"]), hidden(h5py.File("spe2.h5", "r"), cal["rotate90"])]
goal = [(own[0][i] + own[1][i]) / 2 for i in range(2)]
goal_std = np.sqrt((own[0][2] ** 2 + own[0][1] ** 2 + own[1][2] ** 2 + own[1][1] ** 2) / 2 - goal[1] ** 2)
xs = np.vstack([cal["invert"], cal["rotate90"]])
err = {n: np.abs(hidden(h5py.File(n, "r"), xs)[0] - goal[0]).mean() for n in ("merged_ties1.h5", "merged.h5", "merged_layer.h5")}
check(f"pickit: per-neuron rate error {err['merged_ties1.h5']:.4f} uncalibrated -> {err['merged.h5']:.4f} (neuron), {err['merged_layer.h5']:.4f} (layer)",
      err["merged.h5"] < 0.5 * err["merged_ties1.h5"] and err["merged.h5"] < err["merged_layer.h5"])
_, mean_af, std_af = hidden(h5py.File("merged_affine.h5", "r"), xs)
check("pickit --calibrate affine: each neuron's current has the task models' mean and spread",
      np.allclose(mean_af, goal[1], atol=1e-3) and np.allclose(std_af, goal_std, rtol=1e-3, atol=1e-3))
av = h5py.File("merged_average.h5", "r")
d1 = h5py.File("spe.h5", "r"); d2 = h5py.File("spe2.h5", "r")
W = a["/model/weight0"][...].astype(np.float64).ravel().copy()
for f in (d1, d2):
    W[f["/delta/layer0/indices"][...]] += 0.5 * f["/delta/layer0/values"][...]
check("average merge is base + the mean of the deltas", np.allclose(av["/model/weight0"][...].ravel(), W, atol=1e-6))
inv = t["/tasks/invert/train/images"][...]; ide = t["/tasks/identity/train/images"][...]
check("tasks: invert is 1 - x of the same examples", np.allclose(inv, 1 - ide))
rot = t["/tasks/rotate90/train/images"][...]
check("tasks: rotate90 is a clockwise quarter turn", np.allclose(rot[:, :, :, 0], np.rot90(ide[:, :, :, 0], k=-1, axes=(1, 2))))
sft = t["/tasks/shift/train/images"][...][:, :, :, 0]
check("tasks: shift moves the image 4 pixels right and down, zeros shifted in",
      np.allclose(sft[:, 4:, 4:], ide[:, :-4, :-4, 0]) and not sft[:, :4, :].any() and not sft[:, :, :4].any())
check("tasks: contrast is 0.5 + (x - 0.5)/3", np.allclose(t["/tasks/contrast/train/images"][...], 0.5 + (ide - 0.5) / 3, atol=1e-6))
from scipy.ndimage import uniform_filter
box = uniform_filter(ide[:, :, :, 0].astype(np.float64), size=(1, 5, 5), mode="constant", cval=0.0)
check("tasks: blur is a 5x5 box filter with zero padding (scipy)", np.allclose(t["/tasks/blur/train/images"][...][:, :, :, 0], box, atol=1e-5))
rel = t["/tasks/relabel/train/labels"][...]; idl = t["/tasks/identity/train/labels"][...]
check("tasks: relabel is a fixed cyclic shift of the classes", len(set(((rel - idl) % 10).tolist())) == 1 and rel[0] != idl[0])
check("eval file holds the same accuracy", abs(e.attrs["accuracy"] - float(got["accuracy"])) <= 5e-5)
# The conv network, forward in numpy: 3x3 correlation with zero padding
# (kernel column c*9 + 3*dy + dx), LIF, 2x2 means, readout unit m*P + p.
cm = h5py.File("conv.h5", "r")
check(f"conv: sizes {cm['/model/sizes'][...].tolist()}, channels {cm['/model/channels'][...].tolist()}",
      cm["/model/sizes"][...].tolist() == [784, 4 * 14 * 14, 8 * 7 * 7, 10] and cm["/model/channels"][...].tolist() == [4, 8])
check(f"conv: learned something (held-out accuracy {cm.attrs['test_accuracy']:.3f} > 0.45)", cm.attrs["test_accuracy"] > 0.45)
def conv3(inp, W, b):
    n, h, w_, c = inp.shape
    pad = np.zeros((n, h + 2, w_ + 2, c)); pad[:, 1:-1, 1:-1, :] = inp
    out = np.zeros((n, h, w_, W.shape[0])) + b
    for dy in range(3):
        for dx in range(3):
            out += pad[:, dy:dy + h, dx:dx + w_, :] @ W[:, [ch * 9 + dy * 3 + dx for ch in range(c)]].T
    return out
def pool2(s):
    n, h, w_, c = s.shape
    return s.reshape(n, h // 2, 2, w_ // 2, 2, c).mean(axis=(2, 4))
imgs = d["/images"][...].astype(np.float64)
Wc = [cm[f"/model/weight{l}"][...].astype(np.float64) for l in range(3)]
bc = [cm[f"/model/bias{l}"][...].astype(np.float64) for l in range(3)]
I0 = conv3(imgs, Wc[0], bc[0])
U0 = np.zeros_like(I0); U1 = None; feat = 0
for step in range(T):
    V0 = beta * U0 + I0; S0 = (V0 - thr > 0).astype(np.float64); U0 = V0 - thr * S0
    I1 = conv3(pool2(S0), Wc[1], bc[1])
    U1 = np.zeros_like(I1) if U1 is None else U1
    V1 = beta * U1 + I1; S1 = (V1 - thr > 0).astype(np.float64); U1 = V1 - thr * S1
    feat = feat + pool2(S1)
flat = feat.transpose(0, 3, 1, 2).reshape(feat.shape[0], -1)
acc_conv = float((((flat / T) @ Wc[2].T + bc[2]).argmax(1) == y).mean())
got_conv = dict(line.split("\t") for line in open("conv_eval.txt").read().split("\n") if line)
check(f"conv: eval accuracy {float(got_conv['accuracy']):.4f} matches numpy's {acc_conv:.4f} (within 1 point)", abs(float(got_conv["accuracy"]) - acc_conv) <= 0.01)
cs = h5py.File("cspe1.h5", "r")
ok_mask = True
for l in range(3):
    W = cs[f"/model/weight{l}"][...]; idx = cs[f"/delta/layer{l}/indices"][...]
    k = int(round(0.05 * W.size)); cutoff = np.sort(np.abs(W).ravel())[max(k, 1) - 1]
    ok_mask &= len(idx) <= max(k, 1) and bool(np.all(np.abs(W.ravel()[idx]) <= cutoff))
check("conv spe: only the smallest-|w| 5% of each layer (kernels too) changed", ok_mask)
cg = h5py.File("cmerged.h5", "r")
check("conv pickit: the merged model keeps the channels and shapes", cg["/model/channels"][...].tolist() == [4, 8]
      and all(cg[f"/model/weight{l}"].shape == cm[f"/model/weight{l}"].shape for l in range(3)))
sys.exit(1 if fails else 0)
PYEOF
then pass "numpy reference"; else fail "numpy reference"; fi

# Bad input: exit codes and no output files.
"$PY" -c "
import h5py, numpy as np
with h5py.File('nan.h5', 'w') as f:
    x = np.random.rand(20, 4, 4, 1).astype(np.float32); x[3, 1, 1, 0] = np.nan
    f['/images'] = x; f['/labels'] = np.arange(20) % 3
with h5py.File('nolabels.h5', 'w') as f:
    f['/images'] = np.random.rand(20, 4, 4, 1).astype(np.float32)
with h5py.File('small.h5', 'w') as f:
    f['/images'] = np.random.rand(20, 4, 4, 1).astype(np.float32); f['/labels'] = np.arange(20) % 3
with h5py.File('neglabel.h5', 'w') as f:
    f['/images'] = np.random.rand(20, 4, 4, 1).astype(np.float32); f['/labels'] = np.arange(20) - 1
"
expect_fail "NaN in the images" 3 "nan.h5.*dataset /images.*(NaN|finite)" spike-sft pretrain -i nan.h5 -o bad.h5
expect_fail "no labels" 3 "dataset /labels: missing" spike-sft pretrain -i nolabels.h5 -o bad.h5
expect_fail "negative label" 3 "dataset /labels: entry 0 is -1" spike-sft pretrain -i neglabel.h5 -o bad.h5
expect_fail "eval on data of another shape" 3 "examples have 16 values, the model takes 784" spike-sft eval -i base.h5 --data small.h5
expect_fail "--steps 0" 2 "steps" spike-sft pretrain -i fm.h5 --steps 0 -o bad.h5
expect_fail "--conv with --hidden" 2 "excludes" spike-sft pretrain -i fm.h5 --conv 4 --hidden 8 -o bad.h5
expect_fail "tasks: a kind given twice" 2 "invert.*given twice" spike-sft tasks -i fm.h5 --kinds invert,invert -o bad.h5
expect_fail "--conv on an image that does not halve evenly" 3 "small.h5.*does not halve evenly" spike-sft pretrain -i small.h5 --conv 2,2,2 --batch 10 -o bad.h5
expect_fail "--batch larger than the data" 2 "larger than the" spike-sft pretrain -i small.h5 --batch 64 -o bad.h5
expect_fail "empty stdin" 3 "standard input" sh -c 'spike-sft pretrain -i - -o bad.h5 < /dev/null'
head -c 3000 base.h5 > truncated.h5
expect_fail "truncated model" 3 "truncated.h5" spike-sft eval -i truncated.h5 --data fm.h5
expect_fail "a foreign file as model" 3 "schema" spike-sft eval -i fm.h5 --data fm.h5
expect_fail "spe --fraction 1" 2 "fraction" spike-sft spe -i base.h5 --task tasks.h5:invert --fraction 1 -o bad.h5
expect_fail "spe on a task of another input size" 3 "the base model takes 784" sh -c 'spike-sft -q tasks -i small.h5 --kinds invert --train 10 --test 5 -o small_tasks.h5 && spike-sft spe -i base.h5 --task small_tasks.h5:invert -o bad.h5'
expect_fail "pickit --tasks of another image size" 3 "small_tasks.h5.*/tasks/invert/train/images.*the models take 784" spike-sft -q pickit -i spe.h5 spe2.h5 --tasks small_tasks.h5 --calibration 8 -o bad.h5
expect_fail "a task the file does not hold" 3 "no such task" spike-sft spe -i base.h5 --task tasks.h5:nope -o bad.h5
expect_fail "a --task without a name" 2 "FILE:NAME" spike-sft spe -i base.h5 --task tasks.h5 -o bad.h5
expect_fail "eval with neither --data nor --task" 2 "give --data" spike-sft eval -i base.h5
expect_fail "pickit of models of another architecture" 3 "another architecture" sh -c 'spike-sft -q spe -i rate.h5 --task tasks.h5:invert --epochs 1 --batch 50 -o other.h5 2>/dev/null; spike-sft pickit -i spe.h5 other.h5 --method ties -o bad.h5'
expect_fail "pickit without --tasks" 2 "needs --tasks" spike-sft pickit -i spe.h5 spe2.h5 -o bad.h5
expect_fail "pickit of one model" 2 "" spike-sft pickit -i spe.h5 -o bad.h5
expect_fail "pickit --calibrate of an unknown kind" 2 "calibrate" spike-sft pickit -i spe.h5 spe2.h5 --tasks tasks.h5 --calibrate rates -o bad.h5
expect_fail "pickit --trim 0" 2 "trim" spike-sft pickit -i spe.h5 spe2.h5 --method ties --trim 0 -o bad.h5
"$PY" -c "
import h5py, shutil
shutil.copy('spe.h5', 'noindices.h5')
with h5py.File('noindices.h5', 'r+') as f:
    layers = [k for k in f['delta'].keys() if 'indices' in f['delta'][k]]
    del f['delta'][layers[0]]['indices']
"
expect_fail "an adapted model whose delta layer lost /indices" 3 "noindices.h5.*/delta/layer[0-9]+/indices.*missing" spike-sft eval -i noindices.h5 --task tasks.h5:invert
# Adapted models a user edited (#40): a delta removed, an index repeated, a layer the model lacks.
"$PY" -c "
import h5py, numpy as np, shutil
for name in ['nodelta', 'dupindex', 'extralayer']:
    shutil.copy('spe.h5', name + '.h5')
with h5py.File('nodelta.h5', 'r+') as f:
    del f['/delta/layer0']
with h5py.File('dupindex.h5', 'r+') as f:
    g = [f['delta'][k] for k in f['delta'] if len(f['delta'][k]['indices']) > 1][0]
    i = g['indices'][...]; v = g['values'][...]
    del g['indices'], g['values']
    g['indices'] = np.concatenate([i[:1], i[:-1]]); g['values'] = v
with h5py.File('extralayer.h5', 'r+') as f:
    f['/delta/layer9/indices'] = np.array([0], np.int64); f['/delta/layer9/values'] = np.array([1.0], np.float32)
"
expect_fail "an adapted model without the delta of layer 0" 3 "nodelta.h5.*/delta/layer0/indices.*missing" spike-sft eval -i nodelta.h5 --task tasks.h5:invert
expect_fail "an adapted model that repeats a delta index" 3 "dupindex.h5.*/delta/layer[0-9]+/indices.*repeats" spike-sft eval -i dupindex.h5 --task tasks.h5:invert
expect_fail "an adapted model with a delta of layer 9" 3 "extralayer.h5.*/delta/layer9/indices.*not a delta of the model's layers" spike-sft eval -i extralayer.h5 --task tasks.h5:invert
expect_fail "pretrain --holdout 0: no test split (was a NaN accuracy, exit 1)" 2 "holdout.*holds out none" spike-sft pretrain -i fm.h5 --holdout 0 --hidden 8 --epochs 1 -o bad.h5
expect_fail "pickit of a plain model" 3 "base.h5.*nk_schema is 'spike-sft.model/1', expected spike-sft.adapted/1" spike-sft pickit -i spe.h5 base.h5 --method ties -o bad.h5
"$PY" -c "
import h5py, shutil
shutil.copy('base.h5', 'nanmodel.h5')
with h5py.File('nanmodel.h5', 'r+') as f:
    w = f['/model/weight0']; a = w[...]; a[0, 0] = float('nan'); w[...] = a
"
expect_fail "NaN weights" 3 "dataset /model/weight0: NaN" spike-sft eval -i nanmodel.h5 --data fm.h5
[ ! -e bad.h5 ] && pass "no output file from failed runs" || fail "a failed run left bad.h5"
no_temp_files "no temp files" "$WORK"
$PY -c "import h5py, shutil; shutil.copy('base.h5', 'slope.h5'); f = h5py.File('slope.h5', 'r+'); f['/model'].attrs['slope'] = float('nan')"
expect_fail "a model whose surrogate slope is NaN" 3 "slope.h5.*/model.*slope" spike-sft -q eval -i slope.h5 --data fm.h5
finish
