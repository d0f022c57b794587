#!/usr/bin/python3
"""torch_shred.py MODEL.h5 SELECT.h5 --steps N --batch B --lr R [--threads 2]
- the peer a user would otherwise run: SHRED's unlearning step in eager
float32 PyTorch (the open-unlearning way: a padded [B, T] batch, causal SDPA,
autograd, torch.optim.AdamW), on the same nk-lm checkpoint (its /params read
with h5py) and the same selection (`shred-unlearn select`: tokens, supports,
targets, forget mask). The loss is SHRED's: the mean over supervised positions
of KL(target || model restricted to the support and renormalised). Prints the
seconds per step (the first step, warm-up, left out) and the first loss."""
import argparse
import time

import h5py
import numpy as np
import torch
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("model"); p.add_argument("select")
p.add_argument("--steps", type=int, default=20)
p.add_argument("--batch", type=int, default=8)
p.add_argument("--lr", type=float, default=3e-5)
p.add_argument("--threads", type=int, default=2)
a = p.parse_args()
torch.set_num_threads(a.threads)

m = h5py.File(a.model, "r")
cfg = {k: (v.item() if hasattr(v, "item") else v) for k, v in m.attrs.items()}
D, H, G, hd, L = (int(cfg[k]) for k in ("d_model", "n_heads", "n_kv_heads", "head_dim", "n_layers"))
eps, theta = float(cfg["norm_eps"]), float(cfg["rope_theta"])
params = {}
for name, ds in m["params"].items():
    x = ds[()]
    if ds.attrs.get("dtype", b"") in (b"bfloat16", "bfloat16"):
        x = (x.astype(np.uint32) << 16).view(np.float32)
    params[name] = torch.nn.Parameter(torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)))
head_name = "model.embed_tokens.weight" if int(cfg["tied_head"]) else "lm_head.weight"

s = h5py.File(a.select, "r")
tokens = torch.from_numpy(s["tokens"][()].astype(np.int64))
mask = torch.from_numpy(s["forget_mask"][()])
support = torch.from_numpy(s["support"][()].astype(np.int64))
target = torch.from_numpy(s["target"][()].astype(np.float32))
N, T = tokens.shape


def rms(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


inv = theta ** (-torch.arange(0, hd, 2, dtype=torch.float32) / hd)
ang = torch.arange(T, dtype=torch.float32)[:, None] * inv[None, :]
cos, sin = torch.cat((ang, ang), -1).cos(), torch.cat((ang, ang), -1).sin()


def rope(x):  # [B, heads, T, hd], rotate-half
    h = hd // 2
    rot = torch.cat((-x[..., h:], x[..., :h]), -1)
    return x * cos[: x.shape[2]] + rot * sin[: x.shape[2]]


def forward(tok):
    B, T_ = tok.shape
    x = params["model.embed_tokens.weight"][tok]
    for l in range(L):
        pre = f"model.layers.{l}."
        h = rms(x, params[pre + "input_layernorm.weight"])
        q = (h @ params[pre + "self_attn.q_proj.weight"].T).view(B, T_, H, hd).transpose(1, 2)
        k = (h @ params[pre + "self_attn.k_proj.weight"].T).view(B, T_, G, hd).transpose(1, 2)
        v = (h @ params[pre + "self_attn.v_proj.weight"].T).view(B, T_, G, hd).transpose(1, 2)
        q, k = rope(q), rope(k)
        k, v = k.repeat_interleave(H // G, 1), v.repeat_interleave(H // G, 1)
        if hasattr(F, "scaled_dot_product_attention"):
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # Debian's torch 1.13
            sc = (q @ k.transpose(-1, -2)) / hd ** 0.5
            sc = sc.masked_fill(torch.triu(torch.ones(T_, T_, dtype=torch.bool), 1), float("-inf"))
            o = sc.softmax(-1) @ v
        o = o.transpose(1, 2).reshape(B, T_, H * hd)
        x = x + o @ params[pre + "self_attn.o_proj.weight"].T
        h = rms(x, params[pre + "post_attention_layernorm.weight"])
        x = x + (F.silu(h @ params[pre + "mlp.gate_proj.weight"].T) * (h @ params[pre + "mlp.up_proj.weight"].T)) @ params[pre + "mlp.down_proj.weight"].T
    return rms(x, params["model.norm.weight"]) @ params[head_name].T


opt = torch.optim.AdamW(list(params.values()), lr=a.lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0)
rng = np.random.default_rng(1)
times, first = [], None
for step in range(a.steps + 1):
    rows = torch.from_numpy(rng.choice(N, size=min(a.batch, N), replace=False))
    t0 = time.perf_counter()
    tok = tokens[rows].clamp(min=0)
    width = int((tokens[rows] >= 0).sum(1).max())
    tok = tok[:, :width]
    logits = forward(tok)                                # [B, T, V]: row t - 1 predicts token t
    sup, tgt, msk = support[rows, 1:width], target[rows, 1:width], mask[rows, 1:width]
    lp = torch.log_softmax(logits[:, : width - 1].gather(-1, sup.clamp(min=0)), -1)   # renormalised over S
    keep = msk >= 0
    kl = (tgt * (torch.log(tgt.clamp(min=1e-30)) - lp)).sum(-1)
    loss = kl[keep].mean()
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(list(params.values()), 1.0)
    opt.step()
    if step == 0:
        first = loss.item()
    else:
        times.append(time.perf_counter() - t0)
print(f"seconds_per_step {np.mean(times):.5f} first_loss {first:.6f} batch {a.batch} torch {torch.__version__}")
