#!/usr/bin/env python3
"""An outside feature extractor for invariance-audit --extractor-cmd (numpy).

Usage: extractor_cmd.py mask-left | linear MODEL.h5

  mask-left      f = the right half's pixels (the same fiber as planted:mask-left)
  linear FILE    f = W flatten(x) + b of a flatten + linear nk-nn.model/1 file
                 (e.g. invariance-audit train-extractor --kind pca)

Protocol (man invariance-audit, EXTRACTOR PROGRAMS): print "features F",
then answer frames on stdin/stdout, little-endian:
  int64 op, int64 B, float32 x [B,H,W,C]      (op 0)  -> int64 n, float32 f [B,F]
  ... and for op 1 also float32 g [B,F]       (op 1)  -> int64 n, float32 dx [B,H,W,C]
Replace features() and vjp() with a real model's forward and input gradient
(torch: y = model(x); torch.autograd.grad(y, x, g)) to audit it.
"""
import os
import sys

import numpy as np

H, W, C = (int(v) for v in os.environ["NK_EXTRACTOR_INPUT"].split(","))
D = H * W * C
kind = sys.argv[1]
if kind == "mask-left":
    F = H * (W - W // 2) * C

    def features(x):
        return x[:, :, W // 2:, :].reshape(len(x), -1)

    def vjp(x, g):
        dx = np.zeros_like(x)
        dx[:, :, W // 2:, :] = g.reshape(len(x), H, W - W // 2, C)
        return dx
elif kind == "linear":
    import h5py
    with h5py.File(sys.argv[2], "r") as m:
        weight = m["/model/params/001/weight"][()].astype(np.float32)
        bias = m["/model/params/001/bias"][()].astype(np.float32)
    F = weight.shape[0]

    def flat(x):  # nk-nn's flatten: C,H,W order
        return x.transpose(0, 3, 1, 2).reshape(len(x), -1)

    def features(x):
        return flat(x) @ weight.T + bias

    def vjp(x, g):
        return (g @ weight).reshape(len(x), C, H, W).transpose(0, 2, 3, 1)
else:
    sys.exit("extractor_cmd.py: mask-left or linear MODEL.h5")

inp, out = sys.stdin.buffer, sys.stdout.buffer
out.write(b"features %d\n" % F)
out.flush()


def read(n, dtype):
    data = inp.read(n * np.dtype(dtype).itemsize)
    if len(data) < n * np.dtype(dtype).itemsize:
        sys.exit(0)  # the tool closed our input: done
    return np.frombuffer(data, dtype=dtype)


def reply(values):
    values = np.ascontiguousarray(values, dtype="<f4").reshape(-1)
    out.write(np.int64(values.size).astype("<i8").tobytes())
    out.write(values.tobytes())
    out.flush()


while True:
    op, batch = read(2, "<i8")
    x = read(batch * D, "<f4").reshape(batch, H, W, C)
    if op == 0:
        reply(features(x))
    else:
        g = read(batch * F, "<f4").reshape(batch, F)
        reply(vjp(x, g))
