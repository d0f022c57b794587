"""dllm-sparse: every verb that reads a file (tests/fuzz/fuzz.py)."""

# L = 100 with 32-blocks: a ragged last block; 2 query heads over 1 KV head (GQA).
STEP = "dllm-sparse -q --threads 1 gen --single-step --length 100 --heads 2 --kv-heads 1 --dims 16 --seed 2 -o {w}/step.h5"
TRAJ = "dllm-sparse -q --threads 1 gen --length 100 --heads 2 --kv-heads 1 --dims 16 --steps 4 --transitions 1 --seed 3 -o {w}/traj.h5"
PLAN = "dllm-sparse -q --threads 1 plan -i {w}/traj.h5 --sparsity 0.5 --anchor-every 2 --block 32 -o {w}/plan.h5"
LAYERS = "dllm-sparse -q --threads 1 gen --length 64 --heads 2 --dims 16 --steps 2 --layers 2 --seed 4 -o {w}/layers.h5"

RECIPES = [
    {"tool": "dllm-sparse", "verb": "attend --dense",
     "setup": [STEP],
     "inputs": {"qkv": "{w}/step.h5"},
     "run": "dllm-sparse -q --threads 1 attend -i {qkv} --dense --block 32 -o {out}"},
    {"tool": "dllm-sparse", "verb": "attend --unfused -i - (stdin)",
     "setup": [STEP],
     "inputs": {"qkv": "{w}/step.h5"},
     "run": "dllm-sparse -q --threads 1 attend -i - --unfused -o {out} < {qkv}"},
    {"tool": "dllm-sparse", "verb": "attend --mask FILE",
     "setup": [STEP,
               "/usr/bin/python3 -c \"import h5py, numpy as np; m = np.ones((2, 4, 4), np.uint8); m[0, 0, 3] = 0; "
               "m[1, 2, 0] = 0; h5py.File('{w}/mask.h5', 'w')['mask'] = m\""],
     "inputs": {"qkv": "{w}/step.h5", "mask": "{w}/mask.h5"},
     "run": "dllm-sparse -q --threads 1 attend -i {qkv} --mask {mask} --block 32 -o {out}"},
    {"tool": "dllm-sparse", "verb": "attend --step --mask PLAN",
     "setup": [TRAJ, PLAN],
     "inputs": {"traj": "{w}/traj.h5", "plan": "{w}/plan.h5"},
     "run": "dllm-sparse -q --threads 1 attend -i {traj} --step 2 --mask {plan} --block 32 -o {out}"},
    {"tool": "dllm-sparse", "verb": "plan",
     "setup": [TRAJ],
     "inputs": {"traj": "{w}/traj.h5"},
     "run": "dllm-sparse -q --threads 1 plan -i {traj} --sparsity 0.5 --anchor-every 2 --block 32 -o {out}"},
    {"tool": "dllm-sparse", "verb": "plan layers",
     "setup": [LAYERS],
     "inputs": {"traj": "{w}/layers.h5"},
     "run": "dllm-sparse -q --threads 1 plan -i {traj} --policy oracle --score pooled --sparsity 0.5 --block 16 -o {out}"},
    {"tool": "dllm-sparse", "verb": "eval",
     "setup": [TRAJ, PLAN],
     "inputs": {"traj": "{w}/traj.h5", "plan": "{w}/plan.h5"},
     "run": "dllm-sparse -q --threads 1 eval -i {traj} --plan {plan} -o {out}"},
    {"tool": "dllm-sparse", "verb": "eval layers",
     "setup": [LAYERS, "dllm-sparse -q --threads 1 plan -i {w}/layers.h5 --sparsity 0.5 --block 32 -o {w}/plan.h5"],
     "inputs": {"traj": "{w}/layers.h5", "plan": "{w}/plan.h5"},
     "run": "dllm-sparse -q --threads 1 eval -i {traj} --plan {plan} -o {out}"},
    {"tool": "dllm-sparse", "verb": "plot",
     "setup": [TRAJ, PLAN, "dllm-sparse -q --threads 1 eval -i {w}/traj.h5 --plan {w}/plan.h5 -o {w}/eval.h5"],
     "inputs": {"eval": "{w}/eval.h5"},
     "run": "dllm-sparse -q --threads 1 plot -i {eval} -o {out}"},
    {"tool": "dllm-sparse", "verb": "--config",
     "setup": [STEP, "printf 'threads = 1\\nquiet = true\\n[attend]\\ndense = true\\nblock = 32\\nrepeats = 1\\n' > {w}/c.toml"],
     "inputs": {"config": "{w}/c.toml"}, "text": {"config": True},
     "run": "dllm-sparse --config {config} attend -i {w}/step.h5 -o {out}"},
]
