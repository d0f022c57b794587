"""torch_llama.py - an nk-lm causal checkpoint as eager float32 PyTorch, for
the benchmarks' PyTorch peers (never for tests): the weights of /params read
with h5py (bfloat16 widened), the Llama forward written the way a researcher
writes it (pre-norm RMSNorm, rotate-half RoPE, GQA through
repeat_interleave, SwiGLU, tied or untied head), with an optional KV cache
for decoding left-padded batches."""
import h5py
import numpy as np
import torch
import torch.nn.functional as F


class Llama:
    def __init__(self, path):
        m = h5py.File(path, "r")
        cfg = {k: (v.item() if hasattr(v, "item") else v) for k, v in m.attrs.items()}
        self.D, self.H, self.G, self.hd, self.L = (int(cfg[k]) for k in ("d_model", "n_heads", "n_kv_heads", "head_dim", "n_layers"))
        self.eps, self.theta = float(cfg["norm_eps"]), float(cfg["rope_theta"])
        self.params = {}
        for name, ds in m["params"].items():
            x = ds[()]
            if ds.attrs.get("dtype", b"") in (b"bfloat16", "bfloat16"):
                x = (x.astype(np.uint32) << 16).view(np.float32)
            self.params[name] = torch.nn.Parameter(torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)))
        self.head = "model.embed_tokens.weight" if int(cfg["tied_head"]) else "lm_head.weight"
        self.inv = self.theta ** (-torch.arange(0, self.hd, 2, dtype=torch.float32) / self.hd)

    def frozen_copy(self):
        c = object.__new__(Llama)
        c.__dict__.update(self.__dict__)
        c.params = {k: v.detach().clone() for k, v in self.params.items()}
        return c

    def rms(self, x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * w

    def rope(self, x, pos):  # x [B, heads, T, hd], pos [B, T]
        ang = pos[..., None].float() * self.inv
        cos, sin = torch.cat((ang, ang), -1).cos()[:, None], torch.cat((ang, ang), -1).sin()[:, None]
        h = self.hd // 2
        return x * cos + torch.cat((-x[..., h:], x[..., :h]), -1) * sin

    def forward(self, tok, valid, cache=None):
        """tok [B, T]; valid [B, T] (False: left padding). With a cache (a
        dict, filled on the first call) the tokens continue the cached ones.
        Returns logits [B, T, V]."""
        p = self.params
        B, T = tok.shape
        if cache is not None and "valid" in cache:
            valid_all = torch.cat((cache["valid"], valid), 1)
        else:
            valid_all = valid
        pos = (valid_all.long().cumsum(1) - 1).clamp(min=0)[:, -T:]
        S = valid_all.shape[1]
        # query t (at column S - T + t) sees valid keys at columns <= its own
        causal = torch.ones(T, S, dtype=torch.bool).tril(S - T)
        mask = causal[None, None] & valid_all[:, None, None, :]
        # a padding query sees its own key (finite, ignored; no fully masked row to make NaN)
        mask = mask | self_key(T, S)
        x = p["model.embed_tokens.weight"][tok]
        for l in range(self.L):
            pre = f"model.layers.{l}."
            h = self.rms(x, p[pre + "input_layernorm.weight"])
            q = (h @ p[pre + "self_attn.q_proj.weight"].T).view(B, T, self.H, self.hd).transpose(1, 2)
            k = (h @ p[pre + "self_attn.k_proj.weight"].T).view(B, T, self.G, self.hd).transpose(1, 2)
            v = (h @ p[pre + "self_attn.v_proj.weight"].T).view(B, T, self.G, self.hd).transpose(1, 2)
            q, k = self.rope(q, pos), self.rope(k, pos)
            if cache is not None:
                if l in cache:
                    k, v = torch.cat((cache[l][0], k), 2), torch.cat((cache[l][1], v), 2)
                cache[l] = (k, v)
            k, v = k.repeat_interleave(self.H // self.G, 1), v.repeat_interleave(self.H // self.G, 1)
            if hasattr(F, "scaled_dot_product_attention"):
                o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            else:  # Debian's torch 1.13
                sc = ((q @ k.transpose(-1, -2)) / self.hd ** 0.5).masked_fill(~mask, float("-inf"))
                o = sc.softmax(-1) @ v
            o = o.transpose(1, 2).reshape(B, T, self.H * self.hd)
            x = x + o @ p[pre + "self_attn.o_proj.weight"].T
            h = self.rms(x, p[pre + "post_attention_layernorm.weight"])
            x = x + (F.silu(h @ p[pre + "mlp.gate_proj.weight"].T) * (h @ p[pre + "mlp.up_proj.weight"].T)) @ p[pre + "mlp.down_proj.weight"].T
        if cache is not None:
            cache["valid"] = valid_all
        return self.rms(x, p["model.norm.weight"]) @ p[self.head].T


def self_key(T, S):
    """[1, 1, T, S]: query t's own key, at column S - T + t."""
    m = torch.zeros(T, S, dtype=torch.bool)
    m[torch.arange(T), torch.arange(S - T, S)] = True
    return m[None, None]


def left_pad(rows, fill=0):
    """Lists of token ids -> (tok [B, T] int64, valid [B, T] bool), padded on the left."""
    T = max(len(r) for r in rows)
    tok = torch.full((len(rows), T), fill, dtype=torch.long)
    valid = torch.zeros((len(rows), T), dtype=torch.bool)
    for i, r in enumerate(rows):
        tok[i, T - len(r):] = torch.tensor(r, dtype=torch.long)
        valid[i, T - len(r):] = True
    return tok, valid
