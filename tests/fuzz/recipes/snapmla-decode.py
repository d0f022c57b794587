"""snapmla-decode: every verb that reads a file (tests/fuzz/fuzz.py)."""

# A small ragged cache (d_c 128 so flashmla656 applies) and its pages in the two FP8 layouts.
GEN = "snapmla-decode -q --threads 1 gen --batch 2 --tokens 150 --heads 3 --d-c 128 --d-r 16 --ragged --seed 1 -o {w}/c.h5"
QUANT = "snapmla-decode -q --threads 1 quant -i {w}/c.h5 --layout snapmla644 -o {w}/kv.h5"
QUANT_FLASH = "snapmla-decode -q --threads 1 quant -i {w}/c.h5 --layout flashmla656 -o {w}/kvf.h5"
X = "/usr/bin/python3 -c \"import h5py, numpy as np; h5py.File('{w}/x.h5', 'w')['/x'] = np.linspace(-500, 500, 999, dtype=np.float32).reshape(3, 333)\""

RECIPES = [
    {"tool": "snapmla-decode", "verb": "cast",
     "setup": [X],
     "inputs": {"x": "{w}/x.h5"},
     "run": "snapmla-decode -q cast -i {x} --to e4m3 -o {out}"},
    {"tool": "snapmla-decode", "verb": "quant",
     "setup": [GEN],
     "inputs": {"c": "{w}/c.h5"},
     "run": "snapmla-decode -q --threads 1 quant -i {c} --layout fp8-naive -o {out}"},
    {"tool": "snapmla-decode", "verb": "attend (the paged cache)",
     "setup": [GEN, QUANT],
     "inputs": {"kv": "{w}/kv.h5"},
     "run": "snapmla-decode -q --threads 1 attend -i {kv} --queries {w}/c.h5 --splits 3 -o {out}"},
    {"tool": "snapmla-decode", "verb": "attend (flashmla656)",
     "setup": [GEN, QUANT_FLASH],
     "inputs": {"kv": "{w}/kvf.h5"},
     "run": "snapmla-decode -q --threads 1 attend -i {kv} --queries {w}/c.h5 -o {out}"},
    {"tool": "snapmla-decode", "verb": "attend (the queries)",
     "setup": [GEN, QUANT],
     "inputs": {"q": "{w}/c.h5"},
     "run": "snapmla-decode -q --threads 1 attend -i {w}/kv.h5 --queries {q} --pv fp32 -o {out}"},
    {"tool": "snapmla-decode", "verb": "eval",
     "setup": [GEN],
     "inputs": {"c": "{w}/c.h5"},
     "run": "snapmla-decode -q --threads 1 eval -i {c} -o {out}"},
    {"tool": "snapmla-decode", "verb": "eval --model (the mla checkpoint)",
     "setup": ["cp {src}/data/lm/mla.h5 {w}/mla.h5"],
     "inputs": {"m": "{w}/mla.h5"},
     "run": "snapmla-decode -q --threads 1 eval --model {m} --text {src}/README.md --windows 1 --context 32 --layouts snapmla644 -o {out}"},
    {"tool": "snapmla-decode", "verb": "capture (the mla checkpoint)",
     "setup": ["cp {src}/data/lm/mla.h5 {w}/mla.h5"],
     "inputs": {"m": "{w}/mla.h5"},
     "run": "snapmla-decode -q --threads 1 capture --model {m} --text {src}/README.md --layer 1 --windows 2 --context 32 -o {out}"},
    {"tool": "snapmla-decode", "verb": "plot (an eval table)",
     "setup": [GEN, "snapmla-decode -q --threads 1 eval -i {w}/c.h5 -o {w}/ev.h5"],
     "inputs": {"e": "{w}/ev.h5"},
     "run": "snapmla-decode -q plot {e} -o {out}"},
    {"tool": "snapmla-decode", "verb": "speed",
     "setup": [GEN],
     "inputs": {"c": "{w}/c.h5"},
     "run": "snapmla-decode -q --threads 1 speed -i {c} --repeats 1 -o {out}"},
]
