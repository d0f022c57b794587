#!/usr/bin/env python3
"""torch_certify.py MODEL.h5 IMAGES.h5 --n N --batch B --threads T [--device cuda] - the peer
of proxy-certify certify: the same nk-nn network rebuilt in torch (eval mode,
no grad), CERTIFY's estimation loop as a user would write it in PyTorch
(torch.randn noise, one batched forward, arg-max, bincount), over the first
--items images. Prints forwards_per_second=F and the counts' checksum.
Also --sgemm [--size S]: the SGEMM rate through torch (MKL on T threads, or
cuBLAS FP32 without TF32 on --device cuda)."""
import argparse
import time

import h5py
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("model", nargs="?")
p.add_argument("images", nargs="?")
p.add_argument("--n", type=int, default=10000)
p.add_argument("--batch", type=int, default=1000)
p.add_argument("--items", type=int, default=10)
p.add_argument("--sigma", type=float, default=0.25)
p.add_argument("--threads", type=int, default=2)
p.add_argument("--sgemm", action="store_true")
p.add_argument("--size", type=int, default=2048)
p.add_argument("--device", default="cpu")
a = p.parse_args()
torch.set_num_threads(a.threads)

dev = torch.device(a.device)
sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
if a.sgemm:
    torch.backends.cuda.matmul.allow_tf32 = False  # FP32, as our SGEMMs
    x, y = torch.randn(a.size, a.size, device=dev), torch.randn(a.size, a.size, device=dev)
    for _ in range(3): x @ y
    sync()
    best = 1e9
    for _ in range(10):
        t = time.perf_counter(); x @ y; sync(); best = min(best, time.perf_counter() - t)
    print(f"sgemm_gflops={2 * a.size ** 3 / best / 1e9:.1f}")
    raise SystemExit

f = h5py.File(a.model, "r")
arch = [s.decode() if isinstance(s, bytes) else s for s in f["/model/arch"][()]]
h, w, c = (int(v) for v in f["/model"].attrs["input"].split(","))
layers = []
for i, line in enumerate(arch):
    op, *arg = line.split()
    arg = [int(v) for v in arg]
    g = f.get(f"/model/params/{i:03d}")
    if op == "flatten": m = nn.Flatten()
    elif op == "linear": m = nn.Linear(arg[0], arg[1])
    elif op == "conv2d": m = nn.Conv2d(arg[0], arg[1], arg[2], arg[3], arg[4])
    elif op == "relu": m = nn.ReLU()
    elif op == "maxpool": m = nn.MaxPool2d(arg[0])
    else: raise SystemExit(f"torch_certify.py: layer {op} not in this peer")
    if g is not None:
        m.weight.data = torch.tensor(np.array(g["weight"]))
        m.bias.data = torch.tensor(np.array(g["bias"]))
    layers.append(m)
model = nn.Sequential(*layers).eval().to(dev)
images = torch.tensor(np.array(h5py.File(a.images, "r")["/images"][: a.items], dtype=np.float32)).reshape(-1, h, w, c)
images = images.permute(0, 3, 1, 2).contiguous().to(dev)  # torch's NCHW
classes = int(f["/model"].attrs["classes"])
gen = torch.Generator(device=dev).manual_seed(0)
checksum = 0
with torch.inference_mode():
    model(images[:1].repeat(a.batch, 1, 1, 1))  # warm-up (oneDNN or cuDNN kernels)
    sync()
    start = time.perf_counter()
    for x in images:
        counts = torch.zeros(classes, dtype=torch.long, device=dev)
        done = 0
        while done < a.n:
            b = min(a.batch, a.n - done)
            noisy = x.unsqueeze(0) + a.sigma * torch.randn((b, c, h, w), generator=gen, device=dev)
            counts += torch.bincount(model(noisy).argmax(1), minlength=classes)
            done += b
        checksum += int(counts.max())
    sync()
    seconds = time.perf_counter() - start
print(f"forwards_per_second={a.items * a.n / seconds:.1f} checksum={checksum}")
