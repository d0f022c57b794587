"""shred-unlearn: every verb that reads a file (tests/fuzz/fuzz.py)."""

SU = "shred-unlearn -q --threads 1"
MODEL = "{src}/data/lm/causal.h5"
# A tiny benchmark: 6 authors x 2 questions, 6 world facts; the shipped model stands in for the target.
TOFU = SU + " tofu --authors 6 --questions 2 --world 6 --seed 1 -o {w}/t.h5"
EV_OPTS = " --split forget10 --max-rows 4 --ppl-docs 0"
REF = SU + " eval -m " + MODEL + " -i {w}/t.h5" + EV_OPTS + " -o {w}/ref.h5"
RUN_OPTS = " --split forget10 --steps 1 --batch 2"
CURVE = (SU + " run -m " + MODEL + " -i {w}/t.h5" + RUN_OPTS + " --eval-every 1 --curve {w}/c.h5 --reference {w}/ref.h5"
         + " --max-rows 4 --ppl-docs 0 -o {w}/u.h5")
TARGET_EV = SU + " eval -m " + MODEL + " -i {w}/t.h5" + EV_OPTS + " --reference {w}/ref.h5 -o {w}/evt.h5"
JSONL = ("printf '%s\\n' "
         "'{{\"author\": \"A\", \"question\": \"Q1?\", \"answer\": \"One.\", \"perturbed_answer\": [\"a.\", \"b.\", \"c.\", \"d.\", \"e.\"], \"split\": \"forget\"}}' "
         "'{{\"author\": \"B\", \"question\": \"Q2?\", \"answer\": \"Two.\", \"perturbed_answer\": [\"a.\", \"b.\", \"c.\", \"d.\", \"e.\"], \"split\": \"holdout\"}}' "
         "'{{\"author\": \"A\", \"bio\": \"A writes.\"}}' > {w}/own.jsonl")

RECIPES = [
    {"tool": "shred-unlearn", "verb": "tofu --from-jsonl",
     "setup": [JSONL],
     "inputs": {"jsonl": "{w}/own.jsonl"}, "text": {"jsonl": True},
     "run": SU + " tofu --from-jsonl {jsonl} -o {out}"},
    {"tool": "shred-unlearn", "verb": "finetune",
     "setup": [TOFU],
     "inputs": {"tofu": "{w}/t.h5"},
     "run": SU + " finetune -m " + MODEL + " -i {tofu} --epochs 1 --batch 8 --replay-world 0 --replay-windows 0 --exclude forget10 -o {out}"},
    {"tool": "shred-unlearn", "verb": "select",
     "setup": [TOFU],
     "inputs": {"tofu": "{w}/t.h5"},
     "run": SU + " select -m " + MODEL + " -i {tofu} --split forget10 --topk 8 --percent 30 -o {out}"},
    {"tool": "shred-unlearn", "verb": "run",
     "setup": [TOFU],
     "inputs": {"tofu": "{w}/t.h5"},
     "run": SU + " run -m " + MODEL + " -i {tofu}" + RUN_OPTS + " --method graddiff -o {out}"},
    {"tool": "shred-unlearn", "verb": "run --reference --curve",
     "setup": [TOFU, REF],
     "inputs": {"reference": "{w}/ref.h5"},
     "run": SU + " run -m " + MODEL + " -i {w}/t.h5" + RUN_OPTS + " --eval-every 1 --curve {out2} --reference {reference}"
            + " --max-rows 4 --ppl-docs 0 -o {out}"},
    {"tool": "shred-unlearn", "verb": "eval --reference",
     "setup": [TOFU, REF],
     "inputs": {"tofu": "{w}/t.h5", "reference": "{w}/ref.h5"},
     "run": SU + " eval -m " + MODEL + " -i {tofu}" + EV_OPTS + " --reference {reference} -o {out}"},
    {"tool": "shred-unlearn", "verb": "relearn",
     "setup": [TOFU],
     "inputs": {"tofu": "{w}/t.h5"},
     "run": SU + " relearn -m " + MODEL + " --target " + MODEL + " -i {tofu} --split forget10 --steps 1 --batch 2 -o {out}"},
    {"tool": "shred-unlearn", "verb": "sequential",
     "setup": [TOFU],
     "inputs": {"tofu": "{w}/t.h5"},
     "run": SU + " sequential -m " + MODEL + " -i {tofu} --split forget10 --requests 1 --steps 1 --batch 2 --max-rows 4 --ppl-docs 0 -o {out}"},
    {"tool": "shred-unlearn", "verb": "pareto",
     "setup": [TOFU, REF, CURVE, TARGET_EV],
     "inputs": {"curve": "{w}/c.h5", "target": "{w}/evt.h5", "retain": "{w}/ref.h5"},
     "run": SU + " pareto {curve} --target {target} --retain {retain} --plot p.svg -o {out}", "also": ["p.svg"]},
]
