"""ssd-distill: every verb that reads a file (tests/fuzz/fuzz.py)."""

SD = "ssd-distill -q --threads 1"
MODEL = "{src}/data/lm/causal.h5"
TASKS = SD + " tasks --task memo --docs 2 --seed 1 -o {w}/t.h5"
JSONL = ("printf '%s\\n' "
         "'{{\"doc\": \"The code is 44.\", \"question\": \"What is the code?\", \"answer\": \"44\", \"split\": \"train\"}}' "
         "'{{\"doc\": \"The code is 44.\", \"question\": \"Which code?\", \"answer\": \"44\", \"split\": \"test\"}}' > {w}/own.jsonl")
LOGITS = ("/usr/bin/python3 -c \"import h5py, numpy as np; f = h5py.File('{w}/l.h5', 'w'); "
          "r = np.random.default_rng(1); f['student_logits'] = r.normal(size=(4, 9)).astype('f4'); "
          "f['teacher_logits'] = r.normal(size=(4, 9)).astype('f4')\"")

RECIPES = [
    {"tool": "ssd-distill", "verb": "tasks --from-jsonl",
     "setup": [JSONL],
     "inputs": {"jsonl": "{w}/own.jsonl"}, "text": {"jsonl": True},
     "run": SD + " tasks --from-jsonl {jsonl} -o {out}"},
    {"tool": "ssd-distill", "verb": "eval",
     "setup": [TASKS],
     "inputs": {"tasks": "{w}/t.h5"},
     "run": SD + " eval -m " + MODEL + " -i {tasks} --open-book --max-new 4 -o {out}"},
    {"tool": "ssd-distill", "verb": "rollout",
     "setup": [TASKS],
     "inputs": {"tasks": "{w}/t.h5"},
     "run": SD + " rollout -m " + MODEL + " -i {tasks} --limit 2 --max-new 4 --tau 0.005 --chunk 2 -o {out}"},
    {"tool": "ssd-distill", "verb": "train",
     "setup": [TASKS],
     "inputs": {"tasks": "{w}/t.h5"},
     "run": SD + " train -m " + MODEL + " -i {tasks} --steps 1 --batch 2 --max-new 4 --tau 0.005 -o {out}"},
    {"tool": "ssd-distill", "verb": "sweep",
     "setup": [TASKS],
     "inputs": {"tasks": "{w}/t.h5"},
     "run": SD + " sweep -m " + MODEL + " -i {tasks} --methods ssd --steps 1 --batch 2 --eval-every 1 --max-new 4"
            " --ppl-docs 2 -o {out}"},
    {"tool": "ssd-distill", "verb": "report",
     "setup": [TASKS, SD + " sweep -m " + MODEL + " -i {w}/t.h5 --methods on-policy,ssd --steps 2 --batch 2"
               " --eval-every 1 --max-new 4 --ppl-docs 2 -o {w}/sw.h5"],
     "inputs": {"sweep": "{w}/sw.h5"},
     "run": SD + " report -i {sweep} -o {out}"},
    {"tool": "ssd-distill", "verb": "prepare",
     "setup": ["cp " + MODEL + " {w}/m.h5"],
     "inputs": {"model": "{w}/m.h5"},
     "run": SD + " prepare -m {model} --docs 1 --epochs 1 --batch 4 --replay-windows 0 -o {out}"},
    {"tool": "ssd-distill", "verb": "divergence",
     "setup": [LOGITS],
     "inputs": {"logits": "{w}/l.h5"},
     "run": SD + " divergence -i {logits} --tau 0.3 --loss jsd -o {out}"},
]
