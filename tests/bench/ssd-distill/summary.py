#!/usr/bin/python3
"""summary.py OUT TASK... - run.sh part 3: per task the plateau of every method
(mean +- sd over seeds) beside the base student and the teacher's open-book
ceiling, ssd's tokens to on-policy's plateau and savings, teacher fraction,
forgetting and seconds per step, the tau and loss sweeps, and the issue's
goals over the tasks. Reads each task's `report` file (OUT/TASK.report.h5)."""
import sys

import h5py
import numpy as np

out, tasks = sys.argv[1], sys.argv[2:]
MAIN = ["off-sft", "off-fkl fkl", "on-policy fkl", "skd fkl", "ssd tau 0.3 fkl"]
rep = {}
for t in tasks:
    r = h5py.File(f"{out}/{t}.report.h5")["/report"]
    rows = {c.decode(): i for i, c in enumerate(r["config"][()])}
    col = {k: r[k][()] for k in r if k != "config"}
    rep[t] = (r.attrs, rows, col)

def get(t, cfg, k):
    a, rows, col = rep[t]
    return col[k][rows[cfg]] if cfg in rows else float("nan")

print("| task | base closed-book | teacher open-book | " + " | ".join(MAIN) + " |")
print("|---|---|---|" + "---|" * len(MAIN))
for t in tasks:
    a = rep[t][0]
    cells = [f"{get(t, c, 'plateau'):.3f} +- {get(t, c, 'plateau_sd'):.3f}" for c in MAIN]
    print(f"| {t} | {a['base_accuracy']:.3f} | {a['teacher_accuracy']:.3f} | " + " | ".join(cells) + " |")
print()
print("| task | method | tokens to on-policy's plateau - 1 pt | savings | teacher fraction first -> last | ppl change | s/step |")
print("|---|---|---|---|---|---|---|")
for t in tasks:
    for c in MAIN:
        print(f"| {t} | {c} | {get(t, c, 'tokens_to_target'):.0f} | {100 * get(t, c, 'savings'):+.1f}% | "
              f"{get(t, c, 'teacher_fraction_first'):.3f} -> {get(t, c, 'teacher_fraction_last'):.3f} | "
              f"{get(t, c, 'ppl_change'):+.2f} | {get(t, c, 'seconds_per_step'):.3f} |")
print()
print("ssd's tau and D_loss (one seed; tau 0.3 fkl: the mean over seeds):")
print("| task | " + " | ".join(["tau 0.1", "tau 0.2", "tau 0.3", "tau 0.5", "tau ln 2", "rkl", "jsd"]) + " |")
print("|---|" + "---|" * 7)
for t in tasks:
    cfgs = ["ssd tau 0.1 fkl", "ssd tau 0.2 fkl", "ssd tau 0.3 fkl", "ssd tau 0.5 fkl", "ssd tau 0.693 fkl",
            "ssd tau 0.3 rkl", "ssd tau 0.3 jsd"]
    def cell(c):
        sv = get(t, c, "savings")
        return f"{get(t, c, 'plateau'):.3f} ({'never' if not np.isfinite(sv) else f'{100 * sv:+.0f}%'})"
    print(f"| {t} | " + " | ".join(cell(c) for c in cfgs) + " |")

S, ON = "ssd tau 0.3 fkl", "on-policy fkl"
sav = [get(t, S, "savings") for t in tasks]
print()
print("goals (ssd at tau 0.3 against the others, plateau = mean of the last 3 evaluations, mean over seeds):")
m = np.nanmean(sav) if np.isfinite(sav).any() else float("nan")
print(f"  savings against on-policy (supervised tokens to its plateau - 1 point): {', '.join(f'{t} {100 * s:+.1f}%' for t, s in zip(tasks, sav))}; "
      f"mean {100 * m:+.1f}% (goal >= 45%: {'met' if m >= 0.45 else 'NOT met'}), best {100 * np.nanmax(sav):+.1f}% "
      f"(aim >= 57%: {'met' if np.nanmax(sav) >= 0.57 else 'not met'}); a task where ssd never reached it counts as not met")
def pairs(key, others):
    return ", ".join(f"{t} {get(t, S, key):.3f} vs " + " / ".join(f"{get(t, o, key):.3f}" for o in others) for t in tasks)


within = [get(t, S, "plateau") >= get(t, ON, "plateau") - 0.01 for t in tasks]
print(f"  within 1 point of on-policy's plateau on every task: {'met' if all(within) else 'NOT met'} ({pairs('plateau', [ON])})")
above = [get(t, S, "plateau") > max(get(t, "off-sft", "plateau"), get(t, "off-fkl fkl", "plateau")) for t in tasks]
print(f"  above off-sft and off-fkl on held-out accuracy on every task: {'met' if all(above) else 'NOT met'} "
      f"({pairs('plateau', ['off-sft', 'off-fkl fkl'])})")
ppl = [get(t, S, "ppl_change") <= get(t, ON, "ppl_change") for t in tasks]
print(f"  perplexity rise <= on-policy's: {'met' if all(ppl) else 'NOT met'} ({pairs('ppl_change', [ON])})")
print(f"  ssd's plateau as a share of the teacher's open-book accuracy (its limit): "
      + ", ".join(f"{t} {get(t, S, 'plateau') / rep[t][0]['teacher_accuracy']:.2f}" for t in tasks))
