#!/usr/bin/python3
"""proxy_certify_reference.py CASE.h5 - checks proxy-certify's statistics
against scipy and its CRC threshold against a brute-force numpy search.
/stats/{successes,trials,alpha,lower,upper,p,quantile,k,t,pvalue} and
/crc/{scores,losses,bound,target,lambda} (several cases /crc/NNN/...)."""
import sys

import h5py
import numpy as np
from scipy import stats

f = h5py.File(sys.argv[1], "r")
bad = 0


def report(name, err, tol):
    global bad
    ok = err <= tol
    bad += not ok
    print(f"proxy_certify_reference: {name}: max error {err:.3g} (tol {tol:g}) {'ok' if ok else 'FAIL'}")


s = f["stats"]
k, n, a = s["successes"][()], s["trials"][()], s["alpha"][()]
lower = np.where(k > 0, stats.beta.ppf(a, np.maximum(k, 1), n - k + 1), 0.0)
upper = np.where(k < n, stats.beta.ppf(1 - a, k + 1, np.maximum(n - k, 1)), 1.0)
report("Clopper-Pearson lower", np.abs(lower - s["lower"][()]).max(), 1e-9)
report("Clopper-Pearson upper", np.abs(upper - s["upper"][()]).max(), 1e-9)
p = s["p"][()]
report("Phi^-1", np.abs(stats.norm.ppf(p) - s["quantile"][()]).max(), 1e-9)
pv = np.array([stats.binomtest(int(kk), int(tt), 0.5).pvalue if tt > 0 else 1.0 for kk, tt in zip(s["k"][()], s["t"][()])])
report("binomial test p-value", np.abs(pv - s["pvalue"][()]).max(), 1e-9)

for name in f["crc"]:
    c = f["crc"][name]
    scores, losses, bound, target = c["scores"][()], c["losses"][()], c["bound"][()], c["target"][()]
    nn = len(scores)
    best = np.inf
    for lam in np.concatenate([np.unique(scores), [np.inf]]):
        risk = (losses * (scores >= lam)).sum() / nn
        if nn / (nn + 1) * risk + bound / (nn + 1) <= target:
            best = min(best, lam)
    ours = c["lambda"][()]
    same = (np.isinf(best) and np.isinf(ours)) or best == ours
    bad += not same
    print(f"proxy_certify_reference: CRC case {name}: numpy lambda {best}, ours {ours} {'ok' if same else 'FAIL'}")
sys.exit(1 if bad else 0)
