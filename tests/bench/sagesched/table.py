"""Tables of the sagesched benchmark: every policy per workload, cache and
load (TSV), and the condensed comparison README shows (markdown)."""
import glob
import os
import sys

import h5py

out = sys.argv[1]
policies = ["fcfs", "sjf-pred", "ltr", "mlfq", "srpt-oracle", "sagesched", "sagesched-nomem", "sagesched-point"]
baselines = ["fcfs", "sjf-pred", "ltr", "mlfq"]
runs = {}
for path in glob.glob(os.path.join(out, "*.h5")):
    name = os.path.basename(path)[:-3]
    if name.endswith(".trace"):
        continue
    config, policy = name.rsplit(".", 1)
    with h5py.File(path, "r") as f:
        a = f.attrs
        runs[(config, policy)] = {k: float(a[k]) for k in ["mean_ttlt", "p99_ttlt", "mean_ttft", "throughput", "preemptions"]}

configs = sorted({c for c, _ in runs}, key=lambda c: (c.split("-kv")[0], int(c.split("-kv")[1].split("-")[0]), c))
print("config\tpolicy\tmean_ttlt_s\tp99_ttlt_s\tmean_ttft_s\ttokens_per_s\tpreemptions")
for c in configs:
    for p in policies:
        r = runs.get((c, p))
        if r:
            print(f"{c}\t{p}\t{r['mean_ttlt']:.3f}\t{r['p99_ttlt']:.3f}\t{r['mean_ttft']:.3f}\t{r['throughput']:.0f}\t{r['preemptions']:.0f}")
print()
print("| workload | KV | load | FCFS mean / P99 (s) | best baseline: mean | sagesched mean / P99 (s) | vs FCFS mean / P99 | vs best baseline | srpt-oracle mean | sagesched / oracle | -nomem | -point |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for c in configs:
    if any((c, p) not in runs for p in policies):
        continue
    workload, rest = c.split("-kv")
    kv, load = rest.split("-")
    f, s, o = runs[(c, "fcfs")], runs[(c, "sagesched")], runs[(c, "srpt-oracle")]
    best = min(baselines, key=lambda p: runs[(c, p)]["mean_ttlt"])
    b = runs[(c, best)]
    gain = lambda x, y: f"{100 * (1 - x / y):+.1f}%"
    print(f"| {workload} | {'H200' if kv == '0' else kv} | {load} | {f['mean_ttlt']:.2f} / {f['p99_ttlt']:.1f} | {best}: {b['mean_ttlt']:.2f} "
          f"| {s['mean_ttlt']:.2f} / {s['p99_ttlt']:.1f} | {gain(s['mean_ttlt'], f['mean_ttlt'])} / {gain(s['p99_ttlt'], f['p99_ttlt'])} "
          f"| {gain(s['mean_ttlt'], b['mean_ttlt'])} | {o['mean_ttlt']:.2f} | {s['mean_ttlt'] / o['mean_ttlt']:.2f} "
          f"| {runs[(c, 'sagesched-nomem')]['mean_ttlt']:.2f} | {runs[(c, 'sagesched-point')]['mean_ttlt']:.2f} |")
