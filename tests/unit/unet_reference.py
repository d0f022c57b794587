#!/usr/bin/python3
"""unet_reference.py CASE.h5 - rebuilds the U-Net stored under /prior of
CASE.h5 in torch (float64), from its parts' layer lines and the program of
nk/nn/unet.hpp written out again here, runs (/case/x, /case/t, /case/cond)
through it, back-propagates /case/dv and compares the velocity, the input
and condition gradients and every parameter gradient with nk::nn's. Exit 0
when all agree to float32 accuracy."""
import math
import os
import sys

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nn_reference as ref  # noqa: E402

f = h5py.File(sys.argv[1], "r")
text = f["/prior"].attrs["unet"]
cfg = dict(kv.split("=") for kv in (text.decode() if isinstance(text, bytes) else text).split())
channels = [int(c) for c in cfg["channels"].split(",")]
L = len(channels)
parts = {name: ref.load_chain(f, f"/prior/parts/{name}") for name in f["/prior/parts"]}


def part(name, h):
    arch, params = parts[name]
    return ref.run_chain(arch, params, h)


def sinusoid(t, dim):
    half = dim // 2
    w = torch.tensor([10000.0 ** (-k / half) for k in range(half)])
    a = 1000.0 * t[:, None] * w[None, :]
    return torch.cat([torch.sin(a), torch.cos(a)], dim=1)


def res(name, h, e):
    s = part(name + ".a", h) + part(name + ".emb", e)[:, :, None, None]
    out = part(name + ".b", s)
    return out + (part(name + ".skip", h) if name + ".skip" in parts else h)


x = torch.tensor(np.array(f["/case/x"]), dtype=torch.float64).permute(0, 3, 1, 2).contiguous().requires_grad_(True)
t = torch.tensor(np.array(f["/case/t"]), dtype=torch.float64)
cond = torch.tensor(np.array(f["/case/cond"]), dtype=torch.float64).requires_grad_(True)
e = part("time.mlp", sinusoid(t, channels[0]))
if "cond.mlp" in parts:
    e = e + part("cond.mlp", cond)
h = part("in", x)
skips = []
for l in range(L):
    h = res(f"down{l}.res", h, e)
    skips.append(h)
    if l + 1 < L:
        h = part(f"down{l}.down", h)
h = res("mid", h, e)
for l in reversed(range(L)):
    h = res(f"up{l}.res", torch.cat([h, skips[l]], dim=1), e)
    if l > 0:
        h = part(f"up{l}.up", h)
v = part("out", h)
dv = torch.tensor(np.array(f["/case/dv"]), dtype=torch.float64).permute(0, 3, 1, 2)
(v * dv).sum().backward()
ok = ref.compare("velocity", np.array(f["/case/v"]).transpose(0, 3, 1, 2), v)
ok &= ref.compare("input gradient", np.array(f["/case/dx"]).transpose(0, 3, 1, 2), x.grad)
ok &= ref.compare("condition gradient", f["/case/dcond"], cond.grad)
for name, (arch, params) in parts.items():
    for i, p in params.items():
        for k in ("weight", "bias"):
            if k in p:
                ok &= ref.compare(f"{name} layer {i} ({arch[i]}) {k} gradient", f[f"/case/grads/{name}/{i}/{k}"], p[k].grad)
sys.exit(0 if ok else 1)
