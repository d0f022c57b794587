"""proxy-certify: every verb that reads a file (tests/fuzz/fuzz.py)."""

PC = "proxy-certify -q --threads 1"
FM = "/usr/share/datasets/fashion-mnist/"
POOL = ("nk-data -q import-idx " + FM + "t10k-images-idx3-ubyte.gz " + FM + "t10k-labels-idx1-ubyte.gz"
        " --limit 40 -o {w}/pool.h5")
MODEL = PC + " train -i {w}/pool.h5 --arch mlp --epochs 1 --batch 20 -o {w}/m.h5"
REF = PC + " certify -i {w}/pool.h5 --model {w}/m.h5 --n0 5 --n 20 -o {w}/ref.h5"
SNN = "spike-sft -q pretrain -i {w}/pool.h5 --hidden 16 --steps 3 --epochs 1 --batch 20 -o {w}/snn.h5"
PROXY = PC + " calibrate -i {w}/pool.h5 --model {w}/m.h5 --recipe heavy --n0 5 --n 20 -o {w}/px.h5"

RECIPES = [
    {"tool": "proxy-certify", "verb": "train",
     "setup": [POOL], "inputs": {"data": "{w}/pool.h5"},
     "run": PC + " train -i {data} --arch cnn --epochs 1 --batch 20 -o {out}"},
    {"tool": "proxy-certify", "verb": "certify",
     "setup": [POOL, MODEL], "inputs": {"data": "{w}/pool.h5", "model": "{w}/m.h5"},
     "run": PC + " certify -i {data} --model {model} --n0 5 --n 20 -o {out}"},
    {"tool": "proxy-certify", "verb": "certify --model SNN",
     "setup": [POOL, SNN], "inputs": {"data": "{w}/pool.h5", "model": "{w}/snn.h5"},
     "run": PC + " certify -i {data} --model {model} --sigma 0.25 --n0 5 --n 20 -o {out}"},
    {"tool": "proxy-certify", "verb": "predict",
     "setup": [POOL, MODEL], "inputs": {"data": "{w}/pool.h5", "model": "{w}/m.h5"},
     "run": PC + " predict -i {data} --model {model} --n 20 -o {out}"},
    {"tool": "proxy-certify", "verb": "calibrate",
     "setup": [POOL, MODEL], "inputs": {"data": "{w}/pool.h5", "model": "{w}/m.h5"},
     "run": PC + " calibrate -i {data} --model {model} --proxy head --head-data {data} --head-n 10 --recipe heavy"
                 " --n0 5 --n 20 -o {out}"},
    {"tool": "proxy-certify", "verb": "approve",
     "setup": [POOL, MODEL, PROXY], "inputs": {"data": "{w}/pool.h5", "model": "{w}/m.h5", "proxy": "{w}/px.h5"},
     "run": PC + " approve -i {data} --model {model} --proxy {proxy} --mode fallback --n0 5 --n 20 -o {out}"},
    {"tool": "proxy-certify", "verb": "eval",
     "setup": [POOL, MODEL, REF], "inputs": {"data": "{w}/pool.h5", "model": "{w}/m.h5", "ref": "{w}/ref.h5"},
     "run": PC + " eval -i {data} --model {model} --reference {ref} --calibration 20 --cheap-n 10 -o {out} --svg {w}/c.svg"},
]
