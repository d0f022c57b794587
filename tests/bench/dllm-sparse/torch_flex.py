"""dllm-sparse's peers in the benchmark venv (PyPI torch; tests never use it).

- Dense: torch.nn.functional.scaled_dot_product_attention on CPU (its flash
  kernel for float32), bidirectional, scale 1/sqrt(d) as dllm-sparse attend.
- Block-sparse: FlexAttention (torch.nn.attention.flex_attention, compiled by
  torch.compile for CPU) with a BlockMask of exactly the plan's kept blocks
  (block 64): the same work the fused sparse kernel does.

Same step (q, k, v of dllm-sparse gen --single-step), float32, THREADS
threads; each time is the best of REPEATS calls after a warm-up; the compile
and the block mask's construction are timed apart. Outputs are checked
against dllm-sparse attend's /o (dense and sparse) and the largest absolute
difference printed. One line per method: name, seconds, max |diff|, each
flushed at once: where torch.compile cannot build FlexAttention's CPU kernel,
the lines before it stand and run.sh reports the failure.

On Debian with libtorch-dev installed (python3-torch, which the tests use,
pulls it in), inductor links its kernels against the wrong libtorch: it puts
Python's LIBDIR (/usr/lib/x86_64-linux-gnu, where Debian's libtorch_cpu.so
1.13 lives) before the wheel's torch/lib on the link line, and the kernels
then miss the wheel's brgemm and Sleef symbols when loaded. Below, the
Python library directory is dropped from inductor's link line (an extension
module needs no libpython) and the wheel's torch/lib is put on
LD_LIBRARY_PATH for inductor's load probe (a separate process).

usage: torch_flex.py THREADS REPEATS step.h5 dense.h5 [plan.h5 sparse.h5]...
"""
import math
import os
import sys
import time

import h5py
import numpy as np
import torch
import torch._inductor.cpp_builder as cpp_builder
from torch.nn.attention.flex_attention import BlockMask, flex_attention

_python_args = cpp_builder._get_python_related_args
cpp_builder._get_python_related_args = lambda: (_python_args()[0], [])
os.environ["LD_LIBRARY_PATH"] = os.path.join(os.path.dirname(torch.__file__), "lib") + ":" + os.environ.get("LD_LIBRARY_PATH", "")

threads, repeats = int(sys.argv[1]), int(sys.argv[2])
step, dense_out = sys.argv[3], sys.argv[4]
pairs = list(zip(sys.argv[5::2], sys.argv[6::2]))
torch.set_num_threads(threads)
f = h5py.File(step, "r")
q, k, v = (torch.from_numpy(np.ascontiguousarray(f[n][()], dtype=np.float32)).unsqueeze(0) for n in ("q", "k", "v"))
_, H, L, d = q.shape
scale = 1.0 / math.sqrt(d)
print(f"torch {torch.__version__}, {threads} threads, L = {L}, H = {H}, d = {d}", flush=True)


def best_of(fn):
    fn()  # warm-up
    times = []
    out = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def diff(out, path):
    ours = h5py.File(path, "r")["o"][()]
    return float(np.abs(out[0].numpy() - ours).max())


with torch.no_grad():
    seconds, out = best_of(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale))
    print(f"sdpa-dense {seconds:.4f} {diff(out, dense_out):.2e}", flush=True)
    compiled = torch.compile(flex_attention, dynamic=False)
    for plan, sparse_out in pairs:
        p = h5py.File(plan, "r")
        block = int(p.attrs["block"])
        masks = p["masks"][int(p["mask_of_step"][0])].astype(bool)  # [H, nq, nk]
        t0 = time.perf_counter()
        counts = torch.from_numpy(masks.sum(-1).astype(np.int32)).unsqueeze(0)  # [1, H, nq]
        nk = masks.shape[-1]
        # Kept blocks first, in order, then the rest (ignored past the count).
        order = np.argsort(~masks, axis=-1, kind="stable").astype(np.int32)
        indices = torch.from_numpy(order).unsqueeze(0)  # [1, H, nq, nk]
        mask = BlockMask.from_kv_blocks(counts, indices, BLOCK_SIZE=block)
        build = time.perf_counter() - t0
        t0 = time.perf_counter()
        compiled(q, k, v, block_mask=mask, scale=scale)
        compile_s = time.perf_counter() - t0
        seconds, out = best_of(lambda: compiled(q, k, v, block_mask=mask, scale=scale))
        density = masks.mean()
        print(f"flex-sparse density={density:.4f} {seconds:.4f} {diff(out, sparse_out):.2e} compile={compile_s:.1f} blockmask={build:.3f} nk={nk}",
              flush=True)
