#!/usr/bin/python3
"""nn_reference.py CASE.h5 - rebuilds the nk-nn.model/1 network of CASE.h5 in
torch (float64, NCHW), runs /case/x through it, back-propagates /case/dy and
compares output, input gradient and every parameter gradient with the ones
nk::nn wrote. Exit 0 when all agree to float32 accuracy."""
import sys

import h5py
import numpy as np
import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)


def load_chain(f, group):
    """The layer lines and float64 parameters (leaves with gradients) of the
    network stored at GROUP (GROUP/arch, GROUP/params/NNN/...)."""
    arch = [a.decode() if isinstance(a, bytes) else a for a in f[group + "/arch"][()]]
    params = {}
    for i, line in enumerate(arch):
        g = f"{group}/params/{i:03d}"
        if g in f:
            params[i] = {k: torch.tensor(np.array(f[g][k]), dtype=torch.float64, requires_grad=k in ("weight", "bias"))
                         for k in f[g]}
    return arch, params


def run_chain(arch, params, h):
    """h (NCHW, or [N, F] once flat) through the layer lines, in torch."""
    for i, line in enumerate(arch):
        op, *a = line.split()
        a = [int(v) for v in a]
        p = params.get(i, {})
        if op == "flatten":
            h = h.reshape(h.shape[0], -1)
        elif op == "linear":
            h = F.linear(h, p["weight"], p["bias"])
        elif op == "conv2d":
            h = F.conv2d(h, p["weight"], p["bias"], stride=a[3], padding=a[4])
        elif op == "relu":
            h = F.relu(h)
        elif op == "silu":
            h = F.silu(h)
        elif op == "gelu":
            h = F.gelu(h)
        elif op == "tanh":
            h = torch.tanh(h)
        elif op == "maxpool":
            h = F.max_pool2d(h, a[0])
        elif op == "avgpool":
            h = F.avg_pool2d(h, a[0])
        elif op == "upsample":
            h = F.interpolate(h, scale_factor=a[0], mode="nearest")
        elif op == "groupnorm":
            h = F.group_norm(h, a[0], p["weight"], p["bias"], eps=1e-5)
        elif op == "layernorm":
            h = F.layer_norm(h, (a[0],), p["weight"], p["bias"], eps=1e-5)
        elif op == "batchnorm":
            h = F.batch_norm(h, p["running_mean"], p["running_var"], p["weight"], p["bias"], training=False, eps=1e-5)
        else:
            sys.exit(f"nn_reference: unknown layer {op}")
    return h


failures = 0


def compare(name, ours, ref, tol=2e-4):
    global failures
    ours = np.asarray(ours, dtype=np.float64)
    ref = ref.detach().numpy()
    err = np.abs(ours - ref).max()
    scale = max(np.abs(ref).max(), 1e-12)
    ok = err <= tol * scale
    print(f"nn_reference: {name}: max |ours - torch| = {err:.3g} (scale {scale:.3g}) {'ok' if ok else 'FAIL'}")
    failures += not ok
    return ok


def main():
    f = h5py.File(sys.argv[1], "r")
    arch, params = load_chain(f, "/model")
    x = torch.tensor(np.array(f["/case/x"]), dtype=torch.float64).permute(0, 3, 1, 2).contiguous().requires_grad_(True)
    h = run_chain(arch, params, x)
    dy = torch.tensor(np.array(f["/case/dy"]), dtype=torch.float64)
    (h * dy).sum().backward()
    compare("output", f["/case/y"], h)
    compare("input gradient", np.array(f["/case/dx"]).transpose(0, 3, 1, 2), x.grad)
    for i, p in params.items():
        for k in ("weight", "bias"):
            if k in p:
                compare(f"layer {i} ({arch[i]}) {k} gradient", f[f"/case/grads/{i}/{k}"], p[k].grad)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
