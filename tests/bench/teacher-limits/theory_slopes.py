"""Benchmark part (1): fitted slopes of a theory file against the laws.

Feature-learning slope of log eps_BO vs log n where 8 <= k_c <= k/4 (goal
1/(2 beta) - 1 +- 0.05); refinement slope where n >= 10x the last onset
(goal -1 +- 0.05); onset slope of log n_i vs log i over 2 <= i <= k/4 (goal
2 beta +- 0.05); eps_BO / eps_kc over k_c >= 1 (goal within [0.5, 2]).
Prints one table row; exits 0 (the goals are reported, not enforced).
"""
import sys
import h5py
import numpy as np

f = h5py.File(sys.argv[1])
t = f["/theory"]
beta, k, delta = float(f.attrs["beta"]), int(f.attrs["k"]), float(f.attrs["noise"])
n, e, kc, on, ek = (t[x][()] for x in ["n", "eps_bo", "k_c", "onset_n", "eps_kc"])


def slope(x, y):
    return np.polyfit(np.log(x), np.log(y), 1)[0] if len(x) > 2 else float("nan")


fl = (kc >= 8) & (kc <= k // 4)
s_fl = slope(n[fl], e[fl])
last = np.nanmax(on) if np.isfinite(on).any() else np.inf
rf = n >= 10 * last
s_rf = slope(n[rf], e[rf])
i = np.arange(1, k + 1)
ok = np.isfinite(on) & (i >= 2) & (i <= k // 4)
s_on = slope(i[ok], on[ok])
r = e[kc >= 1] / ek[kc >= 1]
goal = 1 / (2 * beta) - 1


def mark(x, target, tol):
    return "met" if abs(x - target) <= tol else "NOT met"


print(f"| {beta:g} | {s_fl:.3f} ({goal:.3f}; {mark(s_fl, goal, 0.05)}) | {s_rf:.3f} ({mark(s_rf, -1, 0.05)}) | "
      f"{s_on:.3f} ({2 * beta:g}; {mark(s_on, 2 * beta, 0.05)}) | [{r.min():.2f}, {r.max():.2f}] "
      f"({'met' if r.min() >= 0.5 and r.max() <= 2 else 'NOT met'}) | {t.attrs['C']:.3g} | {fl.sum()} / {rf.sum()} |")
