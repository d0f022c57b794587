"""tnqe-encode: every verb that reads a file (tests/fuzz/fuzz.py)."""

# skimage's shipped images, as tests/cli/lib.sh finds them.
SKI = "$(/usr/bin/python3 -c 'import skimage, os; print(os.path.join(os.path.dirname(skimage.__file__), \"data\"))')"
# Two 8x8 gray images (6 qubits each): camera and astronaut.
GRAY = "nk-data -q import " + SKI + "/camera.png " + SKI + "/astronaut.png --channels 1 --resize 8x8 -o {w}/img.h5"
T = "tnqe-encode -q --threads 1 "

RECIPES = [
    {"tool": "tnqe-encode", "verb": "encode",
     "setup": [GRAY],
     "inputs": {"data": "{w}/img.h5"}, "also": ["qasm"],
     "run": T + "encode -i {data} --bond 2 --qasm qasm -o {out}"},
    {"tool": "tnqe-encode", "verb": "encode -i - (RGB, --pad)",
     "setup": ["nk-data -q import " + SKI + "/astronaut.png --channels 3 --resize 6x6 -o {w}/rgb.h5"],
     "inputs": {"data": "{w}/rgb.h5"},
     "run": "cat {data} | " + T + "encode -i - --pad --bond 4 --tol 0.1 -o {out}"},
    {"tool": "tnqe-encode", "verb": "encode /vectors",
     "setup": ["printf 'a,b,c,d,e,f,g,h,i,j,k\\n0.1,0.5,0.2,0.9,0.3,0.7,0.4,0.05,0.6,0.1,0.8\\n"
               "1,-2,3,4,5,-6,7,8,9,10,11\\n' > {w}/v.csv",
               "nk-data -q import-csv {w}/v.csv -o {w}/vec.h5"],
     "inputs": {"data": "{w}/vec.h5"},
     "run": T + "encode -i {data} --bond 2 --strategy parallel -o {out}"},
    {"tool": "tnqe-encode", "verb": "encode --config",
     "setup": [GRAY,
               "printf 'threads = 1\\nquiet = true\\n[encode]\\nbond = 2\\nstrategy = \"parallel\"\\nindex = 1\\n' > {w}/c.toml"],
     "inputs": {"config": "{w}/c.toml"}, "text": {"config": True},
     "run": "tnqe-encode --config {config} encode -i {w}/img.h5 -o {out}"},
    {"tool": "tnqe-encode", "verb": "encode --layers --train",
     "setup": [GRAY],
     "inputs": {"data": "{w}/img.h5"},
     "run": T + "encode -i {data} --layers 2 --train --iterations 5 -o {out}"},
    {"tool": "tnqe-encode", "verb": "baseline",
     "setup": [GRAY],
     "inputs": {"data": "{w}/img.h5"}, "also": ["bq"],
     "run": T + "baseline -i {data} --qasm bq -o {out}"},
    {"tool": "tnqe-encode", "verb": "merge",
     "setup": [GRAY,
               T + "encode -i {w}/img.h5 --bond 2 --shard 0/2 -o {w}/s0.h5",
               T + "encode -i {w}/img.h5 --bond 2 --shard 1/2 -o {w}/s1.h5"],
     "inputs": {"a": "{w}/s1.h5", "b": "{w}/s0.h5"},
     "run": T + "merge -i {a} {b} -o {out}"},
    {"tool": "tnqe-encode", "verb": "simulate",
     "setup": [GRAY, T + "encode -i {w}/img.h5 --bond 2 -o {w}/seq.h5"],
     "inputs": {"circuits": "{w}/seq.h5"}, "also": ["dec.png"],
     "run": T + "simulate -i {circuits} --index 0 --decode dec.png -o {out}"},
    {"tool": "tnqe-encode", "verb": "simulate (parallel, noise)",
     "setup": [GRAY, T + "encode -i {w}/img.h5 --bond 2 --strategy parallel -o {w}/par.h5"],
     "inputs": {"circuits": "{w}/par.h5"},
     "run": T + "--seed 3 simulate -i {circuits} --noise 0.01 --trajectories 5 -o {out}"},
    {"tool": "tnqe-encode", "verb": "simulate --qasm --target",
     "setup": [GRAY, T + "encode -i {w}/img.h5 --bond 2 --qasm {w}/qasm -o {w}/seq.h5"],
     "inputs": {"qasm": "{w}/qasm/item_000001.qasm", "target": "{w}/img.h5"}, "text": {"qasm": True},
     "run": T + "simulate --qasm {qasm} --target {target} --index 1 -o {out}"},
    {"tool": "tnqe-encode", "verb": "sweep",
     "setup": [GRAY],
     "inputs": {"data": "{w}/img.h5"}, "also": ["plot.svg"],
     "run": T + "sweep -i {data} --index 1 --bonds 2,4 --layers 2 --iterations 3 --plot plot.svg -o {out}"},
]
