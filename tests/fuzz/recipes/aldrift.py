"""aldrift: every verb that reads a file (tests/fuzz/fuzz.py)."""

RECIPES = [
    {"tool": "aldrift", "verb": "exact",
     "setup": ["aldrift -q gen-exact --length 6 --target 011010 --stay 0.85 -o {w}/p.h5"],
     "inputs": {"problem": "{w}/p.h5"},
     "run": "aldrift -q exact -i {problem} --T 3 --budget 600 --stages 3 --steps 4 --burn-in 2 -o {out}"},
    {"tool": "aldrift", "verb": "evaluate",
     "setup": ["/usr/bin/python3 -c \"import h5py, numpy as np; h5py.File('{w}/x.h5', 'w')['x'] = np.random.default_rng(1).normal(size=(20, 3))\""],
     "inputs": {"x": "{w}/x.h5"},
     "run": "aldrift -q evaluate -i {x} --function levy -o {out}"},
    {"tool": "aldrift", "verb": "global --x-star (the product learner)",
     "setup": ["/usr/bin/python3 -c \"import h5py, numpy as np; h5py.File('{w}/xs.h5', 'w')['x_star'] = np.array([0.5, -1.0, 1.5])\""],
     "inputs": {"xs": "{w}/xs.h5"},
     "run": "aldrift -q global --function rastrigin --dim 3 --x-star {xs} --learner product --budget 600 -o {out}"},
    {"tool": "aldrift", "verb": "plot",
     "setup": ["aldrift -q gen-exact --length 6 --target 011010 -o {w}/p.h5",
               "aldrift -q exact -i {w}/p.h5 --T 3 --budget 600 --stages 3 --steps 4 --burn-in 2 -o {w}/run.h5"],
     "inputs": {"run": "{w}/run.h5"},
     "run": "aldrift -q plot -i {run} -o {out}"},
]
