"""rubiconv's peers in the benchmark venv (PyPI torch; tests never use it):
the FFT convolution users run today, written as the Hyena/safari code does
(torch.fft.rfft of input and filter zero-padded to 2n, product, irfft, the
first n outputs):

- boundary-blind: one FFT convolution over the whole packed sequence, as if
  it were one document (fast, but every document sees the ones before it);
- per document: a Python loop, one FFT convolution per document with the
  filter cut to its length (exact, what a careful user writes).

Same input (rubiconv gen's /x [1,L,H], /k [H,Lk], /cu_seqlens), float32,
THREADS threads, best of REPEATS calls after a warm-up. Each output is
compared with rubiconv apply's /y (REF): the per-document loop must agree
(float32 rounding), the boundary-blind one shows the leak. Prints the torch
version, then "blind SECONDS MAXDIFF" and "perdoc SECONDS MAXDIFF".

usage: torch_fftconv.py THREADS REPEATS in.h5 ref.h5
"""
import sys
import time

import h5py
import numpy as np
import torch

threads, repeats, inp, ref = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
torch.set_num_threads(threads)
f = h5py.File(inp, "r")
x = torch.from_numpy(np.ascontiguousarray(f["x"][0], dtype=np.float32)).T.contiguous()  # [H, L]
k = torch.from_numpy(np.ascontiguousarray(f["k"][()], dtype=np.float32))  # [H, Lk]
cu = [int(c) for c in f["cu_seqlens"][0]]
y_ref = h5py.File(ref, "r")["y"][0]  # [L, H]
H, L = x.shape
print(f"torch {torch.__version__}, {threads} threads, L = {L}, H = {H}, {len(cu) - 1} documents", flush=True)


def fftconv(u, kk):  # u [H, n], kk [H, >= n] -> [H, n]: y[t] = sum_{s <= t} kk[t - s] u[s]
    n = u.shape[-1]
    size = 2 * n
    k_f = torch.fft.rfft(kk[:, :n], n=size) / size
    u_f = torch.fft.rfft(u, n=size)
    return torch.fft.irfft(u_f * k_f, n=size, norm="forward")[..., :n]


def best(fn):
    fn()
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


with torch.no_grad():
    for name, fn in (("blind", lambda: fftconv(x, k)),
                     ("perdoc", lambda: torch.cat([fftconv(x[:, a:b], k) for a, b in zip(cu[:-1], cu[1:])], dim=1))):
        seconds, y = best(fn)
        print(f"{name} {seconds:.4f} {float(np.abs(y.T.numpy() - y_ref).max()):.2e}", flush=True)
