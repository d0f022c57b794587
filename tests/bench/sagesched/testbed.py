"""The testbed against the simulator: measured mean/P99 TTLT of each policy
beside the simulated ones under the grid profile, the profile fitted to a
held-out testbed run and the one fitted to the compared run itself; the
mean's error and the median per-request relative error of TTLT (goals: 10%
and 15%); and the same trace served again (the machine's own noise floor)."""
import os
import sys

import h5py
import numpy as np

out = sys.argv[1]
def ttlt(name):
    with h5py.File(os.path.join(out, name), "r") as f:
        return f["per_request/ttlt"][:], dict(f.attrs)

for prof in ["grid", "fitted", "insample-fcfs", "insample-sagesched"]:
    with open(os.path.join(out, f"{prof}.toml")) as f:
        fit = [line.strip() for line in f if line.startswith("# fit")]
    print(f"{prof} profile: {fit[0][2:] if fit else ''}")
print()
print("| policy | measured mean / P99 (s) | profile | simulated mean / P99 (s) | mean error | median per-request error |")
print("|---|---|---|---|---|---|")
for policy in ["fcfs", "sagesched"]:
    m, ma = ttlt(f"bed.{policy}.measured.h5")
    for prof in ["grid", "fitted", "insample"]:
        s, _ = ttlt(f"bed.{policy}.sim-{prof}.h5")
        err = s.mean() / m.mean() - 1
        per = np.median(np.abs(s - m) / m)
        print(f"| {policy} | {m.mean():.3f} / {np.sort(m)[int(np.ceil(0.99 * len(m))) - 1]:.3f} | {prof} | "
              f"{s.mean():.3f} / {np.sort(s)[int(np.ceil(0.99 * len(s))) - 1]:.3f} | {100 * err:+.1f}% | {100 * per:.1f}% |")
m, ma = ttlt("bed.fcfs.measured.h5")
again, _ = ttlt("bed.fcfs.again.h5")
print(f"| fcfs | {m.mean():.3f} | served again | {again.mean():.3f} / {np.sort(again)[int(np.ceil(0.99 * len(again))) - 1]:.3f} | "
      f"{100 * (again.mean() / m.mean() - 1):+.1f}% | {100 * np.median(np.abs(again - m) / m):.1f}% |")
print()
print(f"testbed: {int(ma['iterations'])} iterations for {len(m)} requests, client lateness up to {1e3 * ma['client_lateness']:.2f} ms")
