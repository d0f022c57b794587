"""sparda-forecast: every verb that reads a file (tests/fuzz/fuzz.py)."""

# A planted trace of 2 layers (T 96 = 6 blocks of 16), 4 query heads over 2 KV heads.
TRACE = ("sparda-forecast -q --threads 1 gen --planted --layers 2 --tokens 96 --block 16 --heads 4 --kv-heads 2 "
         "--head-dim 8 --d-model 32 --seed 2 -o {w}/trace.h5")
FORECAST = "sparda-forecast -q --threads 1 train -i {w}/trace.h5 --block 16 --topk 2 --steps 3 -o {w}/forecast.h5"
SEL = "--block 16 --topk 2"
MODEL = "{src}/data/lm/causal.h5"
LM_CAPTURE = "printf 'The cat sat on the mat, and the dog sat on the log.' > {w}/t.txt && nk-lm -q capture -m " + MODEL + " --text {w}/t.txt -o {w}/cap.h5"
LM_FORECAST = "sparda-forecast -q --threads 1 train -i {w}/cap.h5 --block 4 --topk 2 --steps 2 -o {w}/lmf.h5"

# The split hashes each document's name, which holds the path as given: a relative one keeps it the
# same in every temporary folder (2 of the 5 paragraphs in validation, each a window of 8 or more).
LM_CORPUS = ("printf 'The cat sat on the mat.\\n\\nThe dog sat on the log.\\n\\nA bird sang in the tree all day long.\\n\\n"
             "Rain fell on the roofs of the town.\\n\\nThe river ran to the sea.\\n' > {w}/p.txt && cd {w} && nk-lm -q corpus --text p.txt "
             "--paragraphs --validation 0.5 --tokenizer " + MODEL + " -o {w}/lmc.h5")
EVAL_MODEL = "--block 4 --topk 2 --window 8 --windows 2 --needles 0 -o {out}"

RECIPES = [
    {"tool": "sparda-forecast", "verb": "select",
     "setup": [TRACE],
     "inputs": {"trace": "{w}/trace.h5"},
     "run": "sparda-forecast -q --threads 1 select -i {trace} " + SEL + " -o {out}"},
    {"tool": "sparda-forecast", "verb": "select -i - (stdin)",
     "setup": [TRACE],
     "inputs": {"trace": "{w}/trace.h5"},
     "run": "sparda-forecast -q --threads 1 select -i - " + SEL + " -o {out} < {trace}"},
    {"tool": "sparda-forecast", "verb": "select --by forecast",
     "setup": [TRACE, FORECAST],
     "inputs": {"trace": "{w}/trace.h5", "forecast": "{w}/forecast.h5"},
     "run": "sparda-forecast -q --threads 1 select -i {trace} --by forecast --forecast {forecast} " + SEL + " -o {out}"},
    {"tool": "sparda-forecast", "verb": "train",
     "setup": [TRACE],
     "inputs": {"trace": "{w}/trace.h5"},
     "run": "sparda-forecast -q --threads 1 train -i {trace} " + SEL + " --steps 2 --queries 8 -o {out}"},
    {"tool": "sparda-forecast", "verb": "eval",
     "setup": [TRACE, FORECAST],
     "inputs": {"trace": "{w}/trace.h5", "forecast": "{w}/forecast.h5"},
     "run": "sparda-forecast -q --threads 1 eval -i {trace} --forecast {forecast} " + SEL + " --positions 40:96 -o {out}"},
    {"tool": "sparda-forecast", "verb": "decode --mode forecast --verify",
     "setup": [TRACE, FORECAST],
     "inputs": {"trace": "{w}/trace.h5", "forecast": "{w}/forecast.h5"},
     "run": "sparda-forecast -q --threads 1 decode -i {trace} --mode forecast --verify --forecast {forecast} " + SEL +
            " --positions 60:96 --device-mem 0.05 -o {out}"},
    {"tool": "sparda-forecast", "verb": "decode --mode sync",
     "setup": [TRACE],
     "inputs": {"trace": "{w}/trace.h5"},
     "run": "sparda-forecast -q --threads 1 decode -i {trace} --mode sync " + SEL + " --positions 60:96 --device-mem 0.05 -o {out}"},
    {"tool": "sparda-forecast", "verb": "decode --model --mode forecast (the Forecast mutated)",
     "setup": [LM_CAPTURE, LM_FORECAST],
     "inputs": {"forecast": "{w}/lmf.h5"},
     "run": "sparda-forecast -q --threads 1 decode --model " + MODEL + " --mode forecast --forecast {forecast} --block 4 --topk 2 "
            "--prompt-tokens 20 --steps 2 --chunk 8 -o {out}"},
    {"tool": "sparda-forecast", "verb": "eval --model (the Forecast mutated)",
     "setup": [LM_CAPTURE, LM_FORECAST, LM_CORPUS],
     "inputs": {"forecast": "{w}/lmf.h5"},
     "run": "sparda-forecast -q --threads 1 eval --model " + MODEL + " --forecast {forecast} --corpus {w}/lmc.h5 " + EVAL_MODEL},
    {"tool": "sparda-forecast", "verb": "eval --model (the corpus mutated)",
     "setup": [LM_CAPTURE, LM_FORECAST, LM_CORPUS],
     "inputs": {"corpus": "{w}/lmc.h5"},
     "run": "sparda-forecast -q --threads 1 eval --model " + MODEL + " --forecast {w}/lmf.h5 --corpus {corpus} " + EVAL_MODEL},
    {"tool": "sparda-forecast", "verb": "eval --by infinigen (a capture with wq)",
     "setup": [LM_CAPTURE],
     "inputs": {"cap": "{w}/cap.h5"},
     "run": "sparda-forecast -q --threads 1 eval -i {cap} --by infinigen --rank 8 --block 4 --topk 2 -o {out}"},
    {"tool": "sparda-forecast", "verb": "plot (an eval file)",
     "setup": [TRACE, FORECAST, "sparda-forecast -q --threads 1 eval -i {w}/trace.h5 --forecast {w}/forecast.h5 " + SEL + " -o {w}/ev.h5"],
     "inputs": {"ev": "{w}/ev.h5"},
     "run": "sparda-forecast -q --threads 1 plot -i {ev} -o {out}"},
    {"tool": "sparda-forecast", "verb": "plot (a decode file)",
     "setup": [TRACE, "sparda-forecast -q --threads 1 decode -i {w}/trace.h5 " + SEL + " --positions 60:70 -o {w}/dec.h5"],
     "inputs": {"dec": "{w}/dec.h5"},
     "run": "sparda-forecast -q --threads 1 plot -i {dec} -o {out}"},
    {"tool": "sparda-forecast", "verb": "--config",
     "setup": [TRACE, "printf 'threads = 1\\nquiet = true\\n[select]\\nblock = 16\\ntopk = 2\\n' > {w}/c.toml"],
     "inputs": {"config": "{w}/c.toml"}, "text": {"config": True},
     "run": "sparda-forecast --config {config} select -i {w}/trace.h5 -o {out}"},
]
