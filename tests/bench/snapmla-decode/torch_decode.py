#!/usr/bin/env python3
"""torch_decode.py CACHE [--threads T] [--repeats R] [--dtype float32|bfloat16] - the peer: the absorbed
MLA decode a researcher would write in PyTorch over a dense (unpaged) cache: per sequence,
scores = q [H,576] @ [c, k_R]^T * scale, softmax, out = P @ c. Prints 'seconds=S err=E' (E: the
relative L2 error of the outputs against float64)."""
import argparse, time, h5py, numpy as np, torch
ap = argparse.ArgumentParser()
ap.add_argument("cache"); ap.add_argument("--threads", type=int, default=2); ap.add_argument("--repeats", type=int, default=5)
ap.add_argument("--dtype", default="float32")
a = ap.parse_args()
torch.set_num_threads(a.threads)
f = h5py.File(a.cache)
ckv, kpe, q, lengths, scale = f["/ckv"][()], f["/kpe"][()], f["/q"][()], f["/lengths"][()], float(f.attrs["softmax_scale"])
dt = getattr(torch, a.dtype)
B = q.shape[0]
K = [torch.from_numpy(np.concatenate([ckv[b, :lengths[b]], kpe[b, :lengths[b]]], axis=1)).to(dt) for b in range(B)]
Q = [torch.from_numpy(q[b]).to(dt) for b in range(B)]
dc = ckv.shape[2]
def run():
    outs = []
    for b in range(B):
        s = (Q[b] @ K[b].T).float() * scale
        p = torch.softmax(s, dim=-1).to(dt)
        outs.append((p @ K[b][:, :dc]).float())
    return outs
run()
best = 1e30
for _ in range(a.repeats):
    t0 = time.perf_counter(); outs = run(); best = min(best, time.perf_counter() - t0)
err = num = 0.0
for b in range(B):
    k = np.concatenate([ckv[b, :lengths[b]], kpe[b, :lengths[b]]], axis=1).astype(np.float64)
    s = q[b].astype(np.float64) @ k.T * scale
    p = np.exp(s - s.max(axis=1, keepdims=True)); p /= p.sum(axis=1, keepdims=True)
    ref = p @ k[:, :dc]
    err += ((outs[b].numpy() - ref) ** 2).sum(); num += (ref ** 2).sum()
print(f"seconds={best:.6f} err={np.sqrt(err / num):.3e}")
