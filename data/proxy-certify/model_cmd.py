#!/usr/bin/python3
"""model_cmd.py MODEL.h5 - a base classifier as a program, for
proxy-certify --model-cmd: an example that runs an nk-nn.model/1 MLP
(flatten, linear, relu, tanh) in numpy. Replace the forward with your model's.

Protocol (proxy-certify(1), MODEL COMMAND): print "classes K" once; then, for
each batch, read int64 B (little-endian) and B*H*W*C float32 (NHWC; H,W,C in
$NK_MODEL_INPUT), write B*K float32 logits; stop at end of input."""
import sys

import h5py
import numpy as np

f = h5py.File(sys.argv[1], "r")
arch = [a.decode() if isinstance(a, bytes) else a for a in f["/model/arch"][()]]
params = {i: {k: np.array(v) for k, v in f[f"/model/params/{i:03d}"].items()}
          for i in range(len(arch)) if f"/model/params/{i:03d}" in f}
h, w, c = (int(v) for v in f["/model"].attrs["input"].split(","))
classes = int(f["/model"].attrs["classes"])


def forward(x):  # x [B, H, W, C]
    x = x.reshape(x.shape[0], h, w, c)
    for i, line in enumerate(arch):
        op = line.split()[0]
        if op == "flatten": x = x.transpose(0, 3, 1, 2).reshape(x.shape[0], -1)
        elif op == "linear": x = x @ params[i]["weight"].T + params[i]["bias"]
        elif op == "relu": x = np.maximum(x, 0)
        elif op == "tanh": x = np.tanh(x)
        else: sys.exit(f"model_cmd.py: layer {op} is not in this example")
    return x


out, inp = sys.stdout.buffer, sys.stdin.buffer
out.write(f"classes {classes}\n".encode())
out.flush()
while True:
    header = inp.read(8)
    if len(header) < 8:
        break
    batch = int(np.frombuffer(header, "<i8")[0])
    x = np.frombuffer(inp.read(4 * batch * h * w * c), "<f4").reshape(batch, h, w, c)
    out.write(forward(x).astype("<f4").tobytes())
    out.flush()
