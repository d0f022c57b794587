"""snapmla-decode.hf_model.py - for capture_hf.py --module in the CLI test: the
shipped nk-lm MLA checkpoint (data/lm/mla.h5) as a torch model of Hugging
Face DeepSeek-V2's module form (model.layers[i].self_attn with q_proj,
kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj; position_embeddings
= (cos, sin) handed to the attention; apply_rotary_pos_emb in this module),
written independently of neurkit from the architecture's definition, and a
tokenizer that replays the ids in $HF_TOKENS (an .h5 with /tokens [B,N])."""
import os

import h5py
import numpy as np
import torch
from torch import nn


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class RMSNorm(nn.Module):
    def __init__(self, w, eps):
        super().__init__()
        self.weight, self.eps = nn.Parameter(w), eps

    def forward(self, x):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + self.eps) * self.weight


def linear(w):
    m = nn.Linear(w.shape[1], w.shape[0], bias=False)
    m.weight = nn.Parameter(w)
    return m


class Attention(nn.Module):
    def __init__(self, p, pre, cfg):
        super().__init__()
        self.H, self.hd, self.qk_rope_head_dim = cfg["n_heads"], cfg["head_dim"], cfg["rope_dim"]
        self.qk_nope_head_dim, self.dc = self.hd - self.qk_rope_head_dim, cfg["kv_rank"]
        self.num_heads, self.scaling = self.H, self.hd ** -0.5
        self.q_proj = linear(p[pre + "q_proj.weight"])
        self.kv_a_proj_with_mqa = linear(p[pre + "kv_a_proj_with_mqa.weight"])
        self.kv_a_layernorm = RMSNorm(p[pre + "kv_a_layernorm.weight"], cfg["norm_eps"])
        self.kv_b_proj = linear(p[pre + "kv_b_proj.weight"])
        self.o_proj = linear(p[pre + "o_proj.weight"])

    def forward(self, hidden_states, position_embeddings):
        b, t, _ = hidden_states.shape
        H, nope, R = self.H, self.qk_nope_head_dim, self.qk_rope_head_dim
        q = self.q_proj(hidden_states).view(b, t, H, self.hd).transpose(1, 2)
        ckv = self.kv_a_proj_with_mqa(hidden_states)
        c = self.kv_a_layernorm(ckv[..., :self.dc])
        kv = self.kv_b_proj(c).view(b, t, H, nope + self.hd).transpose(1, 2)
        q_pe, k_pe = apply_rotary_pos_emb(q[..., nope:], ckv[..., self.dc:].view(b, 1, t, R), *position_embeddings)
        qs = torch.cat([q[..., :nope], q_pe], -1)
        ks = torch.cat([kv[..., :nope], k_pe.expand(b, H, t, R)], -1)
        s = (qs @ ks.transpose(-1, -2)) * self.scaling
        s = s.masked_fill(torch.triu(torch.ones(t, t, dtype=torch.bool), 1), float("-inf"))
        out = s.softmax(-1) @ kv[..., nope:]
        return self.o_proj(out.transpose(1, 2).reshape(b, t, H * self.hd))


class Layer(nn.Module):
    def __init__(self, p, l, cfg):
        super().__init__()
        pre = f"model.layers.{l}."
        self.input_layernorm = RMSNorm(p[pre + "input_layernorm.weight"], cfg["norm_eps"])
        self.self_attn = Attention(p, pre + "self_attn.", cfg)
        self.post_attention_layernorm = RMSNorm(p[pre + "post_attention_layernorm.weight"], cfg["norm_eps"])
        self.gate, self.up, self.down = (linear(p[pre + f"mlp.{n}_proj.weight"]) for n in ("gate", "up", "down"))

    def forward(self, x, pe):
        x = x + self.self_attn(hidden_states=self.input_layernorm(x), position_embeddings=pe)
        m = self.post_attention_layernorm(x)
        return x + self.down(nn.functional.silu(self.gate(m)) * self.up(m))


class Body(nn.Module):
    def __init__(self, p, cfg):
        super().__init__()
        self.embed = p["model.embed_tokens.weight"]
        self.layers = nn.ModuleList(Layer(p, l, cfg) for l in range(cfg["n_layers"]))
        R = cfg["rope_dim"]
        self.inv_freq = cfg["rope_theta"] ** (-torch.arange(0, R, 2, dtype=torch.float32) / R)

    def forward(self, ids):
        x = self.embed[ids]
        ang = torch.arange(ids.shape[1], dtype=torch.float32)[:, None] * self.inv_freq[None]
        emb = torch.cat([ang, ang], -1)[None]
        for layer in self.layers:
            x = layer(x, (emb.cos(), emb.sin()))
        return x


class Model(nn.Module):
    def __init__(self, p, cfg):
        super().__init__()
        self.model = Body(p, cfg)

    def forward(self, ids):
        return self.model(ids)


class ReplayTokenizer:
    def __init__(self, path):
        self.ids = h5py.File(path)["/tokens"][()].reshape(-1).tolist()

    def encode(self, text):
        return list(self.ids)


def build(args):
    f = h5py.File(os.environ["HF_MODEL"])
    cfg = {k: (v.item() if hasattr(v, "item") else v) for k, v in f.attrs.items()}
    for k in ("n_heads", "head_dim", "rope_dim", "kv_rank", "n_layers"):
        cfg[k] = int(cfg[k])
    p = {}
    for name in f["params"]:
        v = f["params"][name][()]
        if v.dtype == np.uint16:
            v = (v.astype(np.uint32) << 16).view(np.float32)
        p[name] = torch.tensor(v.astype(np.float32))
    return Model(p, cfg), ReplayTokenizer(os.environ["HF_TOKENS"])
