#!/usr/bin/python3
"""summary.py OUT SPLIT... - the tables of run.sh part 2: per split, every
(method, learning rate) at its last checkpoint (log10 forget quality, utility,
forget ROUGE-L, privleak, verbmem, perplexity, relearning recovery, seconds
per run), the Pareto file's hypervolumes and undominated points, and the
issue's goals."""
import glob
import math
import os
import re
import sys

import h5py
import numpy as np

out, splits = sys.argv[1], sys.argv[2:]
for split in splits:
    target = h5py.File(f"{out}/ev-target-{split}.h5")["/eval"]
    retain = h5py.File(f"{out}/ev-retain-{split}.h5")["/eval"]
    tu, tfq = target.attrs["model_utility"], target.attrs["forget_quality"]
    print(f"\n{split}: target utility {tu:.4f}, log10 forget quality {math.log10(tfq):.2f}, forget ROUGE-L "
          f"{target['forget/rouge_l'][()].mean():.3f}; retain model utility {retain.attrs['model_utility']:.4f}, forget ROUGE-L "
          f"{retain['forget/rouge_l'][()].mean():.3f}")
    print(f"| method | lr | log10 FQ | utility | forget ROUGE-L | privleak | verbmem | ppl | recovery | best log10 FQ at utility >= 95% target | s/run |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for path in sorted(glob.glob(f"{out}/curve-{split}-*.h5")):
        label_lr = os.path.basename(path)[len(f"curve-{split}-"):-3]
        label, lr = re.match(r"^(.*?)-([0-9.]+e-?[0-9]+|[0-9.]+)$", label_lr).groups()
        c = h5py.File(path)["/curve"]
        fq, ut = c["forget_quality"][()], c["model_utility"][()]
        ok = ut[1:] >= 0.95 * tu
        best = np.log10(fq[1:][ok]).max() if ok.any() else float("nan")
        rl_path = f"{out}/relearn-{split}-{label_lr}.h5"
        rec = h5py.File(rl_path)["/relearn"].attrs["recovery"] if os.path.exists(rl_path) else float("nan")
        wall_path = f"{out}/wall-{split}-{label_lr}.txt"
        wall = float(open(wall_path).read()) if os.path.exists(wall_path) else float("nan")
        rows.append((label, float(lr), best))
        print(f"| {label} | {lr} | {np.log10(fq[-1]):.2f} | {ut[-1]:.4f} | {c['forget_rouge_l'][-1]:.3f} | {c['privleak'][-1]:+.3f} | "
              f"{c['verbmem'][-1]:.3f} | {c['ppl_general'][-1]:.1f} | {rec:.3f} | {best:.2f} | {wall:.0f} |")
    p = h5py.File(f"{out}/pareto-{split}.h5")
    names = [n.decode() for n in p["/methods/name"][()]]
    hv = dict(zip(names, p["/methods/hypervolume"][()]))
    free = dict(zip(names, p["/methods/undominated"][()]))
    dist = dict(zip(names, p["/methods/distance_to_retain"][()]))
    print(f"\n{split} Pareto (every checkpoint; reference: the target's forget quality, utility 0); {out}/pareto-{split}.svg")
    print("| method | hypervolume | checkpoints no other method dominates | distance to the retain model |")
    print("|---|---|---|---|")
    for n in sorted(names, key=lambda n: -hv[n]):
        print(f"| {n} | {hv[n]:.4f} | {int(free[n])} | {dist[n]:.3f} |")
    baselines = [n for n in names if not n.startswith("shred")]
    best_base = max(hv[n] for n in baselines) if baselines else 0
    print(f"  goal: a SHRED point no baseline dominates: {'met' if free.get('shred', 0) > 0 else 'NOT met'} "
          f"({int(free.get('shred', 0))}; counted against every other method, ablations included)")
    print(f"  goal: SHRED's front has the largest hypervolume: {'met' if hv.get('shred', 0) >= max(hv.values()) else 'NOT met'} "
          f"(shred {hv.get('shred', 0):.4f}, best baseline {best_base:.4f})")
    sb = [b for l, _, b in rows if l.startswith("shred-P") and b == b]
    if split == "forget05":
        top = max(sb) if sb else float("nan")
        print(f"  aim: forget quality >= 0.05 (log10 >= -1.30) at utility >= 95% of the target's: best SHRED log10 FQ there {top:.2f}: "
              + ("met" if top >= math.log10(0.05) else "NOT met"))
