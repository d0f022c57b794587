"""rubiconv: every verb that reads a file (tests/fuzz/fuzz.py)."""

# Small packed batches: per-row /cu_seqlens with a short filter (direct, FFT-bucket and overlap-save paths with
# --direct-max 4 --tile 64), and a shared [D+1] /cu_seqlens in float64 with a full-length filter.
GEN = "rubiconv -q --threads 1 gen --length 300 --channels 2 --batch 2 --doc-lengths lognormal:40,1.0 --filter-length 12 --skip --with-dy --seed 1 -o {w}/in.h5"
GEN_SHARED = "rubiconv -q --threads 1 gen --length 300 --channels 2 --batch 2 --doc-lengths fixed:70 --shared-packing --dtype float64 --skip --with-dy --seed 2 -o {w}/shared.h5"

RECIPES = [
    {"tool": "rubiconv", "verb": "apply",
     "setup": [GEN],
     "inputs": {"x": "{w}/in.h5"},
     "run": "rubiconv -q --threads 1 apply -i {x} --direct-max 4 --tile 64 -o {out}"},
    {"tool": "rubiconv", "verb": "apply --skip",
     "setup": [GEN],
     "inputs": {"x": "{w}/in.h5"},
     "run": "rubiconv -q --threads 1 apply -i {x} --skip --method perdoc -o {out}"},
    {"tool": "rubiconv", "verb": "apply shared-packing",
     "setup": [GEN_SHARED],
     "inputs": {"x": "{w}/shared.h5"},
     "run": "rubiconv -q --threads 1 apply -i {x} --skip --direct-max 4 --shard 1/2 -o {out}"},
    {"tool": "rubiconv", "verb": "apply -i - (stdin)",
     "setup": [GEN],
     "inputs": {"x": "{w}/in.h5"},
     "run": "rubiconv -q --threads 1 apply -i - --method padded -o {out} < {x}"},
    {"tool": "rubiconv", "verb": "grad",
     "setup": [GEN],
     "inputs": {"x": "{w}/in.h5"},
     "run": "rubiconv -q --threads 1 grad -i {x} --skip --direct-max 4 --tile 64 -o {out}"},
    {"tool": "rubiconv", "verb": "grad shared-packing",
     "setup": [GEN_SHARED],
     "inputs": {"x": "{w}/shared.h5"},
     "run": "rubiconv -q --threads 1 grad -i {x} --method direct -o {out}"},
    {"tool": "rubiconv", "verb": "gen --doc-lengths FILE",
     "setup": ["printf '100\\n7\\n1\\n30\\n' > {w}/lengths.txt"],
     "inputs": {"lengths": "{w}/lengths.txt"}, "text": {"lengths": True},
     "run": "rubiconv -q --threads 1 gen --length 200 --channels 2 --batch 2 --filter-length 20 --doc-lengths {lengths} -o {out}"},
    {"tool": "rubiconv", "verb": "--config",
     "setup": [GEN, "printf 'threads = 1\\nquiet = true\\n[apply]\\nmethod = \"perdoc\"\\ndirect-max = 4\\nskip = true\\n' > {w}/c.toml"],
     "inputs": {"config": "{w}/c.toml"}, "text": {"config": True},
     "run": "rubiconv --config {config} apply -i {w}/in.h5 -o {out}"},
]
