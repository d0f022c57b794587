#!/usr/bin/python3
"""lm_reference.py FILE.h5 - an independent PyTorch (float64, autograd) Llama
block checked against what nk::lm computed (the lm_model unit suite writes
FILE.h5 and runs this script; exit 0 when everything agrees to 1e-4 relative,
1 otherwise, with the worst tensor named).

FILE.h5: root attributes (the config) vocab d_model n_layers n_heads n_kv_heads
head_dim d_ff rope_theta norm_eps tied_head causal, and for an MLA model
(DeepSeek-V2's attention, written here from its definition: latent
c = RMSNorm(x W_DKV^T), k_R = RoPE(x W_KR^T) shared by the heads, k = [c W_UK^T, k_R],
v = c W_UV^T) kv_rank and rope_dim; /params/<transformers name>
float32; /batch/tokens int32 [N], /batch/offsets int64 [S+1]; /loss/rows int64
[R], /loss/targets int32 [R], /loss/weights float32 [R]; nk's results
/out/logits [N,V], /out/loss (scalar as [1]) and /grads/<name>.
The loss is sum_r w_r * (-log softmax(logits[rows[r]])[targets[r]])."""
import sys

import h5py
import numpy as np
import torch

torch.set_default_dtype(torch.float64)


def rmsnorm(x, w, eps):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope(x, positions, theta):
    # x [T, H, hd]; transformers' Llama: cos/sin of positions * inv_freq, duplicated over the halves.
    hd = x.shape[-1]
    inv = theta ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    ang = positions[:, None].double() * inv[None, :]
    emb = torch.cat((ang, ang), dim=-1)
    return x * emb.cos()[:, None, :] + rotate_half(x) * emb.sin()[:, None, :]


def sparse_allowed(cfg, q, k):
    """InfLLM-v2's selection, written from its definition: [H, T, T] True where
    query t of head h may read key s (s <= t in a block chosen for t's group)."""
    B, init, local, topk = (cfg["sparse_block"], cfg["sparse_init_blocks"], cfg["sparse_local_blocks"],
                            cfg["sparse_topk"])
    T, H, hd = q.shape
    Hkv = k.shape[1]
    G = H // Hkv
    nb = T // B
    pooled = k[:nb * B].reshape(nb, B, Hkv, hd).mean(1)  # [nb, Hkv, hd]
    allowed = torch.zeros(H, T, T, dtype=torch.bool)
    for t in range(T):
        own, nc = t // B, t // B
        for g in range(Hkv):
            score = torch.zeros(nc, dtype=q.dtype)
            for h in range(g * G, (g + 1) * G):
                if nc:
                    score += (pooled[:nc, g] @ q[t, h] / hd ** 0.5).softmax(0)
            forced = set(range(min(init, own + 1))) | set(range(max(own - local + 1, 0), own + 1))
            free = [j for j in range(nc) if j not in forced]
            free.sort(key=lambda j: (-score[j].item(), j))
            for j in forced | set(free[:topk]):
                allowed[g * G:(g + 1) * G, t, j * B:min((j + 1) * B, t + 1)] = True
    return allowed


def forward(p, cfg, tokens, offsets):
    D, H, Hkv, hd = cfg["d_model"], cfg["n_heads"], cfg["n_kv_heads"], cfg["head_dim"]
    eps, theta = cfg["norm_eps"], cfg["rope_theta"]
    x = p["model.embed_tokens.weight"][tokens]
    segments = [(int(offsets[s]), int(offsets[s + 1])) for s in range(len(offsets) - 1)]
    for l in range(cfg["n_layers"]):
        pre = f"model.layers.{l}."
        a = rmsnorm(x, p[pre + "input_layernorm.weight"], eps)
        q = (a @ p[pre + "self_attn.q_proj.weight"].T).view(-1, H, hd)
        mla = cfg.get("kv_rank", 0) > 0
        if mla:
            dc, R = cfg["kv_rank"], cfg["rope_dim"]
            nope = hd - R
            ckv = a @ p[pre + "self_attn.kv_a_proj_with_mqa.weight"].T
            c = rmsnorm(ckv[:, :dc], p[pre + "self_attn.kv_a_layernorm.weight"], eps)
            kv = (c @ p[pre + "self_attn.kv_b_proj.weight"].T).view(-1, H, nope + hd)
            kpe = ckv[:, None, dc:]
            v = kv[:, :, nope:]
        else:
            k = (a @ p[pre + "self_attn.k_proj.weight"].T).view(-1, Hkv, hd)
            v = (a @ p[pre + "self_attn.v_proj.weight"].T).view(-1, Hkv, hd)
        outs = []
        for b, e in segments:
            pos = torch.arange(e - b)
            if mla:  # RoPE turns only the last R values of each query head and the shared key part
                qs = torch.cat((q[b:e, :, :nope], rope(q[b:e, :, nope:], pos, theta)), dim=-1)
                kr = rope(kpe[b:e], pos, theta).expand(e - b, H, R)
                ks = torch.cat((kv[b:e, :, :nope], kr), dim=-1)
            else:
                qs, ks = rope(q[b:e], pos, theta), rope(k[b:e], pos, theta)
            ks = ks.repeat_interleave(H // Hkv, dim=1)  # transformers' repeat_kv
            vs = v[b:e].repeat_interleave(H // Hkv, dim=1)
            scores = torch.einsum("thd,shd->hts", qs, ks) / hd ** 0.5
            if cfg["causal"]:
                mask = torch.triu(torch.ones(e - b, e - b, dtype=torch.bool), 1)
                if cfg.get("sparse_block", 0) > 0:
                    mask = mask | ~sparse_allowed(cfg, qs.detach(), ks[:, ::H // Hkv].detach())
                scores = scores.masked_fill(mask, float("-inf"))
            outs.append(torch.einsum("hts,shd->thd", scores.softmax(-1), vs).reshape(e - b, H * hd))
        x = x + torch.cat(outs) @ p[pre + "self_attn.o_proj.weight"].T
        m = rmsnorm(x, p[pre + "post_attention_layernorm.weight"], eps)
        g = m @ p[pre + "mlp.gate_proj.weight"].T
        u = m @ p[pre + "mlp.up_proj.weight"].T
        x = x + (torch.nn.functional.silu(g) * u) @ p[pre + "mlp.down_proj.weight"].T
    x = rmsnorm(x, p["model.norm.weight"], eps)
    head = p["model.embed_tokens.weight"] if cfg["tied_head"] else p["lm_head.weight"]
    return x @ head.T


def main():
    f = h5py.File(sys.argv[1], "r")
    cfg = {k: (v.item() if hasattr(v, "item") else v) for k, v in f.attrs.items()}
    for k in ("vocab", "d_model", "n_layers", "n_heads", "n_kv_heads", "head_dim", "d_ff", "tied_head", "causal",
              "kv_rank", "rope_dim", "sparse_block", "sparse_init_blocks", "sparse_local_blocks", "sparse_topk"):
        if k not in cfg:
            continue
        cfg[k] = int(cfg[k])
    params = {name: torch.tensor(np.asarray(f["params"][name], dtype=np.float64), requires_grad=True)
              for name in f["params"]}
    tokens = torch.tensor(np.asarray(f["batch/tokens"]), dtype=torch.long)
    offsets = np.asarray(f["batch/offsets"])
    logits = forward(params, cfg, tokens, offsets)
    rows = torch.tensor(np.asarray(f["loss/rows"]), dtype=torch.long)
    targets = torch.tensor(np.asarray(f["loss/targets"]), dtype=torch.long)
    weights = torch.tensor(np.asarray(f["loss/weights"], dtype=np.float64))
    lp = logits[rows].log_softmax(-1)
    loss = -(weights * lp[torch.arange(len(rows)), targets]).sum()
    loss.backward()

    worst, worst_name = 0.0, ""

    def check(name, ours, ref):
        nonlocal worst, worst_name
        ours, ref = np.asarray(ours, dtype=np.float64), ref.detach().numpy()
        if ours.shape != ref.shape:
            print(f"{name}: shape {ours.shape} != reference {ref.shape}")
            sys.exit(1)
        scale = max(np.abs(ref).max(), 1e-30)
        rel = np.abs(ours - ref).max() / scale
        if not np.isfinite(rel):  # a NaN on either side is a failure, not a pass
            print(f"{name}: not finite (ours {np.isfinite(ours).all()}, reference {np.isfinite(ref).all()})")
            sys.exit(1)
        if rel > worst:
            worst, worst_name = rel, name
        return rel

    check("logits", f["out/logits"], logits)
    check("loss", np.asarray(f["out/loss"]).reshape(()), loss)
    for name, t in params.items():
        check("grad " + name, f["grads"][name], t.grad)
    print(f"worst relative error {worst:.3g} ({worst_name}); loss {loss.item():.6f}")
    sys.exit(0 if worst < 1e-4 else 1)


if __name__ == "__main__":
    main()
