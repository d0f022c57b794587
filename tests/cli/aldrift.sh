# aldrift.sh - gen-exact | exact through a pipe; pi_T against numpy
# enumeration; each stage's tv_law against a dense-matrix propagation in
# numpy; the final markov fit against counts of the stored samples; tv_law
# falls with --steps; ALDRIFT beats SIR, CEM and CbAS on a small space;
# problems written by h5py alone; the plot; bad input.
. "$(dirname "$0")/lib.sh"

AL="aldrift -q"
check "gen-exact | exact through a pipe" sh -c "$AL gen-exact --length 8 --target 01101001 --stay 0.85 -o - | $AL exact -i - --T 3 --budget 8000 --stages 5 --steps 8 --burn-in 3 --seed 2 -o run.h5"
check "gen-exact to a file" $AL gen-exact --length 8 --target 01101001 --stay 0.85 -o p.h5
for m in sir cem cbas; do
  check "exact --method $m" $AL exact -i p.h5 --T 3 --budget 8000 --stages 5 --method $m --seed 2 -o $m.h5
done
check "exact --learner markov-h" $AL exact -i p.h5 --T 3 --budget 8000 --stages 5 --steps 8 --burn-in 3 --learner markov-h -o mh.h5
check "exact --learner table" $AL exact -i p.h5 --T 3 --budget 8000 --stages 5 --steps 8 --burn-in 3 --learner table --smoothing 0.1 -o table.h5
for s in 1 2 4 8; do
  check "exact --steps $s" $AL exact -i p.h5 --T 3 --stages 1 --chains 100 --budget 100000 --steps $s --burn-in $((s - 1)) -o steps$s.h5
done

"$PY" - <<'PYEOF'
import h5py, numpy as np, os, sys, itertools
sys.path.insert(0, os.environ["NK_SOURCE"] + "/tests/cli")
from nk_check import report, finish
P = h5py.File("p.h5")
init, trans, cost = P["/prior/init"][()], P["/prior/trans"][()], P["/cost"][()]
A, n = len(init), 8
states = np.array(list(itertools.product(range(A), repeat=n)))  # lexicographic, first position most significant
report(np.array_equal(cost, (states != np.array([0,1,1,0,1,0,0,1])).sum(1)), "gen-exact: /cost is the Hamming distance to the target")
logL = np.log(init[states[:, 0]]) + np.log(trans[states[:, :-1], states[:, 1:]]).sum(1)

def target(T):
    l = logL - T * cost
    p = np.exp(l - l.max())
    return p / p.sum()

def model_probs(g):
    if "table" in g: return g["table"][()]
    i, t = g["init"][()], g["trans"][()]
    lp = np.log(i[states[:, 0]])
    for j in range(n - 1):
        tj = t[j] if t.ndim == 3 else t
        lp = lp + np.log(tj[states[:, j], states[:, j + 1]])
    return np.exp(lp)

def dense_law(q, pi, steps, burn):
    w = pi / q
    Pm = q[None, :] * np.minimum(1.0, w[None, :] / w[:, None])
    np.fill_diagonal(Pm, 0.0)
    Pm[np.diag_indices_from(Pm)] = 1.0 - Pm.sum(1)
    mu, law = q.copy(), np.zeros_like(q)
    for m in range(1, steps + 1):
        mu = mu @ Pm
        if m > burn: law += mu / (steps - burn)
    return law

R = h5py.File("run.h5")
report(np.allclose(R["/target/p"][()], target(3.0), rtol=1e-10, atol=1e-15), "/target/p = pi_T by numpy enumeration")
worst = 0
for i in range(5):
    g = R[f"/stages/{i:03d}"]
    q, pi = model_probs(g["proposal"]), target(g.attrs["T"])
    law = dense_law(q, pi, int(g.attrs["steps"]), int(g.attrs["burn_in"]))
    worst = max(worst, abs(0.5 * np.abs(law - pi).sum() - g.attrs["tv_law"]))
    report(abs(np.max(pi / q) - g.attrs["coverage"]) < 1e-9 * g.attrs["coverage"], f"stage {i}: coverage = max pi/q") if i in (0, 4) else None
report(worst < 1e-10, f"tv_law of every stage = dense-matrix propagation in numpy (worst gap {worst:.1e})")
report(R["/stages/000/proposal/trans"].shape == (2, 2) and R["/stages/001/proposal/trans"].shape == (7, 2, 2), "stage 0 draws from the prior [A,A]; markov fits are [n-1,A,A]")
report(R.attrs["evals"] == 5 * R["/stages/000"].attrs["chains"] * 9 and R.attrs["evals"] <= 8000, "evals = stages x chains x (steps + 1) within the budget")
# The final markov fit = add-alpha counts of the last stage's samples.
S = R["/samples"][()]
report(S.shape == (R["/stages/004"].attrs["chains"] * 5, 8) and S.dtype == np.int32, "/samples int32 [chains x (steps - burn-in), n]")
a = 0.5
c0 = np.bincount(S[:, 0], minlength=A) + a
ok = np.allclose(R["/final/init"][()], c0 / c0.sum())
for j in range(n - 1):
    C = np.zeros((A, A)) + a
    np.add.at(C, (S[:, j], S[:, j + 1]), 1)
    ok &= np.allclose(R["/final/trans"][j], C / C.sum(1, keepdims=True))
report(ok, "/final/{init,trans} = add-0.5 normalised counts of /samples (markov MLE)")
tv = {m: h5py.File(f"{m}.h5").attrs["tv_law"] for m in ["sir", "cem", "cbas", "mh", "table"]}
tv["aldrift"] = R.attrs["tv_law"]
# (SIR is close too on 256 strings with 8000 draws; the benchmark's 4096 strings at T = 5 separate it.)
report(tv["aldrift"] < 0.05 and min(tv["cem"], tv["cbas"], tv["mh"]) > 0.2, "aldrift (markov) within 0.05 of pi_T, cem, cbas and markov-h beyond 0.2: " + ", ".join(f"{k} {v:.3f}" for k, v in tv.items()))
C = h5py.File("cem.h5")
report(abs(0.5 * np.abs(model_probs(C["/final"]) - target(3.0)).sum() - C.attrs["tv_law"]) < 1e-10, "cem: tv_law = TV of its final model")
steps = [h5py.File(f"steps{s}.h5").attrs["tv_law"] for s in [1, 2, 4, 8]]
report(all(x > y for x, y in zip(steps, steps[1:])), "tv_law falls with --steps: " + ", ".join(f"{v:.4f}" for v in steps))
# A problem written by h5py alone (A = 3, n = 4; no nk_* attributes).
rng = np.random.default_rng(0)
t = rng.random((3, 3)) + 0.1
with h5py.File("foreign.h5", "w") as f:
    f["/prior/init"] = np.array([0.5, 0.25, 0.25])
    f["/prior/trans"] = t / t.sum(1, keepdims=True)
    f["/cost"] = rng.random(81)
with h5py.File("badrow.h5", "w") as f:
    f["/prior/init"] = np.array([0.5, 0.5]); f["/prior/trans"] = np.array([[0.9, 0.1], [0.3, 0.6]]); f["/cost"] = np.zeros(16)
with h5py.File("negative.h5", "w") as f:
    f["/prior/init"] = np.array([1.2, -0.2]); f["/prior/trans"] = np.eye(2); f["/cost"] = np.zeros(16)
with h5py.File("size.h5", "w") as f:
    f["/prior/init"] = np.array([0.5, 0.5]); f["/prior/trans"] = np.eye(2); f["/cost"] = np.zeros(24)
with h5py.File("nan.h5", "w") as f:
    f["/prior/init"] = np.array([0.5, 0.5]); f["/prior/trans"] = np.eye(2); c = np.zeros(16); c[5] = np.nan; f["/cost"] = c
finish()
PYEOF
[ $? -eq 0 ] && pass "exact checked in numpy" || fail "exact checked in numpy"

check "a problem with no nk_* attributes (A = 3, n = 4)" $AL exact -i foreign.h5 --T 2 --budget 3000 --stages 3 -o foreign_out.h5
check "plot of several runs" $AL plot -i run.h5 sir.h5 cem.h5 mh.h5 -o fig.svg
if grep -q "<svg" fig.svg && grep -q "tv_law" fig.svg; then pass "plot: an SVG with tv_law lines"; else fail "plot: an SVG with tv_law lines"; fi

expect_fail "rows not summing to 1" 3 "badrow.h5.*/prior/trans.*row 1 sum" $AL exact -i badrow.h5 -o x.h5
expect_fail "negative probabilities" 3 "/prior/init.*entry 1" $AL exact -i negative.h5 -o x.h5
expect_fail "cost not of size A^n" 3 "/cost.*size 24 is not A\^n" $AL exact -i size.h5 -o x.h5
expect_fail "NaN cost" 3 "/cost.*index \\[5\\]" $AL exact -i nan.h5 -o x.h5
expect_fail "T < 0" 2 "--T" $AL exact -i p.h5 --T -1 -o x.h5
expect_fail "budget below one stage" 2 "budget 50 is below" $AL exact -i p.h5 --budget 50 -o x.h5
expect_fail "unknown method" 2 "method" $AL exact -i p.h5 --method annealing -o x.h5
expect_fail "another tool's file" 3 "nk_schema" $AL exact -i run.h5 -o x.h5
expect_fail "empty standard input" 3 "standard input" sh -c "$AL exact -i - -o x.h5 </dev/null"
printf 'HDF5 but not really' > junk.h5
expect_fail "not HDF5" 3 "junk.h5" $AL exact -i junk.h5 -o x.h5
if [ -e x.h5 ]; then fail "a failed run left x.h5"; else pass "no output left by failed runs"; fi
no_temp_files "no temp files left" .
finish
