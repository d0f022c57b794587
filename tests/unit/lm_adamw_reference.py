#!/usr/bin/python3
"""lm_adamw_reference.py FILE.h5 - torch.optim.AdamW with torch's global-norm
clipping, run over the gradients nk::lm's AdamW was given (lm_train unit
suite); exit 0 when the final weights agree to 1e-5 relative.

FILE.h5: /w0 [P], /grads [steps, P], /lr [steps], /decay [P] (1 where weight
decay applies), /ours [P]; root attributes beta1 beta2 eps weight_decay clip."""
import sys

import h5py
import numpy as np
import torch

f = h5py.File(sys.argv[1], "r")
a = {k: float(v) for k, v in f.attrs.items() if k in ("beta1", "beta2", "eps", "weight_decay", "clip")}
w0, grads, lrs = np.asarray(f["w0"]), np.asarray(f["grads"]), np.asarray(f["lr"])
decay = np.asarray(f["decay"]).astype(bool)
p_decay = torch.nn.Parameter(torch.tensor(w0[decay], dtype=torch.float64))
p_plain = torch.nn.Parameter(torch.tensor(w0[~decay], dtype=torch.float64))
opt = torch.optim.AdamW([{"params": [p_decay], "weight_decay": a["weight_decay"]},
                         {"params": [p_plain], "weight_decay": 0.0}],
                        lr=1.0, betas=(a["beta1"], a["beta2"]), eps=a["eps"])
for step in range(len(lrs)):
    p_decay.grad = torch.tensor(grads[step][decay], dtype=torch.float64)
    p_plain.grad = torch.tensor(grads[step][~decay], dtype=torch.float64)
    torch.nn.utils.clip_grad_norm_([p_decay, p_plain], a["clip"])
    for g in opt.param_groups:
        g["lr"] = float(lrs[step])
    opt.step()
ref = np.empty_like(w0, dtype=np.float64)
ref[decay], ref[~decay] = p_decay.detach().numpy(), p_plain.detach().numpy()
ours = np.asarray(f["ours"], dtype=np.float64)
rel = np.abs(ours - ref).max() / np.abs(ref).max()
print(f"AdamW: worst relative difference {rel:.3g} over {len(lrs)} steps")
sys.exit(0 if rel < 1e-5 else 1)
