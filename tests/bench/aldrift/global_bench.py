# global_bench.py BIN OUT: part (B) of the aldrift benchmark. Every method on
# rastrigin (A = 1, 10), levy, ackley and styblinski-tang at n = 2, 5, 10, 20:
# median evaluations to reach d - d* <= 1e-1 .. 1e-6 over the seeds, the
# log fit evals = a + b ln(1/eps) of the median curve, and the peers pycma
# (cma.fmin2, BIPOP, 9 restarts) and Nevergrad NGOpt on the same x*.
# Run by run.sh with the benchmark venv's python (tests/bench/aldrift/venv.sh).
# Environment: SEEDS (ours, default 15), CMA_SEEDS (default 15), NG_SEEDS
# (default 2), BUDGET (default 100000), NG_BUDGET (default 20000), DIMS,
# FUNCTIONS, METHODS (subsets, comma separated; a method's name as in the
# table, e.g. "aldrift (product),pycma").
import os
import subprocess
import sys
import time
import warnings

import h5py
import numpy as np

warnings.filterwarnings("ignore")
bin_dir, out = sys.argv[1], sys.argv[2]
SEEDS = int(os.environ.get("SEEDS", 15))
CMA_SEEDS = int(os.environ.get("CMA_SEEDS", 15))
NG_SEEDS = int(os.environ.get("NG_SEEDS", 2))
BUDGET = int(os.environ.get("BUDGET", 100000))
NG_BUDGET = int(os.environ.get("NG_BUDGET", 20000))
DIMS = [int(v) for v in os.environ.get("DIMS", "2,5,10,20").split(",")]
FUNCTIONS = os.environ.get("FUNCTIONS", "rastrigin1,rastrigin10,levy,ackley,styblinski-tang").split(",")
EPS = [10.0 ** -k for k in range(1, 7)]
os.makedirs(out, exist_ok=True)


def numpy_d(name, A):
    if name == "rastrigin":
        return lambda z: float(np.sum(z * z + A * (1 - np.cos(2 * np.pi * z))))
    if name == "levy":
        def levy(z):
            w = 1 + z / 4
            s = np.sin(np.pi * w[0]) ** 2 + np.sum((w[:-1] - 1) ** 2 * (1 + 10 * np.sin(np.pi * w[:-1] + 1) ** 2))
            return float(s + (w[-1] - 1) ** 2 * (1 + np.sin(2 * np.pi * w[-1]) ** 2))
        return levy
    if name == "ackley":
        def ackley(z):
            n = len(z)
            return float(max(0.0, -20 * np.exp(-0.2 * np.sqrt(np.sum(z * z) / n)) - np.exp(np.sum(np.cos(2 * np.pi * z)) / n) + 20 + np.e))
        return ackley
    ys = -2.903534027771178
    fmin = 0.5 * (ys**4 - 16 * ys**2 + 5 * ys)
    return lambda z: float(max(0.0, np.sum(0.5 * ((z + ys) ** 4 - 16 * (z + ys) ** 2 + 5 * (z + ys)) - fmin)))


def x_star(n, seed):
    path = f"{out}/xs-{n}-{seed}.h5"
    if not os.path.exists(path):
        with h5py.File(path, "w") as f:
            f["/x_star"] = np.random.default_rng(1000 * n + seed).uniform(-2, 2, n)
    return path


def ours(fn, A, n, seed, method, learner):
    path = f"{out}/run.h5"
    cmd = [f"{bin_dir}/aldrift", "-q", "--threads", "1", "global", "--function", fn, "--amplitude", str(A), "--dim", str(n),
           "--x-star", x_star(n, seed), "--seed", str(seed), "--budget", str(BUDGET), "--eps", "1e-6",
           "--method", method, "-o", path]
    if learner:
        cmd += ["--learner", learner]
    subprocess.run(cmd, check=True)
    return h5py.File(path, "r")["/curve/evals"][()][:6]


class Reached(Exception):
    pass


def peer(fn, A, n, seed, which):
    d = numpy_d(fn, A)
    xs = h5py.File(x_star(n, seed), "r")["/x_star"][()]
    reach = [-1] * 6
    state = {"evals": 0, "best": np.inf}

    def f(x):
        state["evals"] += 1
        v = d(np.asarray(x, dtype=float) - xs)
        if v < state["best"]:
            state["best"] = v
            for k, e in enumerate(EPS):
                if reach[k] < 0 and v <= e:
                    reach[k] = state["evals"]
            if v <= 1e-6:
                raise Reached
        return v

    try:
        if which == "pycma":
            import cma
            cma.fmin2(f, np.zeros(n), 3.0, {"maxfevals": BUDGET, "verbose": -9, "seed": seed}, restarts=9, bipop=True)
        else:
            import nevergrad as ng
            opt = ng.optimizers.NGOpt(parametrization=ng.p.Array(init=np.zeros(n)).set_mutation(sigma=3.0), budget=NG_BUDGET)
            opt.parametrization.random_state = np.random.RandomState(seed)
            opt.minimize(f)
    except Reached:
        pass
    return np.array(reach)


def median_curve(curves):
    c = np.where(np.array(curves) < 0, np.inf, np.array(curves, dtype=float))
    return np.median(c, axis=0)


def log_fit(med):
    ok = np.isfinite(med)
    if ok.sum() < 3:
        return np.nan, np.nan, np.nan
    x = np.log(1 / np.array(EPS))[ok]
    y = med[ok]
    b, a = np.polyfit(x, y, 1)
    r2 = np.corrcoef(x, y)[0, 1] ** 2
    return a, b, r2


methods = [("aldrift", "optimistic"), ("aldrift", "gauss"), ("aldrift", "kde"), ("aldrift", "product"), ("random", None),
           ("cem", None), ("cbas", None), ("soo", None), ("doo", None), ("pycma", None), ("ngopt", None)]
if os.environ.get("METHODS"):
    keep = os.environ["METHODS"].split(",")
    methods = [(m, l) for m, l in methods if (f"aldrift ({l})" if l else m) in keep]
LEARNERS = [f"aldrift ({l})" for m, l in methods if l]
import cma, nevergrad  # noqa: E401
print(f"Peers: pycma {cma.__version__} (fmin2, BIPOP, 9 restarts, x0 = 0, sigma0 = 3), Nevergrad {nevergrad.__version__} "
      f"(NGOpt, sigma 3, budget {NG_BUDGET}); budget {BUDGET}; seeds: ours {SEEDS}, pycma {CMA_SEEDS}, NGOpt {NG_SEEDS}.")
print()
results = {}
for spec in FUNCTIONS:
    fn, A = ("rastrigin", float(spec[len("rastrigin"):])) if spec.startswith("rastrigin") else (spec, 1.0)
    envelope = fn in ("rastrigin", "levy")
    label = f"rastrigin A = {A:g}" if fn == "rastrigin" else fn
    for n in DIMS:
        print(f"### {label}, n = {n}")
        print()
        print("| method | evals to 1e-1 | 1e-2 | 1e-3 | 1e-4 | 1e-5 | 1e-6 | runs reaching 1e-6 | a | b | R^2 | s per run |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for method, learner in methods:
            # The controls have no envelope: DOO and the optimistic learner need one.
            if not envelope and (method == "doo" or learner == "optimistic"):
                continue
            seeds = CMA_SEEDS if method == "pycma" else NG_SEEDS if method == "ngopt" else SEEDS
            start = time.time()
            curves = []
            for seed in range(1, seeds + 1):
                if method in ("pycma", "ngopt"):
                    curves.append(peer(fn, A, n, seed, method))
                else:
                    curves.append(ours(fn, A, n, seed, method, learner))
            per_run = (time.time() - start) / seeds
            med = median_curve(curves)
            a, b, r2 = log_fit(med)
            name = f"aldrift ({learner})" if learner else method
            results[(label, n, name)] = (med, r2)
            cells = " | ".join(f"{v:.0f}" if np.isfinite(v) else "-" for v in med)
            hits = sum(1 for c in curves if c[5] >= 0)
            print(f"| {name} | {cells} | {hits}/{seeds} | {a:.0f} | {b:.1f} | {r2:.3f} | {per_run:.2f} |")
        print()
        sys.stdout.flush()

print("### Goals")
print()
best_r2 = {}
for (label, n, name), (med, r2) in results.items():
    if name.startswith("aldrift"):
        best_r2.setdefault((label, n), []).append((r2, name))
for (label, n), rs in best_r2.items():
    good = [f"{nm} {r:.3f}" for r, nm in rs if np.isfinite(r)]
    print(f"- R^2 of the log fit, {label}, n = {n}: " + (", ".join(good) if good else "no learner reached three eps"))
for label in ["rastrigin A = 10", "levy"]:
    for n in DIMS:
        if n < 10 or (label, n, "pycma") not in results:
            continue
        ours_best = min((results[(label, n, nm)][0][5] for nm in LEARNERS if (label, n, nm) in results), default=np.inf)
        cm = results[(label, n, "pycma")][0][5]
        print(f"- {label}, n = {n}: evaluations to 1e-6, best aldrift {ours_best:.0f} vs pycma {cm:.0f}: "
              f"{'fewer (met)' if ours_best < cm else 'NOT fewer'}")
for label in ["rastrigin A = 1"]:
    for n in DIMS:
        for nm in ("aldrift (optimistic)", "aldrift (product)"):
            if (label, n, "pycma") in results and (label, n, nm) in results:
                ob = results[(label, n, nm)][0][5]
                cm = results[(label, n, "pycma")][0][5]
                print(f"- {label}, n = {n}: {nm} / pycma to 1e-6 = {ob / cm:.2f}")
for (label, n, name), (med, r2) in results.items():
    if name == "soo" and n >= 5:
        ours_best = min((results[(label, n, nm)][0][5] for nm in LEARNERS if (label, n, nm) in results), default=np.inf)
        print(f"- {label}, n = {n}: evaluations to 1e-6, best aldrift {ours_best:.0f} vs SOO {med[5]:.0f}: "
              f"{'fewer (met)' if ours_best < med[5] else 'NOT fewer'}")
