"""louver-index: every verb that reads a file (tests/fuzz/fuzz.py)."""

# A tiny KV cache: 300 keys of d = 16, dv = 4; the index has 4 subspaces, leaves of 16 keys.
GEN = "louver-index -q gen --n 300 --d 16 --dv 4 --seed 3"
BUILD = "louver-index -q build --threads 1 --subspaces 4 --leaf-size 16 --buffer 50"
# Keeps only the named datasets of a gen file (with their attributes), so that mutations hit what the verb reads.
ONLY = ("/usr/bin/python3 -c \"import h5py; s = h5py.File('{w}/%s', 'r'); d = h5py.File('{w}/%s', 'w'); "
        "[d.attrs.__setitem__(k, v) for k, v in s.attrs.items()]; [s.copy(n, d) for n in %r]\"")

RECIPES = [
    {"tool": "louver-index", "verb": "build",
     "setup": [GEN + " --queries 1 -o {w}/kv_full.h5",
               ONLY % ("kv_full.h5", "kv.h5", ("keys", "values"))],
     "inputs": {"kv": "{w}/kv.h5"},
     "run": BUILD + " -i {kv} -o {out}"},
    {"tool": "louver-index", "verb": "append",
     "setup": [GEN + " --queries 1 -o {w}/kv.h5",
               BUILD + " -i {w}/kv.h5 -o {w}/index.h5",
               "louver-index -q gen --n 60 --d 16 --dv 4 --queries 1 --seed 9 -o {w}/more_full.h5",
               ONLY % ("more_full.h5", "more.h5", ("keys", "values"))],
     "inputs": {"index": "{w}/index.h5", "keys": "{w}/more.h5"},
     "run": "louver-index -q append --threads 1 -i {index} --keys {keys} -o {out}"},
    {"tool": "louver-index", "verb": "query",
     # Two KV heads, four query heads (GQA), and an index with a non-empty exact buffer (20 appended keys < 50).
     "setup": [GEN + " --queries 3 --heads 2 --query-heads 4 -o {w}/kv.h5",
               BUILD + " -i {w}/kv.h5 -o {w}/built.h5",
               "louver-index -q gen --n 20 --d 16 --dv 4 --queries 1 --heads 2 --seed 9 -o {w}/more.h5",
               "louver-index -q append --threads 1 -i {w}/built.h5 --keys {w}/more.h5 -o {w}/index.h5",
               ONLY % ("kv.h5", "q.h5", ("queries",))],
     "inputs": {"index": "{w}/index.h5", "queries": "{w}/q.h5"},
     "run": "louver-index -q query --threads 1 --device cpu -i {index} --queries {queries} --topk-oracle 10 --compare-dense -o {out}"},
    {"tool": "louver-index", "verb": "attend",
     "setup": [GEN + " --queries 4 -o {w}/kv.h5",
               BUILD + " -i {w}/kv.h5 -o {w}/index.h5",
               ONLY % ("kv.h5", "q.h5", ("queries",))],
     "inputs": {"index": "{w}/index.h5", "queries": "{w}/q.h5"},
     "run": "louver-index -q attend --threads 1 --device cpu -i {index} --queries {queries} --mass 0.9 --mass-sample 64 -o {out}"},
    {"tool": "louver-index", "verb": "query --method ivf",
     "setup": [GEN + " --queries 3 -o {w}/kv.h5", BUILD + " -i {w}/kv.h5 -o {w}/index.h5",
               ONLY % ("kv.h5", "q.h5", ("queries",))],
     "inputs": {"index": "{w}/index.h5", "queries": "{w}/q.h5"},
     "run": "louver-index -q query --threads 1 --device cpu -i {index} --queries {queries} --topk-oracle 10 --method ivf --budget 0.2 --compare-dense -o {out}"},
    {"tool": "louver-index", "verb": "plot",
     # A causal generation through Louver with its per-step KL (the shipped model, 6 tokens).
     "setup": ["printf 'The cat sat\\n' > {w}/p.txt",
               "nk-lm -q --threads 1 generate -m {src}/data/lm/causal.h5 --prompts {w}/p.txt --max-new 6 --key-index louver --mass 0.9 --divergence -o {w}/gen.h5"],
     "inputs": {"gen": "{w}/gen.h5"},
     "run": "louver-index -q --threads 1 plot {gen} -o {out}"},
]
