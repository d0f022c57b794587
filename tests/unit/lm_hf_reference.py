#!/usr/bin/python3
"""lm_hf_reference.py - the lm_hf unit suite's independent side: Hugging Face
Llama folders read and written with numpy + json only (no transformers, no
safetensors package), and the logits of lm_reference.py's PyTorch forward.

  lm_hf_reference.py check DIR OURS.h5 [--exported]
      Reads DIR/config.json and DIR/model.safetensors, runs the reference
      forward (float64) over OURS.h5's /tokens int32 [N] and /offsets int64
      [S+1] and compares with its /logits [N,V]: exit 0 when they agree to
      1e-4 relative, 1 otherwise. --exported: DIR was written by nk's
      export_hf, whose layout is checked too (F32, names sorted, contiguous
      data, the header padded with spaces to 8 bytes, config keys, and
      tokenizer.json against GPT-2's bytes_to_unicode when present).
  lm_hf_reference.py write DIR DTYPE SEED
      Writes a random model as config.json + model.safetensors in DTYPE
      (float16 or bfloat16, rounded to nearest even), tensors in a shuffled
      order; float16: untied with an explicit head_dim != hidden/heads;
      bfloat16: tied, no head_dim, and an lm_head.weight that a tied model
      must ignore."""
import json
import os
import struct
import sys

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lm_reference import forward  # noqa: E402

torch.set_default_dtype(torch.float64)


def read_safetensors(path):
    """(tensors as float64 numpy arrays, dtypes, header length, raw header bytes, data offsets)."""
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header_bytes = raw[8:8 + n]
    header = json.loads(header_bytes)
    data = raw[8 + n:]
    tensors, dtypes, spans = {}, {}, {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        chunk = data[b:e]
        if info["dtype"] == "BF16":
            bits = np.frombuffer(chunk, dtype="<u2").astype(np.uint32) << 16
            x = bits.view(np.float32)
        else:
            x = np.frombuffer(chunk, dtype={"F32": "<f4", "F16": "<f2", "F64": "<f8"}[info["dtype"]])
        tensors[name] = x.astype(np.float64).reshape(info["shape"])
        dtypes[name] = info["dtype"]
        spans[name] = (b, e)
    return tensors, dtypes, n, header_bytes, spans, len(data), header


def reference_config(cfg):
    heads = cfg["num_attention_heads"]
    return {
        "vocab": cfg["vocab_size"], "d_model": cfg["hidden_size"], "n_layers": cfg["num_hidden_layers"],
        "n_heads": heads, "n_kv_heads": cfg.get("num_key_value_heads", heads),
        "head_dim": cfg.get("head_dim") or cfg["hidden_size"] // heads, "d_ff": cfg["intermediate_size"],
        "rope_theta": cfg.get("rope_theta", 10000.0), "norm_eps": cfg.get("rms_norm_eps", 1e-6),
        "tied_head": int(cfg.get("tie_word_embeddings", False)), "causal": 1,
    }


def bytes_to_unicode():
    # GPT-2's encoder.py, verbatim in substance.
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


def check_exported(d, cfg, dtypes, n, header_bytes, spans, data_len, header):
    problems = []
    if n % 8 != 0:
        problems.append(f"header length {n} is not a multiple of 8")
    text = header_bytes.decode("utf-8")
    if text.rstrip(" ") != text.rstrip() or not text.rstrip(" ").endswith("}"):
        problems.append("the header is not JSON padded with spaces")
    if header.get("__metadata__", {}).get("format") != "pt":
        problems.append("__metadata__.format is not pt")
    names = [k for k in header if k != "__metadata__"]
    if any(t != "F32" for t in dtypes.values()):
        problems.append("not all tensors are F32")
    by_offset = sorted(names, key=lambda k: spans[k])
    if by_offset != sorted(names):
        problems.append("data not in name order")
    cursor = 0
    for k in by_offset:
        if spans[k][0] != cursor:
            problems.append(f"{k}: data not contiguous")
        cursor = spans[k][1]
    if cursor != data_len:
        problems.append("data buffer not fully indexed")
    for key, want in (("architectures", ["LlamaForCausalLM"]), ("model_type", "llama"), ("hidden_act", "silu"),
                      ("torch_dtype", "float32"), ("rope_scaling", None)):
        if cfg.get(key, "absent") != want:
            problems.append(f"config.json {key} = {cfg.get(key, 'absent')!r}, expected {want!r}")
    tok_path = os.path.join(d, "tokenizer.json")
    if os.path.exists(tok_path):
        tok = json.load(open(tok_path, encoding="utf-8"))
        vocab, merges = tok["model"]["vocab"], tok["model"]["merges"]
        b2u = bytes_to_unicode()
        if tok["model"]["type"] != "BPE" or tok["pre_tokenizer"]["type"] != "ByteLevel":
            problems.append("tokenizer.json is not a ByteLevel BPE")
        for b in range(256):
            if vocab.get(b2u[b]) != b:
                problems.append(f"byte {b} is not id {b}")
                break
        for k, m in enumerate(merges):
            left, right = m.split(" ")
            if left not in vocab or right not in vocab or vocab.get(left + right) != 256 + k:
                problems.append(f"merge {k} ({m!r}) does not make id {256 + k}")
                break
        specials = sorted(a["id"] for a in tok["added_tokens"])
        if specials != list(range(cfg["vocab_size"] - 4, cfg["vocab_size"])):
            problems.append(f"special ids {specials}")
        if cfg["bos_token_id"] != cfg["vocab_size"] - 4 or cfg["eos_token_id"] != cfg["vocab_size"] - 3:
            problems.append("bos/eos ids in config.json")
    return problems


def check(d, ours, exported):
    cfg = json.load(open(os.path.join(d, "config.json")))
    tensors, dtypes, n, header_bytes, spans, data_len, header = read_safetensors(os.path.join(d, "model.safetensors"))
    problems = check_exported(d, cfg, dtypes, n, header_bytes, spans, data_len, header) if exported else []
    for p in problems:
        print("layout:", p)
    f = h5py.File(ours, "r")
    tokens = torch.tensor(np.asarray(f["tokens"]), dtype=torch.long)
    offsets = np.asarray(f["offsets"])
    params = {k: torch.tensor(v) for k, v in tensors.items()}
    with torch.no_grad():
        ref = forward(params, reference_config(cfg), tokens, offsets).numpy()
    got = np.asarray(f["logits"], dtype=np.float64)
    if got.shape != ref.shape:
        print(f"logits shape {got.shape} != reference {ref.shape}")
        return 1
    rel = np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30)
    print(f"logits: worst relative error {rel:.3g} over {got.shape}; dtypes {sorted(set(dtypes.values()))}")
    return 0 if rel < 1e-4 and not problems else 1


def write(d, dtype, seed):
    rng = np.random.default_rng(seed)
    if dtype == "float16":
        cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 24, "intermediate_size": 40,
               "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8,
               "vocab_size": 53, "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "rope_theta": 321.0,
               "tie_word_embeddings": False, "hidden_act": "silu", "rope_scaling": None, "attention_bias": False,
               "torch_dtype": "float16", "bos_token_id": 1, "eos_token_id": 2}
    else:  # no architectures, no head_dim nor rope_theta: the defaults
        cfg = {"model_type": "llama", "hidden_size": 24, "intermediate_size": 36, "num_hidden_layers": 2,
               "num_attention_heads": 6, "num_key_value_heads": 3, "vocab_size": 47, "max_position_embeddings": 32,
               "rms_norm_eps": 1e-6, "tie_word_embeddings": True, "torch_dtype": "bfloat16"}
    D, F, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    H, G = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim", D // H)
    shapes = {"model.embed_tokens.weight": (V, D), "model.norm.weight": (D,), "lm_head.weight": (V, D)}
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        shapes.update({p + "input_layernorm.weight": (D,), p + "post_attention_layernorm.weight": (D,),
                       p + "self_attn.q_proj.weight": (H * hd, D), p + "self_attn.k_proj.weight": (G * hd, D),
                       p + "self_attn.v_proj.weight": (G * hd, D), p + "self_attn.o_proj.weight": (D, H * hd),
                       p + "mlp.gate_proj.weight": (F, D), p + "mlp.up_proj.weight": (F, D),
                       p + "mlp.down_proj.weight": (D, F)})
    names = list(shapes)
    rng.shuffle(names)
    header, chunks, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name in names:
        shape = shapes[name]
        x = (1.0 + 0.1 * rng.standard_normal(shape)) if len(shape) == 1 else 0.15 * rng.standard_normal(shape)
        x = x.astype(np.float32)
        if dtype == "float16":
            raw = x.astype("<f2").tobytes()
            st = "F16"
        else:
            u = x.view(np.uint32).astype(np.uint64)
            raw = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2").tobytes()
            st = "BF16"
        header[name] = {"dtype": st, "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    return 0


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "check":
        return check(sys.argv[2], sys.argv[3], "--exported" in sys.argv[4:])
    if len(sys.argv) == 5 and sys.argv[1] == "write":
        return write(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
