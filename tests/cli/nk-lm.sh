# nk-lm.sh - corpus | train | generate | score on a tiny model (seconds):
# a loss that falls, resume equal to the uninterrupted run bit for bit,
# score's log-probabilities recomputed in numpy from its own logits,
# --token-ids generation layout, diffusion sampling, and bad input.
. "$(dirname "$0")/lib.sh"

# A small English text: two documents per paragraph file.
for i in $(seq 1 40); do
  echo "The cat sat on the mat number $i. A dog ran to the park and back again."
  echo
  echo "Paper $i: we train a small model on short sentences and measure its loss."
  echo
done > text.txt
SIZES="--layers 2 --d-model 32 --heads 4 --kv-heads 2 --d-ff 64 --context 32 --batch 4 --warmup 5"

check "corpus from a text file (paragraphs, vocab 300)" nk-lm -q corpus --text text.txt --paragraphs --vocab 300 --validation 0.1 -o corpus.h5
check "corpus --list names every paragraph" sh -c 'nk-lm corpus --text text.txt --paragraphs --list | wc -l | grep -qx 80'
check "corpus --exclude drops named documents" sh -c 'nk-lm corpus --text text.txt --paragraphs --list | head -3 | cut -f1 > held.txt && nk-lm -q corpus --text text.txt --paragraphs --vocab 300 --exclude held.txt -o excl.h5 && test "$('"$PY"' -c "import h5py; print(len(h5py.File(\"excl.h5\")[\"names\"]))")" = 77'
check "tokenizer alone" nk-lm -q tokenizer --text text.txt --vocab 280 -o tok.h5
check "corpus cut with a given tokenizer" nk-lm -q corpus --text text.txt --tokenizer tok.h5 -o corpus2.h5
check "train causal 40 steps with a TSV log" nk-lm -q train --corpus corpus.h5 $SIZES --steps 40 --lr 1e-2 --log train.tsv --log-every 5 --eval-every 20 --seed 1 -o causal.h5
check "the training loss falls by a third" $PY -c "
import csv; rows = list(csv.DictReader(open('train.tsv'), delimiter='\t'))
first, last = float(rows[0]['loss']), float(rows[-1]['loss']); print(first, last); assert last < 0.67 * first"
check "checkpoints at step 20 and at the end" nk-lm -q train --corpus corpus.h5 $SIZES --steps 40 --lr 1e-2 --seed 1 --checkpoint end.ckpt --checkpoint-every 20 -o full.h5
check "the same seed and options give the same weights" $PY -c "
import h5py, numpy as np
a, b = h5py.File('causal.h5'), h5py.File('full.h5')
assert all(np.array_equal(a['params'][n][()], b['params'][n][()]) for n in a['params'])"
check "resume from a finished checkpoint needs more --steps" sh -c "! nk-lm -q train --corpus corpus.h5 --resume end.ckpt --steps 40 -o again.h5 2>/dev/null"
check "a run paused at step 20 of 40 (--stop-at)" nk-lm -q train --corpus corpus.h5 $SIZES --steps 40 --stop-at 20 --lr 1e-2 --seed 1 --checkpoint int.ckpt -o paused.h5
check "resume continues to 40" nk-lm -q train --corpus corpus.h5 --resume int.ckpt --steps 40 --lr 1e-2 $SIZES -o resumed.h5
check "resumed weights equal the uninterrupted run's bit for bit" $PY -c "
import h5py, numpy as np
a, b = h5py.File('causal.h5'), h5py.File('resumed.h5')
names = list(a['params'])
bad = [n for n in names if not np.array_equal(a['params'][n][()], b['params'][n][()])]
assert not bad, bad"
check "info names the mode and sizes" sh -c 'nk-lm info -m causal.h5 | grep -q "^mode *causal" && nk-lm info -m causal.h5 | grep -q "^layers *2"'
check "generate from text prompts on stdin" sh -c 'printf "The cat\nPaper 3:\n" | nk-lm -q generate -m causal.h5 --max-new 12 --seed 2 > gen.txt && test "$(wc -l < gen.txt)" -ge 2'
check "same seed, same text" sh -c 'printf "The cat\nPaper 3:\n" | nk-lm -q generate -m causal.h5 --max-new 12 --seed 2 | cmp -s - gen.txt'
$PY -c "open('odd.txt', 'wb').write(bytes([97, 92, 34, 255, 98, 10]))"  # a \ " (invalid byte) b
check "--jsonl: one JSON object per prompt, the same text; quotes escaped, invalid UTF-8 as U+FFFD" sh -c "printf 'The cat\nPaper 3:\n' | nk-lm -q generate -m causal.h5 --max-new 12 --seed 2 --jsonl > gen.jsonl && nk-lm -q generate -m causal.h5 --prompts odd.txt --max-new 2 --jsonl > odd.jsonl && $PY $NK_SOURCE/tests/cli/nk-lm.jsonl.py gen.jsonl gen.txt odd.jsonl"
$PY -c "
import h5py, numpy as np
bos = int(h5py.File('causal.h5').attrs['vocab']) - 4
with h5py.File('ids.h5', 'w') as f: f['tokens'] = np.array([[bos, 10, 20, 30, 40], [bos, 50, 60, 70, 80], [bos, 1, 2, 3, 4]], dtype=np.int32)"
check "generate --token-ids --greedy -o" nk-lm -q generate -m causal.h5 --token-ids ids.h5 --max-new 7 --greedy --batch 2 -o gen.h5
check "/tokens [B, T+N]: the prompt, then the continuation, -1 after EOS" $PY -c "
import h5py, numpy as np
t = h5py.File('gen.h5')['tokens'][()]; ids = h5py.File('ids.h5')['tokens'][()]
assert t.shape == (3, 12), t.shape
assert (t[:, :5] == ids).all()
eos = int(h5py.File('causal.h5').attrs['vocab']) - 3
for row in t:
    c = list(row[5:])
    if eos in c: assert all(x == -1 for x in c[c.index(eos) + 1:])
    else: assert min(c) >= 0"
check "generate --ignore-eos: exactly --max-new tokens each, the same greedy tokens up to an EOS" sh -c "nk-lm -q generate -m causal.h5 --token-ids ids.h5 --max-new 7 --greedy --ignore-eos -o geneos.h5 && $PY -c \"
import h5py, numpy as np
a, b = h5py.File('gen.h5')['tokens'][()], h5py.File('geneos.h5')['tokens'][()]
assert b.shape == (3, 12) and (b >= 0).all()
assert ((a == b) | (a == -1)).all()\""
check "score --token-ids --logits --top-k" nk-lm -q score -m causal.h5 --token-ids gen.h5 --logits --top-k 5 -o score.h5
check "logprob = log_softmax(logits[t-1])[token t] (numpy), NaN at t = 0; top-k = the 5 largest" $PY -c "
import h5py, numpy as np
f = h5py.File('score.h5'); tok, lp, z = f['tokens'][()], f['logprob'][()], f['logits'][()].astype(np.float64)
assert np.isnan(lp[:, 0]).all()
for b in range(tok.shape[0]):
    for t in range(1, tok.shape[1]):
        if tok[b, t] < 0: assert np.isnan(lp[b, t]); continue
        row = z[b, t - 1]; ref = row[tok[b, t]] - (row.max() + np.log(np.exp(row - row.max()).sum()))
        assert abs(ref - lp[b, t]) < 1e-4, (b, t, ref, lp[b, t])
ids = f['topk/ids'][()]
for b in range(tok.shape[0]):
    for t in range(tok.shape[1]):
        if tok[b, t] < 0: continue
        assert set(ids[b, t]) == set(np.argsort(-z[b, t], kind='stable')[:5])
assert f.attrs['perplexity'] > 1"
check "score --text gives bits per byte" sh -c "nk-lm -q score -m causal.h5 --text text.txt -o st.h5 && $PY -c \"import h5py; a = h5py.File('st.h5').attrs; assert 0 < a['bits_per_byte'] < 8, a['bits_per_byte']\""
check "score --corpus validation split, sharded 0/2 and 1/2 add up" sh -c "nk-lm -q score -m causal.h5 --corpus corpus.h5 -o s0.h5 --shard 0/2 && nk-lm -q score -m causal.h5 --corpus corpus.h5 -o s1.h5 --shard 1/2 && nk-lm -q score -m causal.h5 --corpus corpus.h5 -o sall.h5 && $PY -c \"
import h5py
a, b, c = (h5py.File(x).attrs for x in ('s0.h5', 's1.h5', 'sall.h5'))
assert abs(a['nats'] + b['nats'] - c['nats']) < 1e-3 * c['nats'] and a['bytes'] + b['bytes'] == c['bytes']\""
check "train with multi-head latent attention (--attention mla, d_c 32, d_R 4)" nk-lm -q train --corpus corpus.h5 $SIZES --attention mla --kv-rank 32 --rope-dim 4 --head-dim 12 --steps 20 --lr 1e-2 --seed 1 -o mla.h5
check "info names MLA and its widths" sh -c 'nk-lm info -m mla.h5 | grep -q "multi-head latent attention" && nk-lm info -m mla.h5 | grep -q "kv_rank (d_c) 32, rope_dim (d_R) 4, nope 8"'
check "an mla model generates (its KV cache) and scores" sh -c 'nk-lm -q generate -m mla.h5 --token-ids ids.h5 --max-new 8 --seed 1 -o mg.h5 && nk-lm -q score -m mla.h5 --token-ids ids.h5 -o ms.h5'
expect_fail "export of an mla model: exit 2" 2 "not a Llama" nk-lm export -m mla.h5 -o mla_hf
check "long-context sparse continued pretraining: --init with --context, --rope-theta, --attention sparse-gqa" nk-lm -q train --corpus corpus.h5 --init causal.h5 --context 64 --rope-theta 50000 --attention sparse-gqa --sparse-block 4 --sparse-init 1 --sparse-local 2 --sparse-topk 3 --batch 2 --steps 6 --warmup 2 --lr 1e-3 --seed 1 -o sparse.h5
check "info shows the selector, the new context and RoPE base" sh -c 'nk-lm info -m sparse.h5 | grep -q "block 4, init 1, local 2, top-3" && nk-lm info -m sparse.h5 | grep -q "^context *64" && nk-lm info -m sparse.h5 | grep -q "^rope_theta *50000"'
check "the sparse model's file: attention sparse-gqa and its selector attributes" $PY -c "
import h5py
a = h5py.File('sparse.h5').attrs
assert a['attention'] == 'sparse-gqa' and (a['sparse_block'], a['sparse_init_blocks'], a['sparse_local_blocks'], a['sparse_topk']) == (4, 1, 2, 3), dict(a)"
check "a sparse model generates (sparse cached decoding) and scores" sh -c 'nk-lm -q generate -m sparse.h5 --token-ids ids.h5 --max-new 8 --seed 1 -o sg.h5 && nk-lm -q score -m sparse.h5 --token-ids ids.h5 -o ss.h5'
expect_fail "export of a sparse-gqa model: exit 2" 2 "sparse-gqa" nk-lm export -m sparse.h5 -o sparse_hf
expect_fail "sparse-gqa for a diffusion model: exit 2" 2 "causal gqa" nk-lm train --corpus corpus.h5 $SIZES --mode diffusion --attention sparse-gqa --steps 1 -o x.h5
expect_fail "--init of an mla model cannot become sparse-gqa: exit 2" 2 "only gqa <-> sparse-gqa" nk-lm train --corpus corpus.h5 --init mla.h5 --attention sparse-gqa --steps 1 -o x.h5
check "a sparse model file whose block is 0" $PY -c "
import h5py, shutil
shutil.copy('sparse.h5', 'badsparse.h5'); h5py.File('badsparse.h5', 'r+').attrs['sparse_block'] = 0"
expect_fail "a sparse block of 0 in the file: exit 3 naming it" 3 "sparse block" nk-lm info -m badsparse.h5
check "capture --corpus --stream --max-rows 2: whole context windows of the documents concatenated" sh -c "nk-lm -q capture -m causal.h5 --corpus corpus.h5 --stream --max-rows 2 -o capst.h5 && $PY -c \"
import h5py, numpy as np
c = h5py.File('corpus.h5'); tok, off, split = c['tokens'][...], c['doc_offsets'][...], c['split'][...]
eos = int(h5py.File('causal.h5').attrs['vocab']) - 3
stream = np.concatenate([np.append(tok[off[d]:off[d + 1]], eos) for d in range(len(split)) if split[d] == 1])
f = h5py.File('capst.h5'); o = f['capture/offsets'][...]
assert list(o) == [0, 32, 64], o
assert (f['capture/tokens'][...] == stream[:64]).all() and f['capture/layer_00/q'].shape[1] == 64\""
check "train diffusion (bf16 output)" nk-lm -q train --corpus corpus.h5 $SIZES --mode diffusion --steps 10 --dtype bfloat16 -o diff.h5
check "info says diffusion, bfloat16" sh -c 'nk-lm info -m diff.h5 | grep -q "^mode *diffusion" && nk-lm info -m diff.h5 | grep -q "^weights *bfloat16"'
check "diffusion generate: 2 blocks of 8, 8 steps, seeded" sh -c 'nk-lm -q generate -m diff.h5 --token-ids ids.h5 --max-new 16 --block 8 --steps 8 --seed 4 -o d1.h5 && nk-lm -q generate -m diff.h5 --token-ids ids.h5 --max-new 16 --block 8 --steps 8 --seed 4 -o d2.h5 && '"$PY"' -c "
import h5py, numpy as np
a, b = h5py.File(\"d1.h5\")[\"tokens\"][()], h5py.File(\"d2.h5\")[\"tokens\"][()]
mask = int(h5py.File(\"diff.h5\").attrs[\"vocab\"]) - 2
assert a.shape == (3, 21) and (a == b).all() and (a[:, 5:] != mask).all()"'

check "--sparse-policy (Step-dLLM in every layer) at sparsity 0, and dense: the plain sampler's tokens" sh -c 'for p in step once-uniform dense; do nk-lm -q generate -m diff.h5 --token-ids ids.h5 --max-new 16 --block 8 --steps 8 --seed 4 --sparse-policy $p --sparsity 0 --anchor-every 3 -o ds-$p.h5 || exit 1; done && '"$PY"' -c "
import h5py, numpy as np
a = h5py.File(\"d1.h5\")[\"tokens\"][()]
for p in (\"step\", \"once-uniform\", \"dense\"):
    f = h5py.File(\"ds-%s.h5\" % p); assert (f[\"tokens\"][()] == a).all(), p
    assert f.attrs[\"density\"] == 1.0 and f.attrs[\"sparse_policy\"] == p and f.attrs[\"layer_steps\"] == 3 * 8 * 2
assert h5py.File(\"ds-step.h5\").attrs[\"anchors\"] == 3 * 3 * 2 and h5py.File(\"ds-dense.h5\").attrs[\"anchors\"] == 0"'
check "--sparse-policy step at sparsity 0.25 reads 3 of each head's 4 blocks (2 of 16 tokens), anchoring every 4 steps" sh -c 'nk-lm -q generate -m diff.h5 --token-ids ids.h5 --max-new 16 --block 8 --steps 8 --seed 4 --sparse-policy step --sparsity 0.25 --sparse-block 16 --anchor-every 4 --drift 0 -o ds.h5 && '"$PY"' -c "
import h5py
f = h5py.File(\"ds.h5\"); assert f.attrs[\"density\"] == 0.75 and f.attrs[\"anchors\"] == 3 * 2 * 2, dict(f.attrs)
assert f[\"tokens\"].shape == (3, 21)"'
check "--teacher-forced: the model's own tokens, the policy compared beside them (agreement 1 at sparsity 0)" sh -c 'nk-lm -q generate -m diff.h5 --token-ids ids.h5 --max-new 16 --block 8 --steps 8 --seed 4 --sparse-policy step --sparsity 0 --teacher-forced -o tf0.h5 && nk-lm -q generate -m diff.h5 --token-ids ids.h5 --max-new 16 --block 8 --steps 8 --seed 4 --sparse-policy step --sparsity 0.25 --sparse-block 16 --teacher-forced -o tf1.h5 && '"$PY"' -c "
import h5py
a = h5py.File(\"d1.h5\")[\"tokens\"][()]
f, g = h5py.File(\"tf0.h5\"), h5py.File(\"tf1.h5\")
assert (f[\"tokens\"][()] == a).all() and (g[\"tokens\"][()] == a).all()
assert f.attrs[\"agreement\"] == 1.0 and f.attrs[\"kl_per_prediction\"] < 1e-9
assert f.attrs[\"predictions\"] == g.attrs[\"predictions\"] == 3 * 2 * (8 + 6 + 4 + 2) and g.attrs[\"kl_per_prediction\"] > 0"'
check "--reference: forced along its own greedy answer, every prediction right, the same tokens" sh -c 'nk-lm -q generate -m diff.h5 --token-ids ids.h5 --max-new 16 --block 8 --steps 8 --greedy -o dref.h5 && nk-lm -q generate -m diff.h5 --token-ids dref.h5 --reference --max-new 16 --block 8 --steps 8 --greedy --sparse-policy step --sparsity 0 -o dref2.h5 && h5diff -q dref.h5 dref2.h5 /tokens /tokens && '"$PY"' -c "
import h5py
a = h5py.File(\"dref2.h5\").attrs; assert a[\"reference_accuracy\"] == 1.0 and a[\"reference_tokens\"] == 3 * 16, dict(a)"'
expect_fail "--reference with an answer shorter than --max-new: exit 3 naming /tokens" 3 "/tokens.*--max-new 24" nk-lm generate -m diff.h5 --token-ids dref.h5 --reference --max-new 24 --block 8 --steps 8 -o x.h5
expect_fail "--reference on a causal model: exit 2" 2 "diffusion model" nk-lm generate -m causal.h5 --token-ids ids.h5 --reference --max-new 4 -o x.h5
expect_fail "--sparse-policy for a causal model: exit 2" 2 "diffusion model" nk-lm generate -m causal.h5 --token-ids ids.h5 --max-new 4 --sparse-policy step -o x.h5
expect_fail "--sparsity without --sparse-policy: exit 2" 2 "sparse-policy" nk-lm generate -m diff.h5 --token-ids ids.h5 --max-new 16 --sparsity 0.5 -o x.h5
expect_fail "a sparsity the block grid cannot hold: exit 2, no output" 2 "diagonal" nk-lm generate -m diff.h5 --token-ids ids.h5 --max-new 16 --block 8 --steps 8 --sparse-policy step --sparsity 0.9 -o x.h5
check "no partial output after the refusals" test ! -e x.h5
# Capture for other tools: the hooks' values recomputed in numpy, and the
# files read by dllm-sparse and louver-index as they are.
echo "The cat sat on the mat" > prompt.txt
check "capture a causal model's prompt, with a louver-index key file" nk-lm -q capture -m causal.h5 --text prompt.txt -o cap.h5 --louver kv.h5 --louver-layer 1 --louver-queries 4
check "capture: resid 0 = embedding rows; attn_in = RMSNorm; layer 0's k = RoPE(attn_in Wk^T) (numpy)" $PY -c "
import h5py, numpy as np
m, c = h5py.File('causal.h5'), h5py.File('cap.h5')
P = {n: m['params'][n][()].astype(np.float64) for n in m['params']}
tok = c['capture/tokens'][()]; x = P['model.embed_tokens.weight'][tok]
assert np.allclose(c['capture/layer_00/resid'][()], x, atol=1e-6)
a = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5) * P['model.layers.0.input_layernorm.weight']
assert np.allclose(c['capture/layer_00/attn_in'][()], a, atol=1e-4)
hd = int(c.attrs['head_dim']); G = int(c.attrs['kv_heads']); T = len(tok)
k = (a @ P['model.layers.0.self_attn.k_proj.weight'].T).reshape(T, G, hd)
inv = float(c.attrs['rope_theta']) ** (-np.arange(0, hd, 2) / hd); ang = np.arange(T)[:, None] * inv[None]
cos, sin = np.cos(np.concatenate([ang, ang], 1))[:, None], np.sin(np.concatenate([ang, ang], 1))[:, None]
rot = np.concatenate([-k[..., hd // 2:], k[..., :hd // 2]], -1)
ref = (k * cos + rot * sin).transpose(1, 0, 2)
assert np.abs(c['capture/layer_00/k'][()] - ref).max() < 1e-4
assert c['capture/layer_02/resid'].shape == (T, 32)"
check "louver-index builds and queries the captured keys" sh -c 'louver-index -q build -i kv.h5 --subspaces 4 -o idx.h5 && louver-index -q query -i idx.h5 --queries kv.h5 --topk-oracle 3 -o hits.h5'
# Louver inside the causal model: decoding through a key index.
check "--key-index dense and louver below every score: the model's own tokens" sh -c 'nk-lm -q generate -m causal.h5 --prompts prompt.txt --max-new 20 --greedy -o kown.h5 && for m in dense "louver --threshold -1e30"; do nk-lm -q generate -m causal.h5 --prompts prompt.txt --max-new 20 --greedy --key-index $m -o kidx.h5 && h5diff -q kown.h5 kidx.h5 /tokens /tokens || exit 1; done'
check "--divergence: /kl [1, 20], the model's own decoding at float noise; Louver --mass 0.9 leaves out at most 0.1 of the mass" sh -c 'nk-lm -q generate -m causal.h5 --prompts prompt.txt --max-new 20 --divergence -o kdiv.h5 && nk-lm -q generate -m causal.h5 --prompts prompt.txt --max-new 20 --key-index louver --mass 0.9 --mass-sample 4 --measure-missed --divergence -o kmass.h5 && '"$PY"' -c "
import h5py, numpy as np
a, b = h5py.File(\"kdiv.h5\"), h5py.File(\"kmass.h5\")
assert a[\"kl\"].shape == (1, 20) and a.attrs[\"max_kl\"] < 1e-5 and a.attrs[\"spikes\"] == 0, dict(a.attrs)
assert b.attrs[\"missed_max\"] <= 0.1 and 0 < b.attrs[\"density\"] <= 1, dict(b.attrs)
assert np.isclose(b[\"kl\"][()].max(), b.attrs[\"max_kl\"]) and b.attrs[\"key_index\"] == \"louver\"
assert b.attrs[\"queries\"] == 19 * 2 * 4 and b.attrs[\"ms_per_token\"] > 0"'
check "--key-index quest and ivf read about their budget; a large threshold reads fewer keys" sh -c 'for m in quest ivf; do nk-lm -q generate -m causal.h5 --prompts prompt.txt --max-new 20 --key-index $m --budget 0.3 --page-size 4 -o k$m.h5 || exit 1; done && nk-lm -q generate -m causal.h5 --prompts prompt.txt --max-new 20 --key-index louver --threshold 0.5 -o kthr.h5 && '"$PY"' -c "
import h5py
for m in (\"quest\", \"ivf\"):
    d = h5py.File(\"k%s.h5\" % m).attrs[\"density\"]; assert 0.25 < d < 0.8, (m, d)
assert h5py.File(\"kthr.h5\").attrs[\"density\"] < 1"'
expect_fail "--key-index on a diffusion model: exit 2" 2 "causal model" nk-lm generate -m diff.h5 --token-ids ids.h5 --max-new 16 --key-index louver --mass 0.9 -o x.h5
expect_fail "--key-index louver without a threshold: exit 2" 2 "exactly one of --threshold, --mass and --topk-oracle" nk-lm generate -m causal.h5 --prompts prompt.txt --max-new 4 --key-index louver -o x.h5
expect_fail "--mass with quest: exit 2" 2 "key-index louver" nk-lm generate -m causal.h5 --prompts prompt.txt --max-new 4 --key-index quest --mass 0.9 -o x.h5
expect_fail "--threshold without --key-index: exit 2" 2 "key-index" nk-lm generate -m causal.h5 --prompts prompt.txt --max-new 4 --threshold 1 -o x.h5
expect_fail "--divergence on a diffusion model: exit 2" 2 "causal model" nk-lm generate -m diff.h5 --token-ids ids.h5 --max-new 16 --divergence -o x.h5
# A capture from a model of another head_dim (or other head counts) than the index's.
check "a causal model with head_dim 4 and 3 KV heads" nk-lm -q train --corpus corpus.h5 --layers 2 --d-model 24 --heads 6 --kv-heads 3 --head-dim 4 --d-ff 32 --context 32 --batch 2 --steps 2 --seed 1 -o hd4.h5
check "its capture" nk-lm -q capture -m hd4.h5 --text prompt.txt -o caphd4.h5 --louver kvhd4.h5 --louver-layer 1 --louver-queries 4
expect_fail "queries of head_dim 4 against an index of head_dim 8: exit 3, both shapes named" 3 "d = 4 but the index has d = 8" louver-index query -i idx.h5 --queries kvhd4.h5 --topk-oracle 3 -o x.h5
check "an index of the head_dim-4 model's keys" louver-index -q build -i kvhd4.h5 --subspaces 2 -o idxhd4.h5
check "a third model: 8 query heads, 2 KV heads, head_dim 4, and its capture" sh -c 'nk-lm -q train --corpus corpus.h5 --layers 2 --d-model 32 --heads 8 --kv-heads 2 --head-dim 4 --d-ff 32 --context 32 --batch 2 --steps 2 --seed 1 -o hd4b.h5 && nk-lm -q capture -m hd4b.h5 --text prompt.txt -o caphd4b.h5 --louver kvhd4b.h5 --louver-layer 1 --louver-queries 4'
expect_fail "its 8 query heads against the 3 KV heads' index: exit 3, both counts named" 3 "8 query head.*3" louver-index query -i idxhd4.h5 --queries kvhd4b.h5 --topk-oracle 3 -o x.h5
check "capture a diffusion trajectory (2 blocks of 8, 8 steps)" nk-lm -q capture -m diff.h5 --text prompt.txt --trajectory traj.h5 --max-new 16 --steps 8 --block 8 -o capd.h5
check "dllm-sparse plans and evaluates the captured trajectory" sh -c 'dllm-sparse -q plan -i traj.h5 --sparsity 0.5 --block 16 -o plan.h5 && dllm-sparse -q eval -i traj.h5 --plan plan.h5 -o ev.h5'
check "the trajectory has every layer at every step" $PY -c "
import h5py
f = h5py.File('traj.h5'); assert sorted(f['layers']) == ['00', '01'] and len(f['layers/00/steps']) == 8
assert f['layers/01/steps/007/q'].shape[1] == f.attrs['prompt_length'] + 16"
check "capture --corpus, the validation split whole and in 2 shards" sh -c 'nk-lm -q capture -m causal.h5 --corpus corpus.h5 --layers 0,1 -o cc.h5 && nk-lm -q capture -m causal.h5 --corpus corpus.h5 --layers 0,1 --shard 0/2 -o cc0.h5 && nk-lm -q capture -m causal.h5 --corpus corpus.h5 --layers 0,1 --shard 1/2 -o cc1.h5'
$PY -c "
import h5py, numpy as np
c = h5py.File('cc.h5'); off = c['capture/offsets'][()]
with h5py.File('row.h5', 'w') as f: f['tokens'] = c['capture/tokens'][off[1]:off[2]]"
check "the shards' rows add up to the whole; every row's capture equals that row captured alone" sh -c "nk-lm -q capture -m causal.h5 --token-ids row.h5 --layers 0,1 -o crow.h5 && $PY -c \"
import h5py, numpy as np
c, a, b, r = (h5py.File(n) for n in ('cc.h5', 'cc0.h5', 'cc1.h5', 'crow.h5'))
off, tok = c['capture/offsets'][()], c['capture/tokens'][()]
R = int(c.attrs['rows']); assert R == len(off) - 1 >= 2 and off[-1] == len(tok)
bos = int(h5py.File('causal.h5').attrs['vocab']) - 4
assert (tok[off[:-1]] == bos).all() and c.attrs['split'] == 'validation'
assert np.array_equal(np.concatenate([a['capture/tokens'][()], b['capture/tokens'][()]]), tok)
for k in ('resid', 'q', 'v'):
    ax = 0 if k == 'resid' else 1
    assert np.array_equal(np.concatenate([a[f'capture/layer_01/{k}'][()], b[f'capture/layer_01/{k}'][()]], ax), c[f'capture/layer_01/{k}'][()])
s = slice(off[1], off[2])
assert np.allclose(c['capture/layer_01/resid'][s], r['capture/layer_01/resid'][()], atol=1e-6)
assert np.allclose(c['capture/layer_01/k'][:, s], r['capture/layer_01/k'][()], atol=1e-6)
assert 'layer_02' not in c['capture']\""
expect_fail "capture --corpus with --trajectory: exit 2" 2 "corpus" nk-lm capture -m causal.h5 --corpus corpus.h5 --trajectory t.h5 -o x.h5

# Bad input: one error line, the documented exit code, no output file left.
expect_fail "a corpus given as the model: exit 3" 3 "nk_schema" nk-lm generate -m corpus.h5 --token-ids ids.h5 -o bad.h5
head -c 3000 causal.h5 > trunc.h5
expect_fail "a truncated model: exit 3" 3 "trunc.h5" nk-lm info -m trunc.h5
$PY -c "
import h5py, numpy as np, shutil
shutil.copy('causal.h5', 'nan.h5')
with h5py.File('nan.h5', 'a') as f:
    d = f['params/model.norm.weight']; x = d[()]; x[0] = np.nan; d[...] = x
with h5py.File('big.h5', 'w') as f: f['tokens'] = np.zeros((1, 33), dtype=np.int32)
with h5py.File('oov.h5', 'w') as f: f['tokens'] = np.array([[1, 2, 300]], dtype=np.int32)"
expect_fail "a NaN weight: exit 3 naming the tensor" 3 "model.norm.weight" nk-lm score -m nan.h5 --token-ids ids.h5 -o bad.h5
expect_fail "rows longer than the context: exit 3" 3 "context" nk-lm score -m causal.h5 --token-ids big.h5 -o bad.h5
expect_fail "a token outside the vocabulary: exit 3" 3 "vocabulary" nk-lm generate -m causal.h5 --token-ids oov.h5 -o bad.h5
expect_fail "prompt + max-new past the context: exit 2" 2 "context" nk-lm generate -m causal.h5 --token-ids ids.h5 --max-new 30 -o bad.h5
expect_fail "no prompts on stdin: exit 3" 3 "no prompts" sh -c 'nk-lm generate -m causal.h5 < /dev/null'
check "score of a diffusion model: LLaDA's bound on each row's answer after the file's /prompt_lengths, seeded" sh -c 'nk-lm -q score -m diff.h5 --token-ids d1.h5 --samples 8 --seed 2 -o dsc.h5 && nk-lm -q score -m diff.h5 --token-ids d1.h5 --samples 8 --seed 2 --batch 3 -o dsc2.h5 && '"$PY"' -c "
import h5py, numpy as np
f, g, t = h5py.File(\"dsc.h5\"), h5py.File(\"dsc2.h5\"), h5py.File(\"d1.h5\")[\"tokens\"][()]
n = (t >= 0).sum(1)
assert (f[\"prompt_lengths\"][()] == 5).all() and (f[\"answer_tokens\"][()] == n - 5).all()
nll = f[\"nll\"][()]; assert np.isfinite(nll).all() and (nll > 0).all() and np.allclose(nll, g[\"nll\"][()], rtol=1e-5)
assert abs(np.exp(nll.sum() / (n - 5).sum()) - f.attrs[\"perplexity\"]) < 1e-6 * f.attrs[\"perplexity\"]"'
check "a generation from prompts of two lengths scores each row as its prompt joined to its continuation" sh -c 'printf "The cat sat on\nA dog\n" > two.txt && nk-lm -q generate -m diff.h5 --prompts two.txt --max-new 16 --block 8 --steps 8 --ignore-eos -o dv.h5 && nk-lm -q score -m diff.h5 --token-ids dv.h5 --samples 2 -o dvs.h5 && '"$PY"' -c "
import h5py, numpy as np
g, f = h5py.File(\"dv.h5\"), h5py.File(\"dvs.h5\")
p = g[\"prompt_lengths\"][()]; t = g[\"tokens\"][()]; T = p.max()
assert p[0] > p[1] and (f[\"prompt_lengths\"][()] == p).all() and (f[\"answer_tokens\"][()] == 16).all()
s = f[\"tokens\"][()]
for b in range(2): assert (s[b, :p[b] + 16] == np.concatenate([t[b, :p[b]], t[b, T:]])).all()"'
expect_fail "--logits of a diffusion model: exit 2" 2 "diffusion" nk-lm score -m diff.h5 --token-ids ids.h5 --logits -o bad.h5
expect_fail "a diffusion score with nothing after the prompt: exit 3" 3 "ids.h5.*none after its prompt of 5" nk-lm score -m diff.h5 --token-ids ids.h5 --prompt-length 5 -o bad.h5
expect_fail "--init and --resume together: exit 2" 2 "exclude" nk-lm train --corpus corpus.h5 --init causal.h5 --resume end.ckpt -o bad.h5
$PY -c "print('word ' * 40)" > long.txt
expect_fail "capture of a text past the context: exit 3" 3 "context" nk-lm capture -m causal.h5 --text long.txt -o bad.h5
expect_fail "a trajectory needs a diffusion model: exit 2" 2 "diffusion" nk-lm capture -m causal.h5 --text prompt.txt --trajectory bad.h5
check "no partial output anywhere" sh -c '! ls bad.h5 2>/dev/null'
no_temp_files "no temp files" "$WORK"
finish
