"""Part (C) of the aldrift benchmark: per-stage mean cost and KL(q||L) of the
lm runs, against the importance-sampling reference point of the first file."""
import sys

import h5py
import numpy as np


def stages(f, method):
    g = f.get(f"/{method}/stages")
    return [] if g is None else [g[k] for k in sorted(g)]


CHAINS = None  # the first file's chains: other sizes are named in the label


def label(f):
    learner = f.attrs.get("learner", "?")
    learner = learner.decode() if isinstance(learner, bytes) else learner
    if learner == "bias":
        l2 = f.attrs["bias_l2"]
        l2 = l2.decode() if isinstance(l2, bytes) else l2
        learner = "bias, l2 by cv" if isinstance(l2, str) else f"bias, l2 {l2:g}"
    return learner if f.attrs["chains"] == CHAINS else f"{learner}, {int(f.attrs['chains'])} chains"


def main(paths):
    global CHAINS
    files = [h5py.File(p, "r") for p in paths]
    CHAINS = files[0].attrs["chains"]
    ref = files[0]["/reference"].attrs
    m, mse, kl, klse = ref["mean_cost"], ref["mean_cost_se"], ref["kl"], ref["kl_se"]
    print(f"Reference pi_T (IS, {int(ref['draws'])} prior draws, ESS {ref['ess']:.0f}): "
          f"E_pi[d] = {m:.4f} +- {mse:.4f}, KL(pi||L) = {kl:.3f} +- {klse:.3f}; prior E_L[d] = {ref['prior_mean_cost']:.4f}")
    d = files[0]["/reference/costs"][()]

    def log_z(T):
        return np.log(np.mean(np.exp(-T * (d - d.min())))) - T * d.min()

    print()
    print("KL(q‖pi_T_i) = KL(q‖L) + T_i E_q[d] + log Z(T_i), log Z from the reference draws: 0 for a learner that hits the stage's target.")
    print()
    print("| run | stage | T_i | evals | samples' mean d | acceptance | coverage (est.) | E_q[d] | KL(q‖L) | KL(q‖pi_T_i) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for f in files:
        learner = label(f)
        for method in ("aldrift", "cem"):
            for i, g in enumerate(stages(f, method)):
                a = g.attrs
                cov = f"{a['coverage']:.3g}" if "coverage" in a else "-"
                if isinstance(f.attrs["bias_l2"], (str, bytes)) and "bias_l2" in a:
                    cov += f" (l2 {a['bias_l2']:g})"
                acc = f"{a['acceptance']:.3f}" if "acceptance" in a else "-"
                klt = f"{a['kl'] + (a['T'] if method == 'aldrift' else f.attrs['T']) * a['q_mean_cost'] + log_z(a['T'] if method == 'aldrift' else f.attrs['T']):.3f}"
                print(f"| {method} ({learner}) | {i + 1} | {a['T']:.3g} | {int(a['evals'])} | {a['mean_cost']:.4f} | {acc} | {cov} | "
                      f"{a['q_mean_cost']:.4f} | {a['kl']:.3f} ± {a['kl_se']:.3f} | {klt} |")
        if "/sir" in f:
            a = f["/sir"].attrs
            print(f"| sir | 1 | {a['T']:.3g} | {int(a['evals'])} | {a['mean_cost']:.4f} | - | - | - | "
                  f"(IS) {a['kl']:.3f} ± {a['kl_se']:.3f} | - |")
    print()
    print("Goal (C): the samples' mean cost within 10% and KL(q_K||L) within 20% of the reference point.")
    for f in files:
        learner = label(f)
        for method in ("aldrift", "cem"):
            st = stages(f, method)
            if not st:
                continue
            a = st[-1].attrs
            dc = abs(a["mean_cost"] - m) / m
            dq = abs(a["q_mean_cost"] - m) / m
            dk = abs(a["kl"] - kl) / kl
            print(f"- {method} ({learner}): samples' mean d {a['mean_cost']:.4f} ({100 * dc:.0f}% off, "
                  f"{'met' if dc <= 0.1 else 'not met'}); E_q[d] {a['q_mean_cost']:.4f} ({100 * dq:.0f}% off); "
                  f"KL(q||L) {a['kl']:.3f} ({100 * dk:.0f}% off, {'met' if dk <= 0.2 else 'not met'})")


if __name__ == "__main__":
    main(sys.argv[1:])
