# nk-lm.hf.sh - export to and import from Hugging Face Llama folders on a
# tiny trained model (seconds): the import scores exactly as the original,
# a second export is byte-identical, the safetensors read with numpy + json
# equal the model's /params, and bad input (exit 3, one error line, no output).
. "$(dirname "$0")/lib.sh"

for i in $(seq 1 30); do
  echo "The cat sat on the mat number $i. A dog ran to the park and back again."
  echo
done > text.txt
SIZES="--layers 2 --d-model 32 --heads 4 --kv-heads 2 --d-ff 64 --context 32 --batch 4 --warmup 5"

check "corpus and a 10-step untied causal model" sh -c "nk-lm -q corpus --text text.txt --paragraphs --vocab 300 -o corpus.h5 && nk-lm -q train --corpus corpus.h5 $SIZES --untied --steps 10 --seed 1 -o model.h5"
check "export to a new folder" nk-lm -q export -m model.h5 -o hf
check "the folder has config.json, model.safetensors, tokenizer.json, tokenizer_config.json" \
  test -s hf/config.json -a -s hf/model.safetensors -a -s hf/tokenizer.json -a -s hf/tokenizer_config.json
check "import the folder back (--format safetensors is the default)" sh -c 'nk-lm -q export -m model.h5 -o hf_fmt --format safetensors && nk-lm -q import hf -o back.h5'
check "the import keeps the tokenizer" sh -c 'nk-lm info -m back.h5 | grep -q "^tokenizer *byte-level BPE"'
$PY -c "
import h5py, numpy as np
bos = int(h5py.File('model.h5').attrs['vocab']) - 4
with h5py.File('ids.h5', 'w') as f: f['tokens'] = np.array([[bos, 10, 20, 30, 40, 50], [bos, 1, 2, 3, -1, -1]], dtype=np.int32)"
check "score --token-ids through the model and through its import" sh -c 'nk-lm -q score -m model.h5 --token-ids ids.h5 -o s1.h5 && nk-lm -q score -m back.h5 --token-ids ids.h5 -o s2.h5'
check "identical /logprob" $PY -c "
import h5py, numpy as np
a, b = h5py.File('s1.h5')['logprob'][()], h5py.File('s2.h5')['logprob'][()]
assert np.array_equal(a, b, equal_nan=True) and np.isfinite(a[:, 1:4]).all()"
check "score --text through both: identical (the tokenizer came back)" sh -c "nk-lm -q score -m model.h5 --text text.txt -o t1.h5 && nk-lm -q score -m back.h5 --text text.txt -o t2.h5 && $PY -c \"
import h5py, numpy as np
a, b = h5py.File('t1.h5'), h5py.File('t2.h5')
assert np.array_equal(a['tokens'][()], b['tokens'][()]) and np.array_equal(a['logprob'][()], b['logprob'][()], equal_nan=True)\""
check "a second export, of the import" nk-lm -q export -m back.h5 -o hf2
same "byte-identical model.safetensors" hf/model.safetensors hf2/model.safetensors
same "byte-identical config.json" hf/config.json hf2/config.json
same "byte-identical tokenizer.json" hf/tokenizer.json hf2/tokenizer.json
check "model.safetensors read with numpy + json: F32 tensors equal to the model's /params; config.json's sizes" $PY -c "
import h5py, json, struct, numpy as np
raw = open('hf/model.safetensors', 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]; header = json.loads(raw[8:8 + n]); data = raw[8 + n:]
assert n % 8 == 0 and header['__metadata__'] == {'format': 'pt'}
m = h5py.File('model.h5'); params = m['params']
names = sorted(k for k in header if k != '__metadata__')
assert names == sorted(params.keys()) and 'lm_head.weight' in names, names
for k in names:
    b, e = header[k]['data_offsets']
    x = np.frombuffer(data[b:e], '<f4').reshape(header[k]['shape'])
    assert header[k]['dtype'] == 'F32' and np.array_equal(x, params[k][()]), k
c = json.load(open('hf/config.json'))
assert c['architectures'] == ['LlamaForCausalLM'] and c['num_hidden_layers'] == 2 and c['hidden_size'] == 32
assert c['num_key_value_heads'] == 2 and c['vocab_size'] == m.attrs['vocab'] and c['tie_word_embeddings'] is False
assert c['max_position_embeddings'] == 32 and c['eos_token_id'] == c['vocab_size'] - 3"
check "import --dtype bfloat16" sh -c 'nk-lm -q import hf --dtype bfloat16 -o bf.h5 && nk-lm info -m bf.h5 | grep -q "^weights *bfloat16"'

# The same byte-level BPE in another id layout (ids permuted; specials <s> and </s> from config.json's ids, no
# MASK or PAD), the embedding and head rows permuted alike: the import maps ids both ways and scores the same
# text to the same log-probabilities.
$PY -c "
import json, struct, os, numpy as np
os.makedirs('perm', exist_ok=True)
t = json.load(open('hf/tokenizer.json', encoding='utf-8')); c = json.load(open('hf/config.json'))
V = c['vocab_size']; pi = np.random.default_rng(5).permutation(V)
t['model']['vocab'] = {k: int(pi[v]) for k, v in t['model']['vocab'].items()}
bos, eos = ([a for a in t['added_tokens'] if a['content'] == n][0] for n in ('<|bos|>', '<|eos|>'))
t['added_tokens'] = [dict(bos, id=int(pi[bos['id']]), content='<s>'), dict(eos, id=int(pi[eos['id']]), content='</s>')]
c['bos_token_id'], c['eos_token_id'], c['pad_token_id'] = int(pi[bos['id']]), int(pi[eos['id']]), None
json.dump(t, open('perm/tokenizer.json', 'w', encoding='utf-8')); json.dump(c, open('perm/config.json', 'w'))
raw = open('hf/model.safetensors', 'rb').read(); n = struct.unpack('<Q', raw[:8])[0]
header = json.loads(raw[8:8 + n]); data = raw[8 + n:]; out = b''; h2 = {}
for k in sorted(x for x in header if x != '__metadata__'):
    b0, e0 = header[k]['data_offsets']; x = np.frombuffer(data[b0:e0], '<f4').reshape(header[k]['shape']).copy()
    if k in ('model.embed_tokens.weight', 'lm_head.weight'):
        y = np.empty_like(x); y[pi] = x; x = y
    h2[k] = {'dtype': 'F32', 'shape': list(x.shape), 'data_offsets': [len(out), len(out) + x.nbytes]}; out += x.tobytes()
text = json.dumps(h2).encode(); text += b' ' * ((8 - len(text) % 8) % 8)
open('perm/model.safetensors', 'wb').write(struct.pack('<Q', len(text)) + text + out)
np.save('pi.npy', pi)"
check "import a byte-level BPE in another id layout" sh -c 'nk-lm import perm -o perm.h5 2> perm.log && grep -q "its own id layout" perm.log && nk-lm info -m perm.h5 | grep -q "^tokenizer *byte-level BPE"'
check "the same text scores the same, its tokens mapped through the permutation" sh -c "nk-lm -q score -m perm.h5 --text text.txt -o tp.h5 && $PY -c \"
import h5py, numpy as np
a, b, pi = h5py.File('t1.h5'), h5py.File('tp.h5'), np.load('pi.npy')
ta, tb = a['tokens'][()], b['tokens'][()]
bos_a = int(h5py.File('model.h5').attrs['vocab']) - 4
assert (ta[:, 0] == bos_a).all() and np.array_equal(tb[ta >= 0], pi[ta[ta >= 0]])
la, lb = a['logprob'][()], b['logprob'][()]
assert np.isfinite(la).any() and np.allclose(la, lb, atol=1e-4, equal_nan=True), np.nanmax(abs(la - lb))\""
check "export of the other layout and import again: the same tokenizer" sh -c "nk-lm -q export -m perm.h5 -o perm2 && nk-lm -q import perm2 -o perm2.h5 && nk-lm -q score -m perm2.h5 --text text.txt -o tp2.h5 && $PY -c \"
import h5py, numpy as np
assert np.array_equal(h5py.File('tp.h5')['tokens'][()], h5py.File('tp2.h5')['tokens'][()])\""
check "GGUF export of the other layout" nk-lm -q export -m perm.h5 --format gguf -o perm.gguf
mkdir noids && cp hf/model.safetensors hf/tokenizer.json noids/
$PY -c "
import json
c = json.load(open('hf/config.json'))
for k in ('bos_token_id', 'eos_token_id', 'pad_token_id'): c.pop(k)
json.dump(c, open('noids/config.json', 'w'))"
check "a config.json without token ids: the specials found by their texts" sh -c 'nk-lm -q import noids -o noids.h5 && nk-lm info -m noids.h5 | grep -q "^tokenizer *byte-level BPE, [0-9]* merges; BOS"'

# A tokenizer.json that is not in nk's layout: imported with a warning, token ids only.
mkdir foreign && cp hf/config.json hf/model.safetensors foreign/
$PY -c "
import json
t = json.load(open('hf/tokenizer.json', encoding='utf-8'))
t['pre_tokenizer']['add_prefix_space'] = True
json.dump(t, open('foreign/tokenizer.json', 'w'))"
check "a foreign tokenizer.json: a warning, and the model without a tokenizer" sh -c 'nk-lm import foreign -o notok.h5 2> warn.txt && grep -q "tokenizer not imported" warn.txt && nk-lm info -m notok.h5 | grep -q "^tokenizer *none"'

# Bad input: one error line, the documented exit code, no output left.
mkdir trunc && cp hf/config.json trunc/ && head -c 3000 hf/model.safetensors > trunc/model.safetensors
expect_fail "a truncated model.safetensors: exit 3" 3 "trunc/model.safetensors" nk-lm import trunc -o bad.h5
mkdir arch && cp hf/model.safetensors arch/
$PY -c "
import json
c = json.load(open('hf/config.json')); c['architectures'] = ['GPT2LMHeadModel']
json.dump(c, open('arch/config.json', 'w'))"
expect_fail "a foreign architecture: exit 3 naming config.json and the key" 3 "config.json.*architectures" nk-lm import arch -o bad.h5
expect_fail "a folder without config.json: exit 3" 3 "config.json" nk-lm import foreign/.. -o bad.h5
check "a diffusion model" nk-lm -q train --corpus corpus.h5 $SIZES --mode diffusion --steps 2 -o diff.h5
expect_fail "export of a diffusion model: exit 2" 2 "diffusion" nk-lm export -m diff.h5 -o diffhf
expect_fail "export --no-clobber over an export: exit 4" 4 "no-clobber" nk-lm export -m model.h5 -o hf --no-clobber
check "no partial output anywhere" sh -c '! ls bad.h5 diffhf/config.json 2>/dev/null'
no_temp_files "no temp files in the export folder" hf
no_temp_files "no temp files" "$WORK"
finish
