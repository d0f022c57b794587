#!/usr/bin/env python3
"""capture_hf.py MODEL --text FILE [--layer L] [--tokens N] [--windows B] -o cache.h5

A Hugging Face MLA model's KV cache under snapmla-decode's names, so that
`snapmla-decode eval -i cache.h5` (or quant | attend) measures each layout on
a real cache. MODEL is a folder or hub name that transformers loads with
AutoModelForCausalLM: DeepSeek-V2/V3 and their kin, whose attention modules
hold q_proj (or q_a_proj, q_a_layernorm, q_b_proj), kv_a_proj_with_mqa,
kv_a_layernorm and kv_b_proj. Needs torch and transformers (a version that
passes position_embeddings = (cos, sin) to its attention modules and ships
the model's apply_rotary_pos_emb in the modeling module, as 4.48 and later
do); neither is needed by neurkit itself.

For each of B windows of N tokens of the text, a wrapper around layer L's
attention forward takes the attention input x (after the layer's norm) and
computes, with the module's own weights and RoPE function:
  /ckv  [B,N,d_c]     c = kv_a_layernorm((x W_kv_a^T)[:d_c])   (what MLA caches)
  /kpe  [B,N,d_R]     k_R = RoPE((x W_kv_a^T)[d_c:])            (after RoPE)
  /q    [B,H,d_c+d_R] the last token's absorbed query: [W_UK,h^T q_nope,h, RoPE(q_pe,h)]
  /lengths int32 [B] = N, /tokens int32 [B,N], root attribute softmax_scale
  (the module's scaling, YaRN's mscale included) and nk_schema
  snapmla-decode.cache/1.

--module M.py builds the model from a Python file instead (a function
build(args) returning (model, tokenizer)): the tests use it with a small
model of this form, because transformers cannot be installed beside
Debian's torch.
"""
import argparse
import importlib.util
import sys

import h5py
import numpy as np
import torch


def load(args):
    if args.module:
        spec = importlib.util.spec_from_file_location("capture_model", args.module)
        mod = importlib.util.module_from_spec(spec)
        sys.modules["capture_model"] = mod
        spec.loader.exec_module(mod)
        return mod.build(args)
    from transformers import AutoModelForCausalLM, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(args.model, trust_remote_code=args.trust_remote_code)
    model = AutoModelForCausalLM.from_pretrained(args.model, torch_dtype=torch.float32,
                                                 trust_remote_code=args.trust_remote_code)
    return model, tok


def attention_of(model, layer):
    body = getattr(model, "model", model)
    return body.layers[layer].self_attn


def rope_function(attn):
    mod = sys.modules[type(attn).__module__]
    config = getattr(attn, "config", None)
    if config is not None and getattr(config, "rope_interleave", False) and hasattr(mod, "apply_rotary_pos_emb_interleave"):
        return mod.apply_rotary_pos_emb_interleave
    return mod.apply_rotary_pos_emb


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", default="")
    ap.add_argument("--text", required=True)
    ap.add_argument("--layer", type=int, default=0)
    ap.add_argument("--tokens", type=int, default=1024)
    ap.add_argument("--windows", type=int, default=4)
    ap.add_argument("--module", default="")
    ap.add_argument("--trust-remote-code", action="store_true")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    if not args.model and not args.module:
        sys.exit("capture_hf.py: give MODEL or --module")
    model, tok = load(args)
    model.eval()
    ids = tok.encode(open(args.text, encoding="utf-8", errors="replace").read())
    T = args.tokens
    windows = [ids[w * T:(w + 1) * T] for w in range(min(args.windows, len(ids) // T))]
    if not windows:
        sys.exit(f"capture_hf.py: {args.text} has {len(ids)} tokens, fewer than one window of {T}")
    attn = attention_of(model, args.layer)
    apply_rope = rope_function(attn)
    H = attn.num_heads if hasattr(attn, "num_heads") else attn.config.num_attention_heads
    nope, R = attn.qk_nope_head_dim, attn.qk_rope_head_dim
    dc = attn.kv_a_layernorm.weight.shape[0]
    v_dim = attn.kv_b_proj.weight.shape[0] // H - nope
    scale = float(getattr(attn, "scaling", getattr(attn, "softmax_scale", (nope + R) ** -0.5)))
    caught = {}

    def capture(module, a, kw):
        x = kw["hidden_states"] if "hidden_states" in kw else a[0]
        cos, sin = kw["position_embeddings"] if "position_embeddings" in kw else a[1]
        with torch.no_grad():
            if getattr(module, "q_a_proj", None) is not None:
                q = module.q_b_proj(module.q_a_layernorm(module.q_a_proj(x)))
            else:
                q = module.q_proj(x)
            b, t, _ = x.shape
            q = q.view(b, t, H, nope + R).transpose(1, 2)           # [b,H,t,nope+R]
            q_nope, q_pe = q[..., :nope], q[..., nope:]
            ckv = module.kv_a_proj_with_mqa(x)
            c = module.kv_a_layernorm(ckv[..., :dc])               # [b,t,dc]
            k_pe = ckv[..., dc:].view(b, 1, t, R)
            q_pe, k_pe = apply_rope(q_pe, k_pe, cos, sin)
            w_uk = module.kv_b_proj.weight.view(H, nope + v_dim, dc)[:, :nope]  # [H,nope,dc]
            q_c = torch.einsum("bhn,hnc->bhc", q_nope[:, :, -1], w_uk)
            caught["ckv"], caught["kpe"] = c.float().numpy(), k_pe[:, 0].float().numpy()
            caught["q"] = torch.cat([q_c, q_pe[:, :, -1]], dim=-1).float().numpy()

    # The module's forward wrapped (a forward pre-hook with keyword arguments needs torch 2).
    original = attn.forward

    def wrapped(*a, **kw):
        capture(attn, a, kw)
        return original(*a, **kw)

    attn.forward = wrapped
    ckv, kpe, q = [], [], []
    for w in windows:
        with torch.no_grad():
            model(torch.tensor([w]))
        ckv.append(caught["ckv"][0]), kpe.append(caught["kpe"][0]), q.append(caught["q"][0])
    attn.forward = original
    B = len(windows)
    with h5py.File(args.output, "w") as f:
        f.attrs["nk_schema"] = "snapmla-decode.cache/1"
        f.attrs["softmax_scale"] = scale
        f.attrs["profile"] = "captured"
        f.attrs["model"] = args.model or args.module
        f.attrs["layer"] = args.layer
        f["/ckv"] = np.stack(ckv).astype(np.float32)
        f["/kpe"] = np.stack(kpe).astype(np.float32)
        f["/q"] = np.stack(q).astype(np.float32)
        f["/lengths"] = np.full(B, T, dtype=np.int32)
        f["/tokens"] = np.array(windows, dtype=np.int32)
    print(f"capture_hf.py: {B} windows of {T} tokens, layer {args.layer}: d_c {dc}, d_R {R}, {H} heads -> {args.output}")


if __name__ == "__main__":
    main()
