"""decode.py - nk-lm's decoding benchmark and its Hugging Face / llama.cpp
checks, run by run.sh with the benchmark venv's Python (venv.sh):

  decode.py WORK MODEL.h5 LABEL [--batches 1 8] [--prompt 16] [--new 128] [--threads 2] [--checks]

For MODEL (a causal nk-lm checkpoint): exports it (Hugging Face folder and
GGUF), then decodes greedily, KV cache on, B prompts of --prompt tokens by
--new tokens each, EOS ignored, at each batch size B, with
  nk-lm generate --ignore-eos --batch B, transformers' LlamaForCausalLM.generate
  (float32, eager, torch threads = --threads), and llama.cpp (llama-cpp-python's
  low-level batch API: B sequences in one llama_decode per step),
printing one table row per system and batch (tokens/s = B * new / seconds,
the prompt's prefill included for every system). Before timing it checks
that the three agree: logits of the export in transformers and in llama.cpp
against nk-lm score --logits, and the greedy continuations token by token.

--checks adds the round trip of issue #25: a randomly initialised tiny
LlamaForCausalLM saved by transformers, imported by nk-lm (logits against
transformers' to 1e-4), exported again and loaded back by transformers; and a
byte-level BPE trained by Hugging Face tokenizers, in that library's own id
layout, imported beside a tiny Llama: nk-lm must encode text to its ids."""
import argparse
import ctypes
import re
import subprocess
import sys
import time

import h5py
import numpy as np


def sh(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True)


def nk_logits(work, model, ids):
    with h5py.File(f'{work}/ids.h5', 'w') as f:
        f['tokens'] = ids.astype(np.int32)
    sh('nk-lm', '-q', 'score', '-m', model, '--token-ids', f'{work}/ids.h5', '--logits', '-o', f'{work}/score.h5')
    return h5py.File(f'{work}/score.h5')['logits'][()]


def rel(a, b):
    return float(np.abs(a - b).max() / np.abs(b).max())


def nk_generate(work, model, prompts, new, threads):
    with h5py.File(f'{work}/prompts.h5', 'w') as f:
        f['tokens'] = prompts.astype(np.int32)
    r = sh('nk-lm', 'generate', '-m', model, '--token-ids', f'{work}/prompts.h5', '--max-new', str(new), '--greedy',
           '--ignore-eos', '--batch', str(len(prompts)), '--threads', str(threads), '-o', f'{work}/gen.h5')
    m = re.search(r'\(([0-9.]+) tokens/s\)', r.stderr)
    out = h5py.File(f'{work}/gen.h5')['tokens'][()][:, prompts.shape[1]:]
    return out, out.size / float(m.group(1))


def hf_generate(hf, prompts, new):
    import torch
    x = torch.tensor(prompts, dtype=torch.long)
    with torch.no_grad():
        t0 = time.perf_counter()
        y = hf.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=new, do_sample=False, use_cache=True,
                        pad_token_id=0)
        secs = time.perf_counter() - t0
    y = y[:, prompts.shape[1]:].numpy()
    assert y.shape == (len(prompts), new), y.shape  # no EOS in the generation config: exactly 'new' each
    return y, secs


class LlamaCpp:
    """llama.cpp through llama-cpp-python's C bindings: B sequences decoded together."""

    def __init__(self, path, n_seq, n_ctx, threads):
        import llama_cpp as lc
        self.lc = lc
        self.quiet = lc.llama_log_callback(lambda level, text, user: None)  # kept: the C side holds it
        lc.llama_log_set(self.quiet, ctypes.c_void_p(0))
        lc.llama_backend_init()
        mp = lc.llama_model_default_params()
        self.model = lc.llama_model_load_from_file(path.encode(), mp)
        cp = lc.llama_context_default_params()
        cp.n_ctx, cp.n_batch, cp.n_ubatch, cp.n_seq_max = n_seq * n_ctx, 512, 512, n_seq
        cp.n_threads = cp.n_threads_batch = threads
        self.ctx = lc.llama_init_from_model(self.model, cp)
        self.vocab = lc.llama_vocab_n_tokens(lc.llama_model_get_vocab(self.model))
        self.n_seq = n_seq

    def decode(self, tokens, pos, seqs, want):
        lc = self.lc
        b = lc.llama_batch_init(len(tokens), 0, 1)
        for i, (t, p, s, w) in enumerate(zip(tokens, pos, seqs, want)):
            b.token[i], b.pos[i], b.n_seq_id[i], b.logits[i] = int(t), int(p), 1, bool(w)
            b.seq_id[i][0] = int(s)
        b.n_tokens = len(tokens)
        if lc.llama_decode(self.ctx, b) != 0:
            raise RuntimeError('llama_decode failed')
        out = []
        for i, w in enumerate(want):
            if w:
                ptr = lc.llama_get_logits_ith(self.ctx, i)
                out.append(np.ctypeslib.as_array(ptr, shape=(self.vocab,)).copy())
        lc.llama_batch_free(b)
        return out

    def clear(self):
        self.lc.llama_memory_clear(self.lc.llama_get_memory(self.ctx), True)

    def logits(self, row):  # every position of one sequence
        self.clear()
        return np.array(self.decode(row, range(len(row)), [0] * len(row), [True] * len(row)))

    def generate(self, prompts, new):
        self.clear()
        B, T = prompts.shape
        t0 = time.perf_counter()
        tok, pos, seq, want = [], [], [], []
        for s in range(B):
            tok += list(prompts[s]); pos += list(range(T)); seq += [s] * T; want += [False] * (T - 1) + [True]
        last = self.decode(tok, pos, seq, want)
        out = np.zeros((B, new), np.int64)
        for k in range(new):
            out[:, k] = [int(np.argmax(z)) for z in last]
            if k + 1 < new:
                last = self.decode(out[:, k], [T + k] * B, range(B), [True] * B)
        return out, time.perf_counter() - t0


def agree(a, b):
    """Leading tokens equal, averaged over the rows (greedy paths part at near-ties)."""
    n = []
    for x, y in zip(a, b):
        d = np.flatnonzero(x != y)
        n.append(d[0] if len(d) else len(x))
    return float(np.mean(n))


def round_trip(work, threads):
    import torch
    import transformers as tf
    torch.manual_seed(0)
    cfg = tf.LlamaConfig(vocab_size=300, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                         rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False)
    ref = tf.LlamaForCausalLM(cfg).eval()
    ref.save_pretrained(f'{work}/tiny-hf', safe_serialization=True)
    sh('nk-lm', '-q', 'import', f'{work}/tiny-hf', '-o', f'{work}/tiny.h5')
    ids = np.random.default_rng(1).integers(0, 300, (2, 24))
    with torch.no_grad():
        want = ref(torch.tensor(ids)).logits.numpy()
    e1 = rel(nk_logits(work, f'{work}/tiny.h5', ids), want)
    sh('nk-lm', '-q', 'export', '-m', f'{work}/tiny.h5', '-o', f'{work}/tiny-back')
    back = tf.LlamaForCausalLM.from_pretrained(f'{work}/tiny-back').eval()
    with torch.no_grad():
        e2 = rel(back(torch.tensor(ids)).logits.numpy(), want)
    print(f'  round trip: transformers -> nk-lm import: logits rel err {e1:.1e}; '
          f'-> nk-lm export -> transformers: {e2:.1e} (goal 1e-4: {"met" if max(e1, e2) < 1e-4 else "NOT met"})')
    return max(e1, e2) < 1e-4 and tokenizer_import(work, cfg)


def tokenizer_import(work, cfg):
    """A byte-level BPE trained by Hugging Face tokenizers (its own id layout: the special first, the alphabet in
    its order) beside a tiny Llama of its vocabulary: nk-lm import must encode text to the same ids."""
    import torch
    import transformers as tf
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    texts = open('/usr/share/games/fortunes/fortunes', encoding='utf-8', errors='replace').read().split('\n%\n')
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.train_from_iterator(texts[:300], trainers.BpeTrainer(vocab_size=700, special_tokens=['<|endoftext|>'],
                                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                                      show_progress=False))
    eot = tk.token_to_id('<|endoftext|>')
    cfg = tf.LlamaConfig(**{**cfg.to_dict(), 'vocab_size': tk.get_vocab_size(), 'bos_token_id': eot, 'eos_token_id': eot})
    tf.LlamaForCausalLM(cfg).save_pretrained(f'{work}/bpe-hf', safe_serialization=True)
    tk.save(f'{work}/bpe-hf/tokenizer.json')
    sh('nk-lm', '-q', 'import', f'{work}/bpe-hf', '-o', f'{work}/bpe.h5')
    same = 0
    probes = [t for t in texts[300:] if 0 < len(tk.encode(t).ids) < 60][:50] or texts[:1]
    for i, text in enumerate(probes):
        open(f'{work}/probe.txt', 'w', encoding='utf-8').write(text)
        sh('nk-lm', '-q', 'score', '-m', f'{work}/bpe.h5', '--text', f'{work}/probe.txt', '-o', f'{work}/probe.h5')
        row = h5py.File(f'{work}/probe.h5')['tokens'][()][0]
        ours = [int(x) for x in row[1:] if x >= 0]
        same += ours == tk.encode(text).ids and row[0] == eot
    print(f'  tokenizer import: a byte-level BPE trained by Hugging Face tokenizers (vocabulary {tk.get_vocab_size()}, '
          f'<|endoftext|> at id {eot}): nk-lm encodes {same} of {len(probes)} fortunes to its ids')
    return same == len(probes)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('work'); ap.add_argument('model'); ap.add_argument('label')
    ap.add_argument('--batches', type=int, nargs='+', default=[1, 8])
    ap.add_argument('--prompt', type=int, default=16)
    ap.add_argument('--new', type=int, default=128)
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--checks', action='store_true')
    ap.add_argument('--bandwidth', type=float, default=0, help='the measured memory bandwidth, GB/s (STREAM triad)')
    a = ap.parse_args()
    import torch
    import transformers as tf
    torch.set_num_threads(a.threads)
    tf.logging.set_verbosity_error()
    tf.utils.logging.disable_progress_bar()
    ok = round_trip(a.work, a.threads) if a.checks else True

    m = h5py.File(a.model)
    V, ctx = int(m.attrs['vocab']), int(m.attrs['max_seq'])
    params = sum(int(np.prod(d.shape)) for d in m['params'].values())
    m.close()
    hf_dir, gguf = f'{a.work}/{a.label}-hf', f'{a.work}/{a.label}.gguf'
    sh('nk-lm', '-q', 'export', '-m', a.model, '-o', hf_dir)
    sh('nk-lm', '-q', 'export', '-m', a.model, '--format', 'gguf', '-o', gguf)
    hf = tf.LlamaForCausalLM.from_pretrained(hf_dir, dtype=torch.float32).eval()
    hf.generation_config.eos_token_id = None  # EOS ignored, as nk-lm --ignore-eos (min_new_tokens would mask it)
    cpp = LlamaCpp(gguf, max(a.batches), ctx, a.threads)

    rng = np.random.default_rng(7)
    B = max(a.batches)
    prompts = np.concatenate([np.full((B, 1), V - 4), rng.integers(0, V - 4, (B, a.prompt - 1))], 1)
    # Agreement first: logits of one row in all three, then the greedy paths.
    want = nk_logits(a.work, a.model, prompts[:1])[0]
    with torch.no_grad():
        e_hf = rel(hf(torch.tensor(prompts[:1])).logits.numpy()[0], want)
    e_cpp = rel(cpp.logits(prompts[0]), want)
    print(f'  {a.label}: {params / 1e6:.1f}M parameters; logits against nk-lm score: '
          f'transformers {e_hf:.1e}, llama.cpp {e_cpp:.1e} (its default float16 KV cache)')
    ok = ok and e_hf < 1e-4 and e_cpp < 1e-3

    def row(*c):
        print('| %-9s | %-5s | %-12s | %10s | %9s | %-28s |' % c)
    row('model', 'batch', 'system', 'tokens/s', 'vs nk-lm', 'greedy path = nk-lm (tokens)')
    row('-----', '-----', '------', '--------', '--------', '----------------------------')
    rates = {}
    for b in a.batches:
        p = prompts[:b]
        nk_tokens, nk_s = nk_generate(a.work, a.model, p, a.new, a.threads)
        hf_generate(hf, p[:, :4], 4)  # warm-up
        hf_tokens, hf_s = hf_generate(hf, p, a.new)
        cpp.generate(p[:, :4], 4)
        cpp_tokens, cpp_s = cpp.generate(p, a.new)
        n = b * a.new
        rates[b] = {'nk-lm': n / nk_s, 'transformers': n / hf_s, 'llama.cpp': n / cpp_s}
        for name, tokens in (('nk-lm', nk_tokens), ('transformers', hf_tokens), ('llama.cpp', cpp_tokens)):
            r = rates[b][name]
            row(a.label, b, name, f'{r:.0f}', f'{rates[b]["nk-lm"] / r:.2f}x', f'{agree(tokens, nk_tokens):.0f} of {a.new}')
    for b in a.batches:
        r = rates[b]
        goal = ' (goal >= 3)' if b == 1 else ''
        print(f'  {a.label} batch {b}: nk-lm / transformers = {r["nk-lm"] / r["transformers"]:.2f}x{goal}, '
              f'nk-lm / llama.cpp = {r["nk-lm"] / r["llama.cpp"]:.2f}x (goal >= 0.67: within 1.5x)')
    # Batch 1 reads every weight once per token: the memory traffic it sustains, against the machine's.
    one = rates[min(a.batches)]
    traffic = {k: 4 * params * one[k] / 1e9 for k in one}
    limit = f'; the limit: {a.bandwidth:.1f} GB/s (triad) = {a.bandwidth * 1e9 / (4 * params):.0f} tokens/s' if a.bandwidth else ''
    print(f'  {a.label} batch 1 weight traffic (float32, {4 * params / 1e6:.0f} MB per token): nk-lm {traffic["nk-lm"]:.1f} GB/s, '
          f'llama.cpp {traffic["llama.cpp"]:.1f}, transformers {traffic["transformers"]:.1f}{limit}')
    sys.exit(0 if ok else 1)


main()
