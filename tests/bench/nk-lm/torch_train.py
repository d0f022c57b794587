#!/usr/bin/python3
"""torch_train.py CORPUS.h5 OUT.tsv --layers L --d-model D --heads H --kv-heads G
--d-ff F --context T --batch B --steps N [--threads 2] - the peer of
`nk-lm train`: the same Llama (pre-norm RMSNorm, rotate-half RoPE, GQA,
SwiGLU, tied head), the same initialisation law, AdamW (betas 0.9/0.95,
wd 0.1 off the norms, clip 1.0), warm-up + cosine, windows drawn uniformly
from the same training stream (numpy's generator: the same distribution,
not the same draws), in eager float32 PyTorch on the same thread count.
Writes step, tokens, loss, tokens_per_s as TSV; prints the mean tokens/s.
--save DIR writes the trained weights as a Hugging Face Llama folder
(config.json + model.safetensors, float32, written with numpy + json) that
`nk-lm import` reads, so that nk-lm scores both runs the same way."""
import argparse
import math
import resource
import sys
import time

import h5py
import numpy as np
import torch
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("corpus"); p.add_argument("out")
for name, default in (("layers", 4), ("d-model", 192), ("heads", 6), ("kv-heads", 2), ("d-ff", 512), ("context", 256),
                      ("batch", 16), ("steps", 50), ("threads", 2), ("warmup", 100), ("seed", 1)):
    p.add_argument("--" + name, type=int, default=default)
p.add_argument("--lr", type=float, default=3e-3)
p.add_argument("--min-lr", type=float, default=0.1)
p.add_argument("--save", default="")
a = p.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(a.seed)

f = h5py.File(a.corpus, "r")
tokens, offsets, split = f["tokens"][()], f["doc_offsets"][()], f["split"][()]
vocab = int(f["tokenizer"].attrs["vocab"])
eos = vocab - 3
stream = np.concatenate([np.append(tokens[offsets[d]:offsets[d + 1]], eos) for d in np.flatnonzero(split == 0)])
rng = np.random.default_rng(a.seed)

D, H, G, T = a.d_model, a.heads, a.kv_heads, a.context
hd = D // H


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.n1, self.n2 = torch.nn.Parameter(torch.ones(D)), torch.nn.Parameter(torch.ones(D))
        self.q, self.k = torch.nn.Linear(D, H * hd, bias=False), torch.nn.Linear(D, G * hd, bias=False)
        self.v, self.o = torch.nn.Linear(D, G * hd, bias=False), torch.nn.Linear(H * hd, D, bias=False)
        self.gate, self.up = torch.nn.Linear(D, a.d_ff, bias=False), torch.nn.Linear(D, a.d_ff, bias=False)
        self.down = torch.nn.Linear(a.d_ff, D, bias=False)


def rms(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, D)
        self.blocks = torch.nn.ModuleList(Block() for _ in range(a.layers))
        self.norm = torch.nn.Parameter(torch.ones(D))
        for name, w in self.named_parameters():
            if w.dim() == 2:
                sd = 0.02 / math.sqrt(2 * a.layers) if name.endswith(("o.weight", "down.weight")) else 0.02
                torch.nn.init.normal_(w, 0, sd)
        inv = 10000.0 ** (-torch.arange(0, hd, 2).float() / hd)
        ang = torch.arange(T).float()[:, None] * inv[None]
        emb = torch.cat((ang, ang), -1)
        self.register_buffer("cos", emb.cos()[None, None]); self.register_buffer("sin", emb.sin()[None, None])
        self.register_buffer("mask", torch.triu(torch.full((T, T), float("-inf")), 1))

    def rope(self, x):
        h = x.shape[-1] // 2
        return x * self.cos + torch.cat((-x[..., h:], x[..., :h]), -1) * self.sin

    def forward(self, idx):
        B = idx.shape[0]
        x = self.embed(idx)
        for b in self.blocks:
            z = rms(x, b.n1)
            q = self.rope(b.q(z).view(B, T, H, hd).transpose(1, 2))
            k = self.rope(b.k(z).view(B, T, G, hd).transpose(1, 2)).repeat_interleave(H // G, 1)
            v = b.v(z).view(B, T, G, hd).transpose(1, 2).repeat_interleave(H // G, 1)
            att = (q @ k.transpose(-1, -2)) / math.sqrt(hd) + self.mask
            x = x + b.o((att.softmax(-1) @ v).transpose(1, 2).reshape(B, T, H * hd))
            z = rms(x, b.n2)
            x = x + b.down(F.silu(b.gate(z)) * b.up(z))
        return rms(x, self.norm) @ self.embed.weight.T


model = Model()
decay = [w for n, w in model.named_parameters() if w.dim() == 2]
plain = [w for n, w in model.named_parameters() if w.dim() < 2]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": plain, "weight_decay": 0.0}],
                        lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
out = open(a.out, "w")
out.write("step\ttokens\tloss\ttokens_per_s\n")
rates = []
for step in range(a.steps):
    lr = a.lr * (step + 1) / a.warmup if step < a.warmup else \
        a.lr * (a.min_lr + (1 - a.min_lr) * 0.5 * (1 + math.cos(math.pi * min(1.0, (step - a.warmup) / max(1, a.steps - a.warmup)))))
    for g in opt.param_groups:
        g["lr"] = lr
    starts = rng.integers(0, len(stream) - T - 1, a.batch)
    w = torch.from_numpy(np.stack([stream[s:s + T + 1] for s in starts]).astype(np.int64))
    t0 = time.perf_counter()
    logits = model(w[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, vocab), w[:, 1:].reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    rate = a.batch * T / (time.perf_counter() - t0)
    if step >= 2:
        rates.append(rate)
    out.write(f"{step + 1}\t{(step + 1) * a.batch * T}\t{loss.item():.6f}\t{rate:.1f}\n")
print(f"torch tokens/s {np.mean(rates):.0f} peak_rss_mb {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} "
      f"final_loss {loss.item():.4f} parameters {sum(w.numel() for w in model.parameters())}")

if a.save:
    import json
    import os
    os.makedirs(a.save, exist_ok=True)
    named = {"model.embed_tokens.weight": model.embed.weight, "model.norm.weight": model.norm}
    for i, b in enumerate(model.blocks):
        pre = f"model.layers.{i}."
        named.update({pre + "input_layernorm.weight": b.n1, pre + "post_attention_layernorm.weight": b.n2,
                      pre + "self_attn.q_proj.weight": b.q.weight, pre + "self_attn.k_proj.weight": b.k.weight,
                      pre + "self_attn.v_proj.weight": b.v.weight, pre + "self_attn.o_proj.weight": b.o.weight,
                      pre + "mlp.gate_proj.weight": b.gate.weight, pre + "mlp.up_proj.weight": b.up.weight,
                      pre + "mlp.down_proj.weight": b.down.weight})
    header, blobs, at = {}, [], 0
    for name in sorted(named):
        x = named[name].detach().numpy().astype("<f4")
        header[name] = {"dtype": "F32", "shape": list(x.shape), "data_offsets": [at, at + x.nbytes]}
        blobs.append(x.tobytes()); at += x.nbytes
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(f"{a.save}/model.safetensors", "wb") as g:
        g.write(len(text).to_bytes(8, "little") + text + b"".join(blobs))
    json.dump({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": D,
               "intermediate_size": a.d_ff, "num_hidden_layers": a.layers, "num_attention_heads": H,
               "num_key_value_heads": G, "head_dim": hd, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
               "vocab_size": vocab, "max_position_embeddings": T, "tie_word_embeddings": True,
               "bos_token_id": vocab - 4, "eos_token_id": vocab - 3, "pad_token_id": vocab - 1,
               "hidden_act": "silu"}, open(f"{a.save}/config.json", "w"))
