"""nk-lm: every verb that reads a file (tests/fuzz/fuzz.py)."""
import shlex

LM = "nk-lm -q --threads 1"
SHIPPED = "{src}/data/lm/causal.h5"
# 24 short paragraphs: a corpus of 24 documents (a few held out), vocabulary 270 (10 merges).
TEXT = ("for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo \"The cat sat on the mat number $i. A dog ran to the park.\"; "
        "echo; echo \"Paper $i: we train a small model on short sentences.\"; echo; done > {w}/text.txt")
CORPUS = LM + " corpus --text {w}/text.txt --paragraphs --vocab 270 --validation 0.3 -o {w}/corpus.h5"
# A tiny model: 2 layers of width 8, context 32 (a few thousand parameters; every verb runs in milliseconds).
SIZES = "--layers 2 --d-model 8 --heads 2 --kv-heads 1 --d-ff 16 --context 32 --batch 2 --warmup 1"
TRAIN = LM + " train --corpus {w}/corpus.h5 " + SIZES + " --steps 2 --seed 1"
TINY = [TEXT, CORPUS, TRAIN + " -o {w}/model.h5"]
DIFF = [TEXT, CORPUS, TRAIN + " --mode diffusion --dtype bfloat16 -o {w}/diff.h5"]


def py(code):
    """A setup step running Python code with the recipe's folder as argv[1] (braces kept from str.format)."""
    return "/usr/bin/python3 -c " + shlex.quote(code.replace("{", "{{").replace("}", "}}")) + " {w}"


# Token rows (BOS first, -1 pads) for a model file in the folder: ids.h5 [2, 6], one.h5 [1, 6].
IDS = py("import h5py, numpy as np, sys; w = sys.argv[1]\n"
         "bos = int(h5py.File(w + '/%s')['/'].attrs['vocab']) - 4\n"
         "h5py.File(w + '/ids.h5', 'w')['tokens'] = np.array([[bos, 10, 20, 30, 40, 50], [bos, 1, 2, 3, -1, -1]], np.int32)\n"
         "h5py.File(w + '/one.h5', 'w')['tokens'] = np.array([[bos, 84, 104, 101, 32, 99]], np.int32)")

# model.safetensors split into two shards with model.safetensors.index.json (the rest of the folder as it is).
SHARD = py("import json, struct, sys, os, shutil; w = sys.argv[1]; os.makedirs(w + '/sh')\n"
           "shutil.copy(w + '/hf/config.json', w + '/sh/config.json')\n"
           "raw = open(w + '/hf/model.safetensors', 'rb').read(); n = struct.unpack('<Q', raw[:8])[0]\n"
           "header = json.loads(raw[8:8 + n]); data = raw[8 + n:]\n"
           "names = sorted(k for k in header if k != '__metadata__'); wmap = {}\n"
           "for s, part in enumerate((names[:len(names) // 2], names[len(names) // 2:])):\n"
           "    fn = 'model-%05d-of-00002.safetensors' % (s + 1); out = b''; h = {'__metadata__': {'format': 'pt'}}\n"
           "    for k in part:\n"
           "        b0, e0 = header[k]['data_offsets']\n"
           "        h[k] = dict(header[k], data_offsets=[len(out), len(out) + e0 - b0]); out += data[b0:e0]; wmap[k] = fn\n"
           "    t = json.dumps(h).encode(); t += b' ' * ((8 - len(t) % 8) % 8)\n"
           "    open(w + '/sh/' + fn, 'wb').write(struct.pack('<Q', len(t)) + t + out)\n"
           "json.dump({'metadata': {'total_size': len(data)}, 'weight_map': wmap}, open(w + '/sh/model.safetensors.index.json', 'w'), indent=1)")

# The exported folder with its tokenizer's ids permuted (specials <s> </s> from config.json): imported, a model
# with a byte-bpe-mapped/1 tokenizer (/tokenizer/ids, /tokenizer/specials).
PERM = py("import json, struct, os, sys, numpy as np; w = sys.argv[1]; os.makedirs(w + '/perm')\n"
          "t = json.load(open(w + '/hf/tokenizer.json', encoding='utf-8')); c = json.load(open(w + '/hf/config.json'))\n"
          "V = c['vocab_size']; pi = np.random.default_rng(5).permutation(V)\n"
          "t['model']['vocab'] = {k: int(pi[v]) for k, v in t['model']['vocab'].items()}\n"
          "bos, eos = ([a for a in t['added_tokens'] if a['content'] == n][0] for n in ('<|bos|>', '<|eos|>'))\n"
          "t['added_tokens'] = [dict(bos, id=int(pi[bos['id']]), content='<s>'), dict(eos, id=int(pi[eos['id']]), content='</s>')]\n"
          "c['bos_token_id'], c['eos_token_id'], c['pad_token_id'] = int(pi[bos['id']]), int(pi[eos['id']]), None\n"
          "json.dump(t, open(w + '/perm/tokenizer.json', 'w', encoding='utf-8')); json.dump(c, open(w + '/perm/config.json', 'w'))\n"
          "raw = open(w + '/hf/model.safetensors', 'rb').read(); n = struct.unpack('<Q', raw[:8])[0]\n"
          "header = json.loads(raw[8:8 + n]); data = raw[8 + n:]; out = b''; h2 = {}\n"
          "for k in sorted(x for x in header if x != '__metadata__'):\n"
          "    b0, e0 = header[k]['data_offsets']; x = np.frombuffer(data[b0:e0], '<f4').reshape(header[k]['shape']).copy()\n"
          "    if k in ('model.embed_tokens.weight', 'lm_head.weight'):\n"
          "        y = np.empty_like(x); y[pi] = x; x = y\n"
          "    h2[k] = {'dtype': 'F32', 'shape': list(x.shape), 'data_offsets': [len(out), len(out) + x.nbytes]}; out += x.tobytes()\n"
          "t = json.dumps(h2).encode(); t += b' ' * ((8 - len(t) % 8) % 8)\n"
          "open(w + '/perm/model.safetensors', 'wb').write(struct.pack('<Q', len(t)) + t + out)")

# import reads a folder: the case copies each (possibly mutated) file into a fresh one (cp -r: a mutant may be a
# folder). model.safetensors is not HDF5, so it is marked "text": it gets the byte-level mutators and line edits.
HF_DIR = "rm -rf hf && mkdir hf && "

RECIPES = [
    # --- corpus and tokenizer
    {"tool": "nk-lm", "verb": "corpus --text",
     "setup": [TEXT],
     "inputs": {"text": "{w}/text.txt"}, "text": {"text": True},
     "run": LM + " corpus --text {text} --paragraphs --vocab 270 --validation 0.3 -o {out}"},
    {"tool": "nk-lm", "verb": "corpus --tokenizer",
     # --validation 0: one document (no --paragraphs), named by its path, which a validation share could hold out.
     "setup": [TEXT, LM + " tokenizer --text {w}/text.txt --vocab 270 --validation 0 -o {w}/tok.h5"],
     "inputs": {"tok": "{w}/tok.h5"},
     "run": LM + " corpus --text {w}/text.txt --paragraphs --tokenizer {tok} -o {out}"},
    {"tool": "nk-lm", "verb": "corpus --exclude",
     "setup": [TEXT, "nk-lm corpus --text {w}/text.txt --paragraphs --list | head -4 | cut -f1 > {w}/held.txt",
               "printf '# held out\\n' >> {w}/held.txt"],
     "inputs": {"names": "{w}/held.txt"}, "text": {"names": True},
     "run": LM + " corpus --text {w}/text.txt --paragraphs --vocab 270 --exclude {names} -o {out}"},
    {"tool": "nk-lm", "verb": "tokenizer --text",
     "setup": [TEXT],
     "inputs": {"text": "{w}/text.txt"}, "text": {"text": True},
     "run": LM + " tokenizer --text {text} --paragraphs --vocab 270 --validation 0.2 -o {out}"},
    # --- train
    {"tool": "nk-lm", "verb": "train --corpus",
     "setup": [TEXT, CORPUS],
     "inputs": {"corpus": "{w}/corpus.h5"},
     "run": LM + " train --corpus {corpus} " + SIZES + " --steps 2 --eval-every 1 --eval-batches 1 -o {out}"},
    {"tool": "nk-lm", "verb": "train --init",
     "setup": TINY,
     "inputs": {"init": "{w}/model.h5"},
     "run": LM + " train --corpus {w}/corpus.h5 --init {init} --steps 2 --batch 2 --warmup 1 -o {out}"},
    {"tool": "nk-lm", "verb": "train --resume",
     "setup": [TEXT, CORPUS, TRAIN.replace("--steps 2", "--steps 3 --stop-at 1") + " --checkpoint {w}/run.ckpt -o {w}/paused.h5"],
     "inputs": {"ckpt": "{w}/run.ckpt"},
     "run": LM + " train --corpus {w}/corpus.h5 --resume {ckpt} " + SIZES + " --steps 3 -o {out}"},
    # --- generate
    {"tool": "nk-lm", "verb": "generate --token-ids",
     "setup": TINY + [IDS % "model.h5"],
     "inputs": {"model": "{w}/model.h5", "ids": "{w}/ids.h5"},
     "run": LM + " generate -m {model} --token-ids {ids} --max-new 4 --greedy --batch 2 -o {out}"},
    {"tool": "nk-lm", "verb": "generate --prompts",
     "setup": ["printf 'The cat sat\\nPaper 3: we\\nA dog, 12 ran\\n' > {w}/prompts.txt"],
     "inputs": {"prompts": "{w}/prompts.txt"}, "text": {"prompts": True},
     "run": LM + " generate -m " + SHIPPED + " --prompts {prompts} --max-new 4 --seed 2 --jsonl"},
    {"tool": "nk-lm", "verb": "generate (diffusion, bfloat16)",
     "setup": DIFF + [IDS % "diff.h5"],
     "inputs": {"model": "{w}/diff.h5", "ids": "{w}/ids.h5"},
     "run": LM + " generate -m {model} --token-ids {ids} --max-new 4 --block 2 --steps 2 --seed 3 -o {out}"},
    {"tool": "nk-lm", "verb": "generate --config",
     "setup": TINY + ["printf 'threads = 1\\nquiet = true\\nseed = 4\\n[generate]\\nmax-new = 3\\ntop-k = 5\\ntop-p = 0.9\\n' > {w}/gen.toml",
                      "printf 'The cat\\nPaper\\n' > {w}/prompts.txt"],
     "inputs": {"config": "{w}/gen.toml"}, "text": {"config": True},
     "run": "nk-lm generate --config {config} -m {w}/model.h5 --prompts {w}/prompts.txt"},
    # --- score
    {"tool": "nk-lm", "verb": "score --token-ids",
     "setup": TINY + [IDS % "model.h5"],
     "inputs": {"model": "{w}/model.h5", "ids": "{w}/ids.h5"},
     "run": LM + " score -m {model} --token-ids {ids} --logits --top-k 3 -o {out}"},
    {"tool": "nk-lm", "verb": "score (diffusion: a generation's /prompt_lengths)",
     "setup": DIFF + [IDS % "diff.h5", LM + " generate -m {w}/diff.h5 --token-ids {w}/one.h5 --max-new 4 --block 2 --steps 2 -o {w}/gen.h5"],
     "inputs": {"model": "{w}/diff.h5", "ids": "{w}/gen.h5"},
     "run": LM + " score -m {model} --token-ids {ids} --samples 3 -o {out}"},
    {"tool": "nk-lm", "verb": "generate --sparse-policy (diffusion)",
     "setup": DIFF + [IDS % "diff.h5"],
     "inputs": {"model": "{w}/diff.h5", "ids": "{w}/ids.h5"},
     "run": LM + " generate -m {model} --token-ids {ids} --max-new 26 --block 26 --steps 2 --sparse-policy step --sparsity 0.25 -o {out}"},
    {"tool": "nk-lm", "verb": "generate --key-index louver --divergence (causal)",
     "setup": TINY + [IDS % "model.h5"],
     "inputs": {"model": "{w}/model.h5", "ids": "{w}/ids.h5"},
     "run": LM + " generate -m {model} --token-ids {ids} --max-new 4 --key-index louver --mass 0.9 --divergence -o {out}"},
    {"tool": "nk-lm", "verb": "score --text",
     "setup": ["printf 'The cat sat on the mat.\\nA dog ran to the park and back again, twice.\\n' > {w}/t.txt"],
     "inputs": {"text": "{w}/t.txt"}, "text": {"text": True},
     "run": LM + " score -m " + SHIPPED + " --text {text} -o {out}"},
    {"tool": "nk-lm", "verb": "score --corpus",
     "setup": TINY,
     "inputs": {"corpus": "{w}/corpus.h5"},
     "run": LM + " score -m {w}/model.h5 --corpus {corpus} --shard 0/2 -o {out}"},
    {"tool": "nk-lm", "verb": "score --text (mapped tokenizer)",
     "setup": TINY + [LM + " export -m {w}/model.h5 -o {w}/hf", PERM, LM + " import {w}/perm -o {w}/perm.h5"],
     "inputs": {"model": "{w}/perm.h5"},
     "run": LM + " score -m {model} --text {w}/text.txt -o {out}"},
    # --- capture
    {"tool": "nk-lm", "verb": "capture --text",
     "setup": ["printf 'The cat sat on the mat\\n' > {w}/p.txt"],
     "inputs": {"text": "{w}/p.txt"}, "text": {"text": True},
     "run": LM + " capture -m " + SHIPPED + " --text {text} --layers 1,4 --louver kv.h5 --louver-layer 1 --louver-queries 2 -o {out}",
     "also": ["kv.h5"]},
    {"tool": "nk-lm", "verb": "capture --token-ids",
     "setup": TINY + [IDS % "model.h5"],
     "inputs": {"model": "{w}/model.h5", "ids": "{w}/one.h5"},
     "run": LM + " capture -m {model} --token-ids {ids} --louver kv.h5 --louver-layer 1 --louver-queries 2 -o {out}",
     "also": ["kv.h5"]},
    {"tool": "nk-lm", "verb": "capture --corpus",
     "setup": TINY,
     "inputs": {"corpus": "{w}/corpus.h5"},
     "run": LM + " capture -m {w}/model.h5 --corpus {corpus} --layers 0,2 -o {out}"},
    {"tool": "nk-lm", "verb": "capture --trajectory",
     "setup": DIFF + [IDS % "diff.h5"],
     "inputs": {"model": "{w}/diff.h5", "ids": "{w}/one.h5"},
     "run": LM + " capture -m {model} --token-ids {ids} --trajectory {out2} --max-new 4 --steps 2 --block 2 -o {out}"},
    # --- info, export, import
    {"tool": "nk-lm", "verb": "info",
     "setup": TINY,
     "inputs": {"model": "{w}/model.h5"},
     "run": LM + " info -m {model}"},
    {"tool": "nk-lm", "verb": "info (checkpoint)",
     "setup": [TEXT, CORPUS, TRAIN + " --checkpoint {w}/run.ckpt -o {w}/model.h5"],
     "inputs": {"ckpt": "{w}/run.ckpt"},
     "run": LM + " info -m {ckpt}"},
    {"tool": "nk-lm", "verb": "export",
     "setup": TINY,
     "inputs": {"model": "{w}/model.h5"},
     "run": LM + " export -m {model} -o hf", "also": ["hf"]},
    {"tool": "nk-lm", "verb": "export --format gguf",
     "setup": [TEXT, CORPUS, TRAIN + " --untied -o {w}/model.h5"],
     "inputs": {"model": "{w}/model.h5"},
     "run": LM + " export -m {model} --format gguf -o m.gguf", "also": ["m.gguf"]},
    {"tool": "nk-lm", "verb": "import",
     "setup": [TEXT, CORPUS, TRAIN + " --untied -o {w}/model.h5", LM + " export -m {w}/model.h5 -o {w}/hf"],
     "inputs": {"config": "{w}/hf/config.json", "weights": "{w}/hf/model.safetensors", "tokenizer": "{w}/hf/tokenizer.json"},
     "text": {"config": True, "weights": True, "tokenizer": True},
     "run": HF_DIR + "cp -r {config} hf/config.json && cp -r {weights} hf/model.safetensors && "
            "cp -r {tokenizer} hf/tokenizer.json && " + LM + " import hf -o {out}"},
    {"tool": "nk-lm", "verb": "import (shards)",
     "setup": TINY + [LM + " export -m {w}/model.h5 -o {w}/hf", SHARD],
     "inputs": {"index": "{w}/sh/model.safetensors.index.json", "shard": "{w}/sh/model-00002-of-00002.safetensors"},
     "text": {"index": True, "shard": True},
     "run": HF_DIR + "cp {w}/sh/config.json {w}/sh/model-00001-of-00002.safetensors hf/ && "
            "cp -r {index} hf/model.safetensors.index.json && cp -r {shard} hf/model-00002-of-00002.safetensors && "
            + LM + " import hf --dtype bfloat16 -o {out}"},
]
