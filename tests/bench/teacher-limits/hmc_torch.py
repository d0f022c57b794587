"""Benchmark part (4): the same HMC in PyTorch, the peer a user would write.

hmc_torch.py DATA.h5 THREADS GRADIENTS LEAPFROG STEP [DEVICE]
Reads a teacher-limits data file, runs HMC transitions on W (potential
||W||^2/2 + ||y - f_W(X)||^2 / (2 Delta), gradient by autograd, float32
like teacher-limits' GEMMs) until GRADIENTS gradients, and measures the
SGEMM rate of torch.matmul at the two shapes of the gradient. Prints one
line: torch version, gradients/s, GEMM GFLOP/s at [n,d]x[d,k] and
[k,n]x[n,d], acceptance. DEVICE (default cpu) may be cuda: the data live
on the GPU, the momenta are drawn on the CPU (same stream as on the CPU) and
moved over, and every timing waits for the GPU.
"""
import os
import sys
import time

import h5py
import numpy as np
import torch

path, threads, budget, leapfrog, step = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
dev = torch.device(sys.argv[6] if len(sys.argv) > 6 else "cpu")
torch.set_num_threads(threads)
f = h5py.File(path)
act = f.attrs["activation"]
act = act.decode() if isinstance(act, bytes) else act
assert act == "he3", "the benchmark's peer implements he3"
X = torch.tensor(f["/train/X"][()], dtype=torch.float32, device=dev)
y = torch.tensor(f["/train/y"][()], dtype=torch.float32, device=dev)
v = torch.tensor(f["/teacher/v"][()], dtype=torch.float32, device=dev)
W0 = torch.tensor(f["/teacher/W"][()], dtype=torch.float32, device=dev)
delta = float(f.attrs["noise"])
n, d = X.shape
k = W0.shape[0]
c3 = 1 / np.sqrt(6.0)


def potential(W):
    z = X @ (W / np.sqrt(d)).T
    r = y - (c3 * (z**3 - 3 * z)) @ v
    return 0.5 * (W * W).sum() + 0.5 * (r * r).sum() / delta


def grad(W):
    W = W.detach().requires_grad_(True)
    U = potential(W)
    (g,) = torch.autograd.grad(U, W)
    return U.detach(), g


def sync():
    if dev.type == "cuda":
        torch.cuda.synchronize()


gen = torch.Generator().manual_seed(0)
W = W0.clone()
U, g = grad(W)
count, accepted, transitions = 1, 0, 0
start = time.perf_counter()
while count < budget:
    p = torch.randn(W.shape, generator=gen).to(dev)
    H0 = U + 0.5 * (p * p).sum()
    Wn, pn = W.clone(), p - 0.5 * step * g
    for l in range(leapfrog):
        Wn = Wn + step * pn
        Un, gn = grad(Wn)
        count += 1
        pn = pn - (step if l < leapfrog - 1 else 0.5 * step) * gn
    H1 = Un + 0.5 * (pn * pn).sum()
    transitions += 1
    if torch.rand(1, generator=gen).item() < float(torch.exp(H0 - H1).clamp(max=1)):
        W, U, g = Wn, Un, gn
        accepted += 1
sync()
elapsed = time.perf_counter() - start


def gemm_rate(a, b):
    best = float("inf")
    for _ in range(20):
        sync()
        t = time.perf_counter()
        a @ b
        sync()
        best = min(best, time.perf_counter() - t)
    return 2 * a.shape[0] * a.shape[1] * b.shape[1] / best * 1e-9


M = torch.randn(k, n, device=dev)
print(f"{torch.__version__} {count / elapsed:.1f} {gemm_rate(X, W0.T.contiguous()):.1f} {gemm_rate(M, X):.1f} "
      f"{accepted / max(1, transitions):.3f}")
