"""gguf_reference.py - an independent reader of GGUF version 3 files (the
layout of ggml's gguf.h, parsed with struct + numpy) and a numpy forward of
llama.cpp's Llama graph over what it reads: adjacent-pair RoPE (llama.cpp's
rope mode 0), GQA, SwiGLU, RMSNorm, output = token_embd when output.weight is
absent. Used by nk-lm.gguf.sh:

  gguf_reference.py FILE.gguf MODEL.h5 SCORE.h5
checks the file against the model (metadata, tokens and merges, tensor
shapes, offsets, alignment) and its logits against SCORE.h5's /logits (nk-lm
score --logits over the same /tokens)."""
import struct
import sys

import h5py
import numpy as np

SCALARS = {0: '<B', 1: '<b', 2: '<H', 3: '<h', 4: '<I', 5: '<i', 6: '<f', 7: '<?', 10: '<Q', 11: '<q', 12: '<d'}


class Reader:
    def __init__(self, raw):
        self.raw, self.at = raw, 0

    def take(self, fmt):
        (v,) = struct.unpack_from(fmt, self.raw, self.at)
        self.at += struct.calcsize(fmt)
        return v

    def text(self):
        n = self.take('<Q')
        s = self.raw[self.at:self.at + n].decode('utf-8')
        self.at += n
        return s

    def value(self, t):
        if t == 8:
            return self.text()
        if t == 9:
            et, n = self.take('<I'), self.take('<Q')
            return [self.value(et) for _ in range(n)]
        return self.take(SCALARS[t])


def read_gguf(path):
    raw = open(path, 'rb').read()
    r = Reader(raw)
    assert r.take('<I') == 0x46554747, 'magic'
    assert r.take('<I') == 3, 'version'
    n_tensors, n_kv = r.take('<Q'), r.take('<Q')
    meta = {}
    for _ in range(n_kv):
        k = r.text()
        meta[k] = r.value(r.take('<I'))
    infos = []
    for _ in range(n_tensors):
        name = r.text()
        dims = [r.take('<Q') for _ in range(r.take('<I'))]
        infos.append((name, dims, r.take('<I'), r.take('<Q')))
    align = meta.get('general.alignment', 32)
    start = (r.at + align - 1) // align * align
    tensors = {}
    for name, dims, kind, off in infos:
        assert kind == 0 and off % align == 0, (name, kind, off)
        n = int(np.prod(dims))
        tensors[name] = np.frombuffer(raw, '<f4', n, start + off).reshape(dims[::-1])
    assert start + max(off + 4 * int(np.prod(d)) for _, d, _, off in infos) <= len(raw)
    return meta, tensors


def rms(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def rope_pairs(x, theta):  # x [T, heads, hd]: rotate (x[2i], x[2i+1]) by pos * theta^(-2i/hd)
    T, _, hd = x.shape
    ang = np.arange(T)[:, None] * theta ** (-np.arange(0, hd, 2) / hd)[None, :]
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = a * c - b * s, a * s + b * c
    return out


def forward(meta, t, tokens):
    g = lambda k: meta['llama.' + k]
    L, H, KV, eps = g('block_count'), g('attention.head_count'), g('attention.head_count_kv'), g('attention.layer_norm_rms_epsilon')
    hd, theta = g('rope.dimension_count'), g('rope.freq_base')
    T = len(tokens)
    x = t['token_embd.weight'][tokens].astype(np.float64)
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for l in range(L):
        w = lambda n: t[f'blk.{l}.{n}.weight'].astype(np.float64)
        h = rms(x, w('attn_norm'), eps)
        q = rope_pairs((h @ w('attn_q').T).reshape(T, H, hd), theta)
        k = rope_pairs((h @ w('attn_k').T).reshape(T, KV, hd), theta)
        v = (h @ w('attn_v').T).reshape(T, KV, hd)
        rep = H // KV
        att = np.einsum('thd,shd->hts', q, np.repeat(k, rep, 1)) / np.sqrt(hd) + mask
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        o = np.einsum('hts,shd->thd', att, np.repeat(v, rep, 1)).reshape(T, H * hd)
        x = x + o @ w('attn_output').T
        h = rms(x, w('ffn_norm'), eps)
        gate = h @ w('ffn_gate').T
        x = x + ((gate / (1 + np.exp(-gate))) * (h @ w('ffn_up').T)) @ w('ffn_down').T
    x = rms(x, t['output_norm.weight'], eps)
    return x @ t.get('output.weight', t['token_embd.weight']).astype(np.float64).T


def byte_symbols():  # GPT-2's bytes_to_unicode()
    keep = list(range(ord('!'), ord('~') + 1)) + list(range(0xa1, 0xad)) + list(range(0xae, 0x100))
    table, n = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + n)
            n += 1
    return table


def main():
    meta, t = read_gguf(sys.argv[1])
    m = h5py.File(sys.argv[2])
    V = int(m.attrs['vocab'])
    assert meta['general.architecture'] == 'llama' and meta['llama.vocab_size'] == V
    assert meta['llama.block_count'] == int(m.attrs['n_layers']) and meta['llama.embedding_length'] == int(m.attrs['d_model'])
    assert ('output.weight' in t) == (not bool(m.attrs['tied_head'])), 'output.weight present iff untied'
    assert t['token_embd.weight'].shape == (V, int(m.attrs['d_model']))
    # Every tensor but q and k is the model's own, bit for bit.
    p = m['params']
    assert np.array_equal(t['blk.0.attn_v.weight'], p['model.layers.0.self_attn.v_proj.weight'][()])
    assert np.array_equal(t['token_embd.weight'], p['model.embed_tokens.weight'][()])
    assert not np.array_equal(t['blk.0.attn_q.weight'], p['model.layers.0.self_attn.q_proj.weight'][()]), 'q not permuted'
    # The vocabulary: byte symbols of each token's bytes, the merges as "left right", specials as control tokens.
    sym = byte_symbols()
    table = [bytes([i]) for i in range(256)]
    merges = m['tokenizer/merges'][()]
    for a, b in merges:
        table.append(table[a] + table[b])
    text = [''.join(sym[c] for c in tb) for tb in table]
    toks = meta['tokenizer.ggml.tokens']
    assert len(toks) == V and toks[:len(text)] == text
    assert toks[-4:] == ['<|bos|>', '<|eos|>', '<|mask|>', '<|pad|>']
    assert meta['tokenizer.ggml.token_type'] == [1] * len(text) + [3] * 4
    assert meta['tokenizer.ggml.merges'] == [text[a] + ' ' + text[b] for a, b in merges]
    assert meta['tokenizer.ggml.bos_token_id'] == V - 4 and meta['tokenizer.ggml.eos_token_id'] == V - 3
    # Logits of llama.cpp's graph over the GGUF against nk-lm's own.
    s = h5py.File(sys.argv[3])
    worst = 0.0
    for row, want in zip(s['tokens'][()], s['logits'][()]):
        n = int((row >= 0).sum())
        got = forward(meta, t, row[:n])
        worst = max(worst, float(np.abs(got - want[:n]).max() / np.abs(want[:n]).max()))
    assert worst < 1e-4, worst
    print(f'gguf: {len(t)} tensors, {len(meta)} keys; logits worst relative error {worst:.2e}')


main()
