#!/usr/bin/env python3
"""goals.py EVAL.h5 - the table of one `proxy-certify eval` output as
Markdown, and the issue's goals checked on it:
  FA <= target for every calibrated proxy and radius (the guarantee bounds
    FA's expectation: a mean over K splits may exceed it by its standard
    error, so 'met' allows mean <= target + 2 sd / sqrt K);
  the best proxy's certified accuracy >= 80% of CERTIFY's at r = 0.25, 0.5
    (where CERTIFY certifies anything);
  one forward against n0 + n;
  fallback at r = 0.25 no more than 1 point below CERTIFY, at <= 50% of its forwards."""
import sys

import h5py
import numpy as np

e = h5py.File(sys.argv[1], "r")["/eval"]
names = [s.decode() if isinstance(s, bytes) else s for s in e["methods"][()]]
acc, fa, lo, hi, ap, fw, sec = (e[k][()] for k in ["certified_accuracy", "false_approval", "fa_low", "fa_high", "approval",
                                                  "forwards", "seconds"])
sd = e["false_approval_sd"][()] if "false_approval_sd" in e else np.zeros_like(fa)
radii, target, splits = e["radii"][()], float(e.attrs["target"]), int(e.attrs["splits"])
print("| method | r | cert. acc. | FA [95% CI] | approval | forwards/input | s/input |")
print("|---|---|---|---|---|---|---|")
for m, name in enumerate(names):
    for r, rad in enumerate(radii):
        print(f"| {name} | {rad:.2f} | {acc[m, r]:.3f} | {fa[m, r]:.3f} [{lo[m, r]:.3f}, {hi[m, r]:.3f}] | {ap[m, r]:.3f} "
              f"| {fw[m, r]:.1f} | {sec[m, r]:.2g} |")
cal = [i for i, n in enumerate(names) if n in ("margin-single", "margin-heavy", "head-single", "head-heavy")]
se = sd / np.sqrt(max(splits, 1))
excess = max((fa[i, r] - target) / max(se[i, r], 1e-12) for i in cal for r in range(len(radii)))
worst = max(fa[i, r] for i in cal for r in range(len(radii)))
fa_ok = all(fa[i, r] <= target + 2 * se[i, r] for i in cal for r in range(len(radii)))
ratios = []
for r in range(min(2, len(radii))):
    if acc[0, r] > 0:
        ratios.append(max(acc[i, r] for i in cal) / acc[0, r])
fb = names.index("fallback margin-heavy")
fb_ok = acc[fb, 0] >= acc[0, 0] - 0.01 and fw[fb, 0] <= 0.5 * fw[0, 0]
print()
print(f"goals: FA <= {target} for every calibrated proxy and radius: {'met' if fa_ok else 'NOT met'} "
      f"(largest mean {worst:.4f}, at most {excess:+.1f} standard errors of the {splits}-split mean from the target); "
      f"best proxy / CERTIFY certified accuracy at r = {', '.join(f'{v:.2f}' for v in radii[:len(ratios)])}: "
      f"{', '.join(f'{v:.2f}' for v in ratios) or 'n/a (CERTIFY certifies nothing there)'} "
      f"(goal >= 0.8: {'met' if ratios and min(ratios) >= 0.8 else 'NOT met'}); forwards 1 vs {fw[0, 0]:.0f}; "
      f"fallback at r = {radii[0]:.2f}: certified accuracy {acc[fb, 0] - acc[0, 0]:+.3f} vs CERTIFY at "
      f"{fw[fb, 0] / fw[0, 0]:.2f} of its forwards (goal: >= -0.01 at <= 0.5: {'met' if fb_ok else 'NOT met'})")
