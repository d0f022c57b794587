# dllm-sparse.sh - gen | attend | plan | eval through files and pipes; the
# kernel against numpy float64 attention (dense and masked); plan budgets and
# eval's recall recomputed in numpy; multi-layer and GQA files; bad input.
. "$(dirname "$0")/lib.sh"

check "gen --single-step | attend --dense through a pipe" sh -c 'dllm-sparse gen --single-step --length 333 --heads 4 --kv-heads 2 --dims 48 --seed 2 -o - | tee step.h5 | dllm-sparse -q attend -i - --dense -o dense.h5'
check "attend --unfused (naive dense)" dllm-sparse -q attend -i step.h5 --unfused -o unfused.h5
check "gen a trajectory (ragged L, GQA)" dllm-sparse -q gen --length 700 --heads 4 --kv-heads 2 --dims 48 --steps 8 --transitions 2 --seed 3 -o traj.h5
for policy in step once-uniform every-uniform oracle; do
  check "plan --policy $policy" dllm-sparse -q plan -i traj.h5 --policy $policy --sparsity 0.7 --anchor-every 3 -o plan_$policy.h5
  check "eval $policy" dllm-sparse -q eval -i traj.h5 --plan plan_$policy.h5 -o eval_$policy.h5
done
check "plan --score pooled --drift 0" dllm-sparse -q plan -i traj.h5 --score pooled --drift 0 --sparsity 0.7 -o plan_pooled.h5
check "attend one trajectory step with the plan's mask" dllm-sparse -q attend -i traj.h5 --step 5 --mask plan_step.h5 -o masked.h5
check "eval prints a TSV table when piped" sh -c 'dllm-sparse eval -i traj.h5 --plan plan_step.h5 -o e2.h5 | head -1 | grep -q "^step	anchor	density"'
check "plot: the overlap per layer and the error per step as SVG" sh -c 'dllm-sparse -q plot -i eval_step.h5 -o overlap.svg --error error.svg && grep -q "<svg" overlap.svg && grep -q "<svg" error.svg && grep -q "overlap" overlap.svg'
check "two layers: gen, plan, eval" sh -c 'dllm-sparse -q gen --length 256 --heads 2 --dims 32 --steps 3 --layers 2 -o layers.h5 && dllm-sparse -q plan -i layers.h5 --sparsity 0.5 -o plan_layers.h5 && dllm-sparse -q eval -i layers.h5 --plan plan_layers.h5 -o eval_layers.h5'

if "$PY" - <<'PYEOF'
import h5py, numpy as np, sys
fails = 0
def check(name, ok):
    global fails
    print(("ok   " if ok else "FAIL ") + name); fails += 0 if ok else 1
def attention(q, k, v, mask=None, block=64):
    H, L, d = q.shape; G = k.shape[0]; out = np.zeros((H, L, d)); probs = []
    for h in range(H):
        g = h // (H // G)
        s = q[h] @ k[g].T / np.sqrt(d)
        if mask is not None:
            keep = np.repeat(np.repeat(mask[h], block, 0), block, 1)[:L, :L]
            s = np.where(keep > 0, s, -np.inf)
        s -= s.max(1, keepdims=True); p = np.exp(s); p /= p.sum(1, keepdims=True)
        out[h] = p @ v[g]; probs.append(p)
    return out, probs
def rel(a, b): return np.abs(a - b).max() / np.abs(b).max()
f = h5py.File("step.h5"); q, k, v = [f[n][...].astype(np.float64) for n in "qkv"]
ref, _ = attention(q, k, v)
for name in ("dense.h5", "unfused.h5"):
    check(f"{name}: equals numpy float64 attention to 1e-5 (got {rel(h5py.File(name)['o'][...], ref):.1e})", rel(h5py.File(name)["o"][...], ref) < 1e-5)
t = h5py.File("traj.h5")
H, L = t["steps/000/q"].shape[:2]; nb = -(-L // 64)
for policy in ("step", "once-uniform", "every-uniform", "oracle"):
    p = h5py.File(f"plan_{policy}.h5")
    masks = p["masks"][...]
    exact = all(m.sum() == round(0.3 * H * nb * nb) for m in masks)
    diag = all(np.all(m[:, np.arange(nb), np.arange(nb)]) for m in masks)
    check(f"{policy}: every mask keeps exactly round(0.3 H nb^2) = {round(0.3 * H * nb * nb)} blocks and every diagonal", exact and diag)
    if policy == "once-uniform":
        check("once-uniform: one mask for all steps", len(masks) == 1)
    if policy in ("every-uniform", "oracle"):
        check(f"{policy}: a mask per step", len(masks) == 8)
pu = h5py.File("plan_once-uniform.h5")["masks"][0]
check("once-uniform: the same number of blocks in every head (+-1)", np.ptp(pu.reshape(H, -1).sum(1)) <= 1)
# eval's recall and error for step 5, recomputed here
e = h5py.File("eval_step.h5"); p = h5py.File("plan_step.h5")
s5 = t["steps/005"]; q, k, v = [s5[n][...].astype(np.float64) for n in "qkv"]
mask = p["masks"][p["mask_of_step"][5]]
dense, probs = attention(q, k, v)
sparse, _ = attention(q, k, v, mask)
keep = [np.repeat(np.repeat(mask[h], 64, 0), 64, 1)[:L, :L] for h in range(H)]
recall = np.array([(probs[h] * keep[h]).sum(1).mean() for h in range(H)])
error = np.array([np.linalg.norm(sparse[h] - dense[h]) / np.linalg.norm(dense[h]) for h in range(H)])
check(f"eval recall of step 5 = numpy's (max diff {np.abs(e['recall'][5] - recall).max():.1e})", np.allclose(e["recall"][5], recall, atol=1e-5))
check(f"eval error of step 5 = numpy's (max diff {np.abs(e['error'][5] - error).max():.1e})", np.allclose(e["error"][5], error, rtol=1e-3, atol=1e-5))
m = h5py.File("masked.h5")["o"][...]
check(f"attend --mask equals numpy masked attention (rel {rel(m, sparse):.1e})", rel(m, sparse) < 1e-5)
oracle, stepe = h5py.File("eval_oracle.h5").attrs["mean_recall"], h5py.File("eval_step.h5").attrs["mean_recall"]
check(f"the oracle keeps at least the mass of the step policy ({oracle:.4f} >= {stepe:.4f})", oracle >= stepe - 1e-6)
# the step-to-step overlap of the exact best blocks (global ranking at the plan's budget), steps 4 -> 5
def best(step, budget):
    st = t[f"steps/{step:03d}"]; q, k, v = [st[n][...].astype(np.float64) for n in "qkv"]
    _, pr = attention(q, k, v)
    P = np.zeros((H, nb, nb))
    for h in range(H):
        for i in range(nb):
            rows = pr[h][i * 64:(i + 1) * 64]
            P[h, i] = [rows[:, j * 64:(j + 1) * 64].sum(1).mean() for j in range(nb)]
    keep = np.zeros((H, nb, nb), bool); keep[:, np.arange(nb), np.arange(nb)] = True
    cand = [(P[h, i, j], h, i, j) for h in range(H) for i in range(nb) for j in range(nb) if i != j]
    cand.sort(key=lambda c: -c[0])
    for _, h, i, j in cand[:budget - H * nb]: keep[h, i, j] = True
    return keep
b4, b5 = best(4, int(mask.sum())), best(5, int(mask.sum()))
jac = (b4 & b5).sum() / (b4 | b5).sum()
ov = e["overlap"][...]
check(f"eval overlap of steps 4 -> 5 = numpy's ({ov[4]:.4f} vs {jac:.4f}), 7 entries in [0, 1]", abs(ov[4] - jac) < 1e-9 and ov.shape == (7,) and ((ov >= 0) & (ov <= 1)).all())
check("two-layer eval has both layers", "layers/00/recall" in h5py.File("eval_layers.h5") and "layers/01/recall" in h5py.File("eval_layers.h5"))
sys.exit(1 if fails else 0)
PYEOF
then pass "python reference checks"; else fail "python reference checks"; fi

"$PY" - <<'PYEOF'
import h5py, numpy as np
def w(name, q, k, v):
    with h5py.File(name, "w") as f:
        f["q"], f["k"], f["v"] = q, k, v
r = np.random.default_rng(1).standard_normal
w("bigd.h5", r((1, 64, 300), dtype=np.float32), r((1, 64, 300), dtype=np.float32), r((1, 64, 300), dtype=np.float32))
w("empty.h5", np.zeros((1, 0, 8), np.float32), np.zeros((1, 0, 8), np.float32), np.zeros((1, 0, 8), np.float32))
q = r((2, 64, 16), dtype=np.float32); q[1, 5, 3] = np.nan
w("nan.h5", q, r((2, 64, 16), dtype=np.float32), r((2, 64, 16), dtype=np.float32))
w("mismatch.h5", r((2, 64, 16), dtype=np.float32), r((2, 60, 16), dtype=np.float32), r((2, 60, 16), dtype=np.float32))
w("gqa3.h5", r((4, 64, 16), dtype=np.float32), r((3, 64, 16), dtype=np.float32), r((3, 64, 16), dtype=np.float32))
w("ok.h5", r((2, 100, 16), dtype=np.float32), r((2, 100, 16), dtype=np.float32), r((2, 100, 16), dtype=np.float32))
with h5py.File("badmask.h5", "w") as f: f["mask"] = np.ones((2, 3, 3), np.uint8)
m = np.ones((2, 2, 2), np.uint8); m[1, 1, :] = 0
with h5py.File("holemask.h5", "w") as f: f["mask"] = m
PYEOF
expect_fail "d > 256" 3 "bigd.h5.*/q.*d = 300" dllm-sparse attend -i bigd.h5 --dense -o out.h5
expect_fail "L = 0" 3 "empty.h5.*L = 0" dllm-sparse attend -i empty.h5 --dense -o out.h5
expect_fail "NaN in /q" 3 "nan.h5.*dataset /q.*NaN" dllm-sparse attend -i nan.h5 --dense -o out.h5
expect_fail "K shorter than Q" 3 "mismatch.h5.*/k.*does not fit" dllm-sparse attend -i mismatch.h5 --dense -o out.h5
$PY -c "
import h5py, shutil
shutil.copy('plan_step.h5', 'block0.h5')
h5py.File('block0.h5', 'r+').attrs['block'] = 0"
expect_fail "a plan whose block attribute is 0 (was SIGFPE)" 3 "block0.h5.*block.*1..65536" dllm-sparse eval -i traj.h5 --plan block0.h5 -o out.h5
# Trajectories whose steps differ in L, and a plan of more steps than the trajectory (#40).
$PY -c "
import h5py, shutil
shutil.copy('traj.h5', 'unequal.h5')
with h5py.File('unequal.h5', 'r+') as f:
    for x in 'qkv':
        a = f['/steps/003/' + x][...]
        del f['/steps/003/' + x]
        f['/steps/003/' + x] = a[:, :690]   # the same 11 blocks of 64, 10 positions fewer
shutil.copy('traj.h5', 'short.h5')
with h5py.File('short.h5', 'r+') as f:
    del f['/steps/006'], f['/steps/007']"
expect_fail "plan: a step of another L (the same block count)" 3 "unequal.h5.*/steps/003/q.*\\[4,690,48\\] differs from \\[4,700,48\\]" dllm-sparse plan -i unequal.h5 -o out.h5
expect_fail "eval: a step of another L" 3 "unequal.h5.*/steps/003/q.*differs" dllm-sparse eval -i unequal.h5 --plan plan_step.h5 -o out.h5
expect_fail "eval: a plan of 8 steps over a trajectory of 6" 3 "plan_step.h5.*/mask_of_step.*plans 8 steps.*short.h5.*has 6" dllm-sparse eval -i short.h5 --plan plan_step.h5 -o out.h5
expect_fail "KV heads that do not divide the heads" 3 "3 KV heads do not divide 4" dllm-sparse attend -i gqa3.h5 --dense -o out.h5
expect_fail "a mask that does not fit the block grid" 3 "badmask.h5.*/mask.*block grid" dllm-sparse attend -i ok.h5 --mask badmask.h5 -o out.h5
expect_fail "a mask with an empty query block" 3 "head 1, query block 1 keeps no key block" dllm-sparse attend -i ok.h5 --mask holemask.h5 -o out.h5
expect_fail "a plan's mask for another length" 3 "block grid" dllm-sparse attend -i ok.h5 --mask plan_step.h5 -o out.h5
expect_fail "eval: a plan made for other heads names both shapes" 3 "plan_layers.h5.*/layers/00/masks.*,2,4,4\\].*\\[A,4,4,4\\]" sh -c 'dllm-sparse -q gen --length 256 --heads 4 --dims 32 --steps 3 --layers 2 -o heads4.h5 && dllm-sparse eval -i heads4.h5 --plan plan_layers.h5 -o out.h5'
expect_fail "sparsity beyond the diagonal" 2 "diagonal" dllm-sparse plan -i traj.h5 --sparsity 0.95 -o out.h5
expect_fail "neither --mask nor --dense" 2 "give --mask" dllm-sparse attend -i ok.h5 -o out.h5
expect_fail "--block 50" 2 "block" dllm-sparse attend -i ok.h5 --dense --block 50 -o out.h5
expect_fail "eval without --plan" 2 "plan" dllm-sparse eval -i traj.h5 -o out.h5
expect_fail "a trajectory without steps" 3 "no denoising steps" dllm-sparse plan -i ok.h5 -o out.h5
head -c 2000 traj.h5 > truncated.h5
expect_fail "truncated HDF5" 3 "truncated.h5" dllm-sparse plan -i truncated.h5 -o out.h5
expect_fail "plot of a file that is not an eval" 3 "plan_step.h5" dllm-sparse plot -i plan_step.h5 -o out.svg
expect_fail "plot without -o" 2 "output" dllm-sparse plot -i eval_step.h5
expect_fail "--head-budget other" 2 "head-budget" dllm-sparse plan -i traj.h5 --head-budget other -o out.h5
expect_fail "empty stdin" 3 "standard input" sh -c 'dllm-sparse attend -i - --dense -o out.h5 < /dev/null'
if nvidia-smi -L >/dev/null 2>&1; then
  pass "a GPU is present: the CUDA kernel is compared with the CPU kernel by unit.cuda"
else
  expect_fail "--device cuda without a GPU" 1 "--device cuda: " dllm-sparse attend -i ok.h5 --dense --device cuda -o out.h5
fi
if [ -e out.h5 ] || [ -e out.svg ]; then fail "a failed run left out.h5 or out.svg"; else pass "no output file after failures"; fi
no_temp_files "no temp files left" .
finish
