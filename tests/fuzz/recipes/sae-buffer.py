"""sae-buffer: every verb that reads a file (tests/fuzz/fuzz.py)."""

SB = "sae-buffer -q --threads 1"
MODEL = "{src}/data/lm/causal.h5"
# Synthetic activations (m = 8, F = 32): 600 training rows, 200 held-out rows of the same dictionary.
GEN = SB + " gen --dim 8 --features 32 --active 3 --rows 600 --seed 1 -o {w}/acts.h5"
HELD = SB + " gen --dim 8 --features 32 --active 3 --rows 200 --seed 1 --first-row 1000000000 -o {w}/held.h5"
TRAIN = " --buffer 200 --budget 400 --latents 32 --k 2 --batch 64"
SAE = SB + " train -i {w}/acts.h5" + TRAIN + " --seed 2 -o {w}/sae.h5"
# A grid of 8 points (B >= U), its fit.
GRID_OPTS = " --buffers 64,128,256 --budgets 128,256,512 --latents 32 --k 2 --batch 64 --heldout-rows 100 --seed 5"
GRID = SB + " grid -i {w}/acts.h5" + GRID_OPTS + " -o {w}/grid.h5"
FIT = SB + " fit -i {w}/grid.h5 -o {w}/fit.h5"
# nk-lm captures (layer 2's residual stream, d_model 192) of the shipped model over a few fortunes:
# cap.h5 (~600 tokens), capv.h5 (~430 tokens, other text) and their WordNet labels.
CAP = ["head -c 1500 /usr/share/games/fortunes/fortunes > {w}/text.txt",
       "nk-lm -q --threads 1 corpus --text {w}/text.txt --paragraphs --tokenizer " + MODEL + " --validation 0 -o {w}/corpus.h5",
       "nk-lm -q --threads 1 capture -m " + MODEL + " --corpus {w}/corpus.h5 --split train --layers 2 --resid-only -o {w}/cap.h5"]
CAPV = ["head -c 3000 /usr/share/games/fortunes/fortunes | tail -c 1000 > {w}/textv.txt",
        "nk-lm -q --threads 1 corpus --text {w}/textv.txt --paragraphs --tokenizer " + MODEL + " --validation 0 -o {w}/corpusv.h5",
        "nk-lm -q --threads 1 capture -m " + MODEL + " --corpus {w}/corpusv.h5 --split train --layers 2 --resid-only -o {w}/capv.h5"]
LM_TRAIN = " --hook 2 --buffer 100 --budget 200 --latents 64 --k 4 --batch 32"
LM_SAE = SB + " train -i {w}/cap.h5" + LM_TRAIN + " -o {w}/lm_sae.h5"
LABELS = SB + " labels -i {w}/cap.h5 -m " + MODEL + " -o {w}/lab.h5"
LABELSV = SB + " labels -i {w}/capv.h5 -m " + MODEL + " -o {w}/labv.h5"
# A small WordNet: the licence header's first lines and the lemmas of the text; index.noun on its own
# ({w}/index.noun, the fuzzed input), the rest in {w}/wn.
WORDS = ("day|firm|decision|hour|grace|madness|begin|gift|flower|soon|make|long|love|one|appear|buy|negative|price|"
         "tall|dark|stranger|fun|visit|fresh|place|bring|strange|work|vivid|creative|mind|characterize|abandon|"
         "search|truth|settle|good|fantasy|run|time|be|have|go|man|woman|life|friend|world|see")
WORDNET = ["mkdir -p {w}/wn && for p in noun verb adj adv; do (head -n 3 /usr/share/wordnet/index.$p; "
           "grep -E '^(" + WORDS + ") ' /usr/share/wordnet/index.$p) > {w}/wn/index.$p; "
           "head -n 30 /usr/share/wordnet/$p.exc > {w}/wn/$p.exc; done && mv {w}/wn/index.noun {w}/index.noun"]

RECIPES = [
    {"tool": "sae-buffer", "verb": "train",
     "setup": [GEN],
     "inputs": {"acts": "{w}/acts.h5"},
     "run": SB + " train -i {acts}" + TRAIN + " --seed 2 -o {out}"},
    {"tool": "sae-buffer", "verb": "train --hook",
     "setup": CAP,
     "inputs": {"capture": "{w}/cap.h5"},
     "run": SB + " train -i {capture}" + LM_TRAIN + " --arch batchtopk -o {out}"},
    {"tool": "sae-buffer", "verb": "train --config",
     "setup": [GEN, "printf 'threads = 1\\nquiet = true\\nseed = 3\\n[train]\\nbuffer = 200\\nbudget = 400\\nlatents = 32\\n"
                    "k = 2\\nbatch = 64\\narch = \"jumprelu\"\\nlr = 0.001\\nb-dec-init = \"mean\"\\n' > {w}/c.toml"],
     "inputs": {"config": "{w}/c.toml"}, "text": {"config": True},
     "run": "sae-buffer --config {config} train -i {w}/acts.h5 -o {out}"},
    {"tool": "sae-buffer", "verb": "labels",
     "setup": CAP,
     "inputs": {"capture": "{w}/cap.h5", "model": MODEL},
     "run": SB + " labels -i {capture} -m {model} -o {out}"},
    {"tool": "sae-buffer", "verb": "labels --wordnet",
     "setup": CAP + WORDNET,
     "inputs": {"noun": "{w}/index.noun"}, "text": {"noun": True},
     "run": "mkdir wn && ln -s {w}/wn/* wn/ && ln -s {noun} wn/index.noun && "
            + SB + " labels -i {w}/cap.h5 -m " + MODEL + " --wordnet wn -o {out}"},
    {"tool": "sae-buffer", "verb": "eval --truth",
     "setup": [GEN, HELD, SAE],
     "inputs": {"sae": "{w}/sae.h5", "acts": "{w}/held.h5", "truth": "{w}/acts.h5"},
     "run": SB + " eval -i {sae} --acts {acts} --truth {truth} -o {out}"},
    {"tool": "sae-buffer", "verb": "eval --hook --labels",
     "setup": CAP + [LM_SAE, LABELS],
     "inputs": {"sae": "{w}/lm_sae.h5", "acts": "{w}/cap.h5", "labels": "{w}/lab.h5"},
     "run": SB + " eval -i {sae} --acts {acts} --hook 2 --labels {labels} -o {out}"},
    {"tool": "sae-buffer", "verb": "eval --judge-cmd -m",
     "setup": CAP + [LM_SAE],
     "inputs": {"model": MODEL},
     "run": SB + " eval -i {w}/lm_sae.h5 --acts {w}/cap.h5 --hook 2 -m {model}"
            " --judge-cmd '/usr/bin/python3 {src}/tests/cli/sae_judge.py' --judge-latents 2 -o {out}"},
    {"tool": "sae-buffer", "verb": "grid",
     "setup": [GEN],
     "inputs": {"acts": "{w}/acts.h5"},
     "run": SB + " grid -i {acts}" + GRID_OPTS + " -o {out}"},
    {"tool": "sae-buffer", "verb": "grid --heldout --truth",
     "setup": [GEN, HELD],
     "inputs": {"heldout": "{w}/held.h5", "truth": "{w}/acts.h5"},
     "run": SB + " grid -i {w}/acts.h5 --heldout {heldout} --truth {truth}" + GRID_OPTS + " -o {out}"},
    {"tool": "sae-buffer", "verb": "grid --hook --heldout --labels",
     "setup": CAP + CAPV + [LABELSV],
     "inputs": {"acts": "{w}/cap.h5", "heldout": "{w}/capv.h5", "labels": "{w}/labv.h5"},
     "run": SB + " grid -i {acts} --hook 2 --heldout {heldout} --labels {labels}"
            " --buffers 32,64 --budgets 64,128 --latents 64 --k 4 --batch 32 -o {out}"},
    {"tool": "sae-buffer", "verb": "fit",
     "setup": [GEN, GRID],
     "inputs": {"grid": "{w}/grid.h5"},
     "run": SB + " fit -i {grid} --plot fit.svg -o {out}", "also": ["fit.svg"]},
    {"tool": "sae-buffer", "verb": "fit",
     "setup": [GEN, GRID],
     "inputs": {"grid": "{w}/grid.h5"},
     "run": SB + " fit -i {grid} --min-buffer 32 -o {out}"},
    {"tool": "sae-buffer", "verb": "size",
     "setup": [GEN, GRID, FIT],
     "inputs": {"fit": "{w}/fit.h5", "grid": "{w}/grid.h5"},
     "run": SB + " size --fit {fit} --budget 256 --grid {grid} -o {out}"},
]
