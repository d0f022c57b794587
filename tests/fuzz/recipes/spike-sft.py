"""spike-sft: every verb that reads a file (tests/fuzz/fuzz.py)."""

# Tiny labelled data: 48 images of 8x8x1 in three classes (a stripe pattern plus noise), as nk-data writes them
# (nk_schema, /images float32 [N,H,W,C], /labels int64 [N]); with vectors=True /vectors [N,64] instead.
# Networks of 8 hidden neurons, 2 steps and batches of 8: every run takes milliseconds.


def data(name, seed=1, n=48, vectors=False):
    layout = ("f.attrs['nk_schema'] = 'nk-data.vectors/1'; f['vectors'] = x.reshape(%d, -1); " % n if vectors else
              "f.attrs['nk_schema'] = 'nk-data.images/1'; f['images'] = x; ")
    return ("/usr/bin/python3 -c \"import h5py, numpy as np; r = np.random.default_rng(%d); y = np.arange(%d) %% 3; "
            "x = (r.random((%d, 8, 8, 1)) * 0.3 + (y[:, None, None, None] == np.arange(8)[None, :, None, None] %% 3) * 0.7)"
            ".astype(np.float32); f = h5py.File('{w}/%s', 'w'); %sf['labels'] = y\"" % (seed, n, n, name, layout))


SFT = "spike-sft -q --threads 1"
NET = "--hidden 8 --steps 2 --epochs 2 --batch 8"
PRETRAIN = SFT + " --seed 1 pretrain -i {w}/data.h5 " + NET + " -o {w}/base.h5"
TASKS = SFT + " --seed 2 tasks -i {w}/data.h5 --kinds invert,rotate90 --train 24 --test 12 -o {w}/tasks.h5"
SPE = SFT + " spe -i {w}/base.h5 --fraction 0.2 --epochs 1 --batch 8"

RECIPES = [
    {"tool": "spike-sft", "verb": "pretrain",
     "setup": [data("data.h5")],
     "inputs": {"data": "{w}/data.h5"},
     "run": SFT + " pretrain -i {data} " + NET + " -o {out}"},
    {"tool": "spike-sft", "verb": "pretrain (/vectors)",
     "setup": [data("vec.h5", vectors=True)],
     "inputs": {"data": "{w}/vec.h5"},
     "run": SFT + " pretrain -i {data} --hidden 8,4 --steps 2 --epochs 1 --batch 8 --coding rate -o {out}"},
    {"tool": "spike-sft", "verb": "pretrain --test",
     "setup": [data("data.h5"), data("test.h5", seed=5, n=12)],
     "inputs": {"data": "{w}/data.h5", "test": "{w}/test.h5"},
     "run": SFT + " pretrain -i {data} --test {test} " + NET + " -o {out}"},
    {"tool": "spike-sft", "verb": "pretrain -i - (standard input)",
     "setup": [data("data.h5")],
     "inputs": {"data": "{w}/data.h5"},
     "run": SFT + " pretrain -i - " + NET + " --limit 40 -o {out} < {data}"},
    {"tool": "spike-sft", "verb": "pretrain --conv",
     "setup": [data("data.h5")],
     "inputs": {"data": "{w}/data.h5"},
     "run": SFT + " pretrain -i {data} --conv 2,2 --steps 2 --epochs 1 --batch 8 --lr 1e-2 -o {out}"},
    {"tool": "spike-sft", "verb": "pretrain --config",
     "setup": [data("data.h5"),
               "printf 'threads = 1\\nseed = 3\\n[pretrain]\\nhidden = [8]\\nsteps = 2\\nepochs = 1\\nbatch = 8\\n"
               "lr = 0.01\\nbeta = 0.8\\nreset = \"zero\"\\nsurrogate = \"atan\"\\nholdout = 0.2\\n' > {w}/opts.toml"],
     "inputs": {"config": "{w}/opts.toml"}, "text": {"config": True},
     "run": "spike-sft -q --threads 1 --config {config} pretrain -i {w}/data.h5 -o {out}"},
    {"tool": "spike-sft", "verb": "serve",
     "setup": [data("data.h5"), PRETRAIN,
               "/usr/bin/python3 -c \"import struct, numpy as np, sys; open('{w}/frames.bin', 'wb').write("
               "struct.pack('<q', 3) + np.random.default_rng(1).random(3 * 64, dtype=np.float32).tobytes())\""],
     "inputs": {"model": "{w}/base.h5", "frames": "{w}/frames.bin"}, "binary": {"frames": True},
     "run": SFT + " serve -i {model} < {frames} > /dev/null"},
    {"tool": "spike-sft", "verb": "tasks",
     "setup": [data("data.h5")],
     "inputs": {"data": "{w}/data.h5"},
     "run": SFT + " tasks -i {data} --kinds identity,rotate90,invert,permute,noise,shift,contrast,blur,relabel "
                  "--train 16 --test 8 -o {out}"},
    {"tool": "spike-sft", "verb": "spe",
     "setup": [data("data.h5"), PRETRAIN, TASKS],
     "inputs": {"base": "{w}/base.h5", "tasks": "{w}/tasks.h5"},
     "run": SFT + " spe -i {base} --task {tasks}:invert --fraction 0.2 --epochs 2 --batch 8 -o {out}"},
    {"tool": "spike-sft", "verb": "spe (adapted model as base)",
     "setup": [data("data.h5"), PRETRAIN, TASKS,
               SPE + " --task {w}/tasks.h5:invert --method full -o {w}/full.h5"],
     "inputs": {"adapted": "{w}/full.h5"},
     "run": SFT + " spe -i {adapted} --task {w}/tasks.h5:rotate90 --method lora --epochs 1 --batch 8 -o {out}"},
    {"tool": "spike-sft", "verb": "pickit",
     "setup": [data("data.h5"), PRETRAIN, TASKS,
               SPE + " --task {w}/tasks.h5:invert -o {w}/a.h5",
               SPE + " --task {w}/tasks.h5:rotate90 -o {w}/b.h5"],
     "inputs": {"a": "{w}/a.h5", "b": "{w}/b.h5", "tasks": "{w}/tasks.h5"},
     "run": SFT + " pickit -i {a} {b} --tasks {tasks} --calibration 8 --scale-grid 0.5,1 -o {out}"},
    {"tool": "spike-sft", "verb": "pickit --method ties (alignment)",
     # Two bases (seeds 1 and 7): the second model's neurons are aligned to the first's.
     "setup": [data("data.h5"), PRETRAIN, TASKS,
               SFT + " --seed 7 pretrain -i {w}/data.h5 " + NET + " -o {w}/base2.h5",
               SPE + " --task {w}/tasks.h5:invert -o {w}/a.h5",
               SFT + " spe -i {w}/base2.h5 --task {w}/tasks.h5:rotate90 --fraction 0.2 --epochs 1 --batch 8 -o {w}/b.h5"],
     "inputs": {"a": "{w}/a.h5", "b": "{w}/b.h5"},
     "run": SFT + " pickit -i {a} {b} --method ties -o {out}"},
    {"tool": "spike-sft", "verb": "pickit --method task-arithmetic",
     # A full fine-tuning (with bias deltas) and a mask.
     "setup": [data("data.h5"), PRETRAIN, TASKS,
               SPE + " --task {w}/tasks.h5:invert --method full -o {w}/full.h5",
               SPE + " --task {w}/tasks.h5:rotate90 -o {w}/b.h5"],
     "inputs": {"full": "{w}/full.h5", "b": "{w}/b.h5"},
     "run": SFT + " pickit -i {full} {b} --method task-arithmetic --scale 0.5 -o {out}"},
    {"tool": "spike-sft", "verb": "stats",
     "setup": [data("data.h5"), PRETRAIN],
     "inputs": {"model": "{w}/base.h5", "data": "{w}/data.h5"},
     "run": SFT + " stats -i {model} --data {data} --fractions 0,0.5 --bins 5 --plot curve.svg -o {out}",
     "also": ["curve.svg"]},
    {"tool": "spike-sft", "verb": "eval --data",
     "setup": [data("data.h5"), PRETRAIN],
     "inputs": {"model": "{w}/base.h5", "data": "{w}/data.h5"},
     "run": SFT + " eval -i {model} --data {data} --batch 16 -o {out}"},
    {"tool": "spike-sft", "verb": "eval --task",
     "setup": [data("data.h5"), PRETRAIN, TASKS,
               SPE + " --task {w}/tasks.h5:invert -o {w}/a.h5"],
     "inputs": {"adapted": "{w}/a.h5", "tasks": "{w}/tasks.h5"},
     "run": SFT + " eval -i {adapted} --task {tasks}:invert -o {out}"},
    {"tool": "spike-sft", "verb": "eval (conv model)",
     "setup": [data("data.h5"),
               SFT + " --seed 1 pretrain -i {w}/data.h5 --conv 2,2 --steps 2 --epochs 1 --batch 8 -o {w}/conv.h5"],
     "inputs": {"model": "{w}/conv.h5"},
     "run": SFT + " eval -i {model} --data {w}/data.h5 -o {out}"},
    {"tool": "spike-sft", "verb": "eval -i - (standard input)",
     "setup": [data("data.h5"), PRETRAIN],
     "inputs": {"model": "{w}/base.h5"},
     "run": SFT + " eval -i - --data {w}/data.h5 -o {out} < {model}"},
]
