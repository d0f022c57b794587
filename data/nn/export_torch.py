#!/usr/bin/python3
"""export_torch.py - writes a torch nn.Sequential as an nk-nn.model/1 file.

    from export_torch import export
    export(model, "model.h5", input_hwc=(28, 28, 1), classes=10, sigma=0.25)

Layers: Flatten, Linear, Conv2d (square kernel, one stride and padding, no
dilation or groups), ReLU, SiLU, GELU (exact), Tanh, MaxPool2d/AvgPool2d
(kernel = stride), Upsample (nearest, integer factor), GroupNorm, LayerNorm
(1-D), BatchNorm2d (eval mode). Parameters keep torch's shapes; flatten is
torch's C,H,W order, as nk::nn reads it."""
import h5py
import numpy as np
import torch.nn as nn


def layer_line(m):
    if isinstance(m, nn.Flatten): return "flatten"
    if isinstance(m, nn.Linear): return f"linear {m.in_features} {m.out_features}"
    if isinstance(m, nn.Conv2d):
        return f"conv2d {m.in_channels} {m.out_channels} {m.kernel_size[0]} {m.stride[0]} {m.padding[0]}"
    simple = {nn.ReLU: "relu", nn.SiLU: "silu", nn.GELU: "gelu", nn.Tanh: "tanh"}
    for kind, name in simple.items():
        if isinstance(m, kind): return name
    if isinstance(m, nn.MaxPool2d): return f"maxpool {m.kernel_size}"
    if isinstance(m, nn.AvgPool2d): return f"avgpool {m.kernel_size}"
    if isinstance(m, nn.Upsample): return f"upsample {int(m.scale_factor)}"
    if isinstance(m, nn.GroupNorm): return f"groupnorm {m.num_groups} {m.num_channels}"
    if isinstance(m, nn.LayerNorm): return f"layernorm {m.normalized_shape[0]}"
    if isinstance(m, nn.BatchNorm2d): return f"batchnorm {m.num_features}"
    raise ValueError(f"export_torch: no nk-nn layer for {m}")


def export(model, path, input_hwc, classes=None, sigma=None):
    with h5py.File(path, "w") as f:
        f.attrs["nk_schema"] = "nk-nn.model/1"
        f["/model/arch"] = [layer_line(m).encode() for m in model]
        f["/model"].attrs["input"] = ",".join(str(v) for v in input_hwc)
        if classes: f["/model"].attrs["classes"] = classes
        if sigma: f["/model"].attrs["sigma"] = sigma
        for i, m in enumerate(model):
            for name in ("weight", "bias", "running_mean", "running_var"):
                t = getattr(m, name, None)
                if t is not None and hasattr(t, "detach"):
                    f[f"/model/params/{i:03d}/{name}"] = t.detach().cpu().numpy().astype(np.float32)
