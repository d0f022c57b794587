#!/usr/bin/env python3
"""An outside prior for invariance-audit --prior-cmd (numpy): the exact
flow-matching velocity of a per-pixel Gaussian fitted to images.

Usage: prior_cmd.py IMAGES.h5   (nk-data images; /images in [0,1])

For data x1 ~ N(mu, s^2) per value (x = 2 p - 1) and the path
x_t = (1 - t) x0 + t x1, x0 ~ N(0, 1), the velocity is
  v(x, t) = mu + a(t) (x - t mu),  a(t) = (t s^2 - (1 - t)) / ((1 - t)^2 + t^2 s^2),
and its Jacobian is diagonal: dx = a(t) g.

Protocol (man invariance-audit, PRIOR PROGRAMS): print "velocity H,W,C",
then answer frames on stdin/stdout, little-endian:
  int64 op, int64 B, float32 t, float32 x [B,H,W,C]   (op 0) -> int64 n, float32 v [B,H,W,C]
  ... and for op 1 also float32 g [B,H,W,C]           (op 1) -> int64 n, float32 dx [B,H,W,C]
Replace velocity() and vjp() with a real model's (torch: v = model(x, t);
torch.autograd.grad(v, x, g)) to sample from it.
"""
import os
import sys

import h5py
import numpy as np

H, W, C = (int(v) for v in os.environ["NK_PRIOR_INPUT"].split(","))
D = H * W * C
with h5py.File(sys.argv[1], "r") as f:
    x1 = 2.0 * f["/images"][()].astype(np.float64) - 1.0
if x1.shape[1:] != (H, W, C):
    sys.exit(f"prior_cmd.py: {sys.argv[1]} holds images of {x1.shape[1:]}, the tool asks {H},{W},{C}")
mu, s = x1.mean(axis=0).reshape(-1), np.maximum(x1.std(axis=0).reshape(-1), 1e-3)


def a(t):
    return (t * s * s - (1 - t)) / ((1 - t) ** 2 + t * t * s * s)


inp, out = sys.stdin.buffer, sys.stdout.buffer
out.write(b"velocity %d,%d,%d\n" % (H, W, C))
out.flush()


def read(n, dtype):
    data = inp.read(n * np.dtype(dtype).itemsize)
    if len(data) < n * np.dtype(dtype).itemsize:
        sys.exit(0)
    return np.frombuffer(data, dtype=dtype)


def reply(values):
    values = np.ascontiguousarray(values, dtype="<f4").reshape(-1)
    out.write(np.int64(values.size).astype("<i8").tobytes())
    out.write(values.tobytes())
    out.flush()


while True:
    op, batch = read(2, "<i8")
    t = float(read(1, "<f4")[0])
    x = read(batch * D, "<f4").reshape(batch, D).astype(np.float64)
    if op == 0:
        reply(mu + a(t) * (x - t * mu))
    else:
        g = read(batch * D, "<f4").reshape(batch, D)
        reply(a(t) * g)
