#!/usr/bin/python3
"""torch_ndtm.py PRIOR QUERIES --index K [--samples S --steps N --inner K --threads T --seed R]
The peer a researcher would otherwise write: the same prior (the U-Net of an
invariance-audit prior file, rebuilt in torch.nn.functional, float32) and the
same NDTM step (Adam on the control with one second moment per sample, rate
eta s_t decaying over the inner steps, relative fiber loss on clipped pixels
with a straight-through gradient) for planted:mask-left, with torch autograd
for the vector-Jacobian products. Prints seconds per audit and the median
relative mismatch."""
import argparse
import time

import h5py
import numpy as np
import torch
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("prior")
p.add_argument("queries")
p.add_argument("--index", type=int, default=0)
p.add_argument("--samples", type=int, default=8)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--inner", type=int, default=4)
p.add_argument("--threads", type=int, default=2)
p.add_argument("--seed", type=int, default=1)
a = p.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(a.seed)
f = h5py.File(a.prior, "r")
text = f["/prior"].attrs["unet"]
cfg = dict(kv.split("=") for kv in (text.decode() if isinstance(text, bytes) else text).split())
channels = [int(c) for c in cfg["channels"].split(",")]


def chain(group):
    arch = [s.decode() if isinstance(s, bytes) else s for s in f[group + "/arch"][()]]
    params = {i: {k: torch.tensor(np.array(f[f"{group}/params/{i:03d}/{k}"])) for k in f[f"{group}/params/{i:03d}"]}
              for i in range(len(arch)) if f"{group}/params/{i:03d}" in f}
    def run(h):
        for i, line in enumerate(arch):
            op, *arg = line.split()
            arg = [int(v) for v in arg]
            q = params.get(i, {})
            if op == "linear": h = F.linear(h, q["weight"], q["bias"])
            elif op == "conv2d": h = F.conv2d(h, q["weight"], q["bias"], stride=arg[3], padding=arg[4])
            elif op == "silu": h = F.silu(h)
            elif op == "upsample": h = F.interpolate(h, scale_factor=arg[0], mode="nearest")
            elif op == "groupnorm": h = F.group_norm(h, arg[0], q["weight"], q["bias"], eps=1e-5)
            else: raise SystemExit(f"torch_ndtm.py: layer {op} not in this peer")
        return h
    return run


parts = {name: chain(f"/prior/parts/{name}") for name in f["/prior/parts"]}


def res(name, h, e):
    s = parts[name + ".a"](h) + parts[name + ".emb"](e)[:, :, None, None]
    return parts[name + ".b"](s) + (parts[name + ".skip"](h) if name + ".skip" in parts else h)


def velocity(x, t):
    half = channels[0] // 2
    w = torch.tensor([10000.0 ** (-k / half) for k in range(half)])
    ang = 1000.0 * t * w[None, :].expand(x.shape[0], half)
    e = parts["time.mlp"](torch.cat([torch.sin(ang), torch.cos(ang)], 1))
    h, skips = parts["in"](x), []
    for l in range(len(channels)):
        h = res(f"down{l}.res", h, e)
        skips.append(h)
        if l + 1 < len(channels): h = parts[f"down{l}.down"](h)
    h = res("mid", h, e)
    for l in reversed(range(len(channels))):
        h = res(f"up{l}.res", torch.cat([h, skips[l]], 1), e)
        if l > 0: h = parts[f"up{l}.up"](h)
    return parts["out"](h)


q = torch.tensor(np.array(h5py.File(a.queries, "r")["/images"][a.index])).permute(2, 0, 1)[None]
W = q.shape[-1]
fq = q[..., W // 2:].reshape(1, -1)
norm2 = float((fq ** 2).sum()) or 1.0
lam, kappa, kmin, eta, S, N = 1e5, 1.0, 0.05, 0.03, a.samples, a.steps


def cost(xhat):  # relative fiber loss of the clipped pixels, straight-through clip
    p = (xhat + 1) / 2
    p = p + (p.clamp(0, 1) - p).detach()
    return ((p[..., W // 2:].reshape(S, -1) - fq) ** 2).sum(1) / norm2


start = time.perf_counter()
x = torch.randn(S, *q.shape[1:])
h = 1.0 / N
for step in range(N):
    t = step * h
    s = kappa * (1 - t) + kmin
    u = torch.zeros_like(x)
    m = torch.zeros_like(x)
    second = torch.zeros(S)
    for k in range(1, a.inner + 1):
        y = (x + u).requires_grad_(True)
        v = velocity(y, t)
        g, = torch.autograd.grad(cost(y + (1 - t) * v).sum(), y)
        with torch.no_grad():
            gj = lam * g + u / s ** 2
            second = 0.999 * second + 0.001 * (gj ** 2).flatten(1).mean(1)
            m = 0.9 * m + 0.1 * gj
            rate = eta * s * (a.inner - k + 1) / a.inner
            scale = rate / (1 - 0.9 ** k) / ((second / (1 - 0.999 ** k)).sqrt() + 1e-12)
            u = u - scale[:, None, None, None] * m
    with torch.no_grad():
        y = x + u
        x = y + h * velocity(y, t)
seconds = time.perf_counter() - start
p = ((x + 1) / 2).clamp(0, 1)
mm = ((p[..., W // 2:].reshape(S, -1) - fq).norm(dim=1) / norm2 ** 0.5).numpy()
print(f"seconds={seconds:.2f} median_mismatch={np.median(mm):.4f}")
