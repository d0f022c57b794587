# stages.py OUT SEEDS NAME...: part (A)'s tables from the exact outputs
# OUT/NAME-SEED.h5 and the per-run times in OUT/times.txt.
import sys
import h5py
import numpy as np

out, seeds, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
times = dict(line.split() for line in open(f"{out}/times.txt"))


def stages(f):
    tv, cov = [], []
    i = 0
    while f"/stages/{i:03d}" in f:
        g = f[f"/stages/{i:03d}"]
        tv.append(g.attrs["tv_law"])
        cov.append(g.attrs["coverage"])
        i += 1
    return np.array(tv), np.array(cov)


print("| method (learner, alpha) | final tv_law, median (max) over seeds | worst stage tv_law | max coverage M over stages | evals | s per run |")
print("|---|---|---|---|---|---|")
summary = {}
for name in names:
    files = [h5py.File(f"{out}/{name}-{s}.h5", "r") for s in range(1, seeds + 1)]
    final = np.array([f.attrs["tv_law"] for f in files])
    st = [stages(f) for f in files]
    worst_tv = max((s[0].max() for s in st if len(s[0])), default=float("nan"))
    worst_cov = max((s[1].max() for s in st if len(s[1])), default=float("nan"))
    summary[name] = (final, worst_tv, worst_cov)
    print(f"| {name} | {np.median(final):.4f} ({final.max():.4f}) | {worst_tv:.4f} | {worst_cov:.3g} | {files[0].attrs['evals']} | {float(times[name]):.2f} |")
print()
print("Per stage, seed 1 (tv_law / coverage):")
print()
print("| stage | " + " | ".join(names) + " |")
print("|---|" + "---|" * len(names))
per = {n: stages(h5py.File(f"{out}/{n}-1.h5", "r")) for n in names}
K = max(len(v[0]) for v in per.values())
for i in range(K):
    cells = []
    for n in names:
        tv, cov = per[n]
        cells.append(f"{tv[i]:.3f} / {cov[i]:.3g}" if i < len(tv) else "")
    print(f"| {i + 1} | " + " | ".join(cells) + " |")
print()
a = summary["aldrift-markov-0.5"]
ok_a = a[1] <= 0.05 and a[2] <= 50
print(f"Goal: aldrift tv_law <= 0.05 with coverage <= 50 at every stage: worst stage tv_law {a[1]:.4f}, worst coverage {a[2]:.3g}: {'met' if ok_a else 'NOT met'}")
for base in ["sir", "cem-markov-0.5"]:
    f = summary[base][0]
    print(f"Goal: {base} stays >= 0.2: min over seeds {f.min():.4f}: {'met' if f.min() >= 0.2 else 'NOT met'}")
