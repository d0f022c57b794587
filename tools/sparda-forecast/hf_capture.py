#!/usr/bin/env python3
"""hf_capture.py - a Hugging Face causal LM's attention, written as sparda-forecast reads it.

For a real model (Llama, Mistral, Qwen2/3 and other Llama-like decoders whose
attention module has q_proj, k_proj, v_proj and takes position_embeddings),
this writes the capture layout that `nk-lm capture` writes for nk-lm's own
models, so that `sparda-forecast train | select | eval | decode` run on it:

  /capture/tokens                int32 [T] (or [B,T])
  /capture/layer_LL/attn_in      float32 [T,D]     the attention input (after the layer's input norm)
  /capture/layer_LL/q            float32 [Hq,T,d]  after RoPE (and after q_norm where the model has one)
  /capture/layer_LL/k, v         float32 [Hkv,T,d] k after RoPE
  /capture/layer_LL/wq, wk       float32 [D,Hq*d], [D,Hkv*d]  the projections as x W (biases left out)
  root attribute rope_theta

(with a leading batch axis B on every dataset when --token-ids holds several
rows of one length). The values come from forward pre-hooks on each layer's
attention module: its input is the attention input, and q, k, v are recomputed
from it with the module's own projections, norms and the model's RoPE
(apply_rotary_pos_emb of the model's own modeling file), exactly as the module
does inside. Models whose RoPE is scaled (rope_type other than "default", e.g.
Llama 3.1's) are captured, but a Forecast trained on them turns queries with
the plain rope_theta: the script says so.

Not run in CI (it needs torch and transformers from PyPI; tests never use
PyPI). tests/bench/sparda-forecast/hf_capture_check.sh checks it against
`nk-lm capture` on an exported nk-lm model.

usage: hf_capture.py MODEL_DIR (--text FILE | --token-ids FILE) [--layers 0,1,...]
                     [--max-tokens N] [--dtype float32|bfloat16] -o capture.h5
"""
import argparse
import os
import sys

import h5py
import numpy as np
import torch


def rope_theta_of(config):
    params = getattr(config, "rope_parameters", None) or {}
    theta = params.get("rope_theta", getattr(config, "rope_theta", None))
    rope_type = params.get("rope_type", (getattr(config, "rope_scaling", None) or {}).get("rope_type", "default"))
    if theta is None:
        sys.exit("hf_capture: the config gives no rope_theta")
    return float(theta), rope_type


def read_tokens(args, model_dir):
    if args.token_ids:
        with h5py.File(args.token_ids, "r") as f:
            if "tokens" not in f:
                sys.exit(f"hf_capture: {args.token_ids}: no dataset /tokens")
            ids = np.asarray(f["tokens"][...], dtype=np.int64)
        if ids.ndim == 1:
            ids = ids[None, :]
        if ids.ndim != 2 or (ids < 0).any():
            sys.exit(f"hf_capture: {args.token_ids}: /tokens must be [T] or [B,T] of ids >= 0 (rows of one length)")
    else:
        from transformers import AutoTokenizer
        with open(args.text, encoding="utf-8", errors="replace") as f:
            text = f.read()
        ids = AutoTokenizer.from_pretrained(model_dir)(text, return_tensors="np")["input_ids"].astype(np.int64)
    if args.max_tokens > 0:
        ids = ids[:, :args.max_tokens]
    if ids.shape[1] == 0:
        sys.exit("hf_capture: no tokens")
    return ids


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="Hugging Face model folder")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--text", help="a text file, encoded by the model's tokenizer")
    src.add_argument("--token-ids", help="HDF5 /tokens [T] or [B,T]")
    ap.add_argument("--layers", default="", help="comma-separated layers to keep (default all)")
    ap.add_argument("--max-tokens", type=int, default=0, help="keep the first N tokens (0: all)")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"], help="the model's compute type")
    ap.add_argument("-o", "--output", required=True, help="the capture file (written atomically)")
    args = ap.parse_args()

    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=getattr(torch, args.dtype))
    model.eval()
    theta, rope_type = rope_theta_of(model.config)
    if rope_type not in ("default", None):
        print(f"hf_capture: warning: rope_type {rope_type}: a Forecast trained on this capture turns its queries "
              f"with the plain rope_theta {theta:g}", file=sys.stderr)
    ids = read_tokens(args, args.model)
    layers = model.model.layers
    keep = [int(x) for x in args.layers.split(",")] if args.layers else list(range(len(layers)))
    if keep != list(range(len(keep))):
        print("hf_capture: warning: sparda-forecast reads layers 0..L-1: keep a prefix of the layers", file=sys.stderr)
    records = {}

    def hook(index):
        def pre(module, positional, kwargs):
            x = kwargs["hidden_states"] if "hidden_states" in kwargs else positional[0]
            cos, sin = kwargs["position_embeddings"]
            B, T, _ = x.shape
            d = module.head_dim
            q = module.q_proj(x).view(B, T, -1, d)
            k = module.k_proj(x).view(B, T, -1, d)
            v = module.v_proj(x).view(B, T, -1, d)
            if hasattr(module, "q_norm"):
                q, k = module.q_norm(q), module.k_norm(k)
            q, k, v = (t.transpose(1, 2) for t in (q, k, v))
            q, k = sys.modules[type(module).__module__].apply_rotary_pos_emb(q, k, cos, sin)
            records[index] = {"attn_in": x, "q": q, "k": k, "v": v,
                              "wq": module.q_proj.weight.T, "wk": module.k_proj.weight.T}
        return pre

    handles = [layers[l].self_attn.register_forward_pre_hook(hook(l), with_kwargs=True) for l in keep]
    with torch.no_grad():
        model(input_ids=torch.from_numpy(ids))
    for h in handles:
        h.remove()

    squeeze = ids.shape[0] == 1
    tmp = args.output + ".tmp"
    with h5py.File(tmp, "w") as f:
        f.attrs["rope_theta"] = theta
        f.attrs["source"] = f"hf_capture.py {args.model}"
        f["capture/tokens"] = (ids[0] if squeeze else ids).astype(np.int32)
        for l in keep:
            g = f.create_group(f"capture/layer_{l:02d}")
            for name, t in records[l].items():
                a = t.detach().to(torch.float32).numpy()
                if name not in ("wq", "wk") and squeeze:
                    a = a[0]
                g[name] = np.ascontiguousarray(a)
    os.replace(tmp, args.output)
    print(f"hf_capture: {ids.shape[0]} x {ids.shape[1]} tokens, {len(keep)} layers -> {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
