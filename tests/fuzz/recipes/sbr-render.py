"""sbr-render: every verb that reads a file (tests/fuzz/fuzz.py)."""

# A 24x24 crop of the shipped camera image as PNG, JPEG and binary PGM (PIL writes them), and a stack of two
# of them as nk-data /images. Image files are not HDF5: they are marked as text so that they get the byte-level
# mutators (text edits, truncation, byte flips, empty, directory) and not the h5py ones.
IMAGES = ("/usr/bin/python3 -c \"from PIL import Image; a = Image.open('{src}/data/images/camera-64.png')"
          ".convert('RGB').resize((24, 24)); a.save('{w}/t.png'); a.save('{w}/t.jpg', quality=80); "
          "a.convert('L').save('{w}/t.pgm')\"")
STACK = "nk-data -q import {w}/t.png {w}/t.jpg --channels 3 -o {w}/stack.h5"
S = "sbr-render -q --threads 1 "
TINY = "--strokes 12 --iterations 10"
# Strokes of one painting (24x24, 12 strokes) and of the two-image stack.
STROKES = S + "paint -i {w}/t.png " + TINY + " -o {w}/strokes.h5"
STACK_STROKES = S + "paint -i {w}/stack.h5 --strokes 8 --iterations 6 -o {w}/sstrokes.h5"
# A decoder with 8 hidden units, trained for 3 steps.
DECODER = S + "train-decoder --steps 3 --batch 4 --hidden 8 -o {w}/dec.h5"

RECIPES = [
    {"tool": "sbr-render", "verb": "paint (PNG)",
     "setup": [IMAGES],
     "inputs": {"image": "{w}/t.png"}, "text": {"image": True}, "also": ["p.png", "p.svg", "frames"],
     "run": S + "paint -i {image} " + TINY + " --png p.png --svg p.svg --frames frames --frame-count 2 -o {out}"},
    {"tool": "sbr-render", "verb": "paint (JPEG)",
     "setup": [IMAGES],
     "inputs": {"image": "{w}/t.jpg"}, "text": {"image": True},
     "run": S + "paint -i {image} " + TINY + " --init random --no-audit -o {out}"},
    {"tool": "sbr-render", "verb": "paint (PGM)",
     "setup": [IMAGES],
     "inputs": {"image": "{w}/t.pgm"}, "text": {"image": True},
     "run": S + "paint -i {image} " + TINY + " --init grid --loss l1 -o {out}"},
    {"tool": "sbr-render", "verb": "paint (/images stack)",
     "setup": [IMAGES, STACK],
     "inputs": {"stack": "{w}/stack.h5"}, "also": ["s.png", "s-000000.png", "s-000001.png"],
     "run": S + "paint -i {stack} --strokes 8 --iterations 6 --png s.png -o {out}"},
    {"tool": "sbr-render", "verb": "paint -i - (standard input)",
     "setup": [IMAGES, STACK],
     "inputs": {"stack": "{w}/stack.h5"},
     "run": S + "paint -i - --strokes 8 --iterations 6 --index 1 -o {out} < {stack}"},
    {"tool": "sbr-render", "verb": "paint --decoder",
     "setup": [IMAGES, DECODER],
     "inputs": {"decoder": "{w}/dec.h5"},
     "run": S + "paint -i {w}/t.png --decoder {decoder} --strokes 8 --iterations 4 -o {out}"},
    {"tool": "sbr-render", "verb": "paint --config",
     "setup": [IMAGES,
               "printf 'threads = 1\\nquiet = true\\nseed = 4\\n[paint]\\nstrokes = 12\\niterations = 10\\n"
               "init = \"grid\"\\nloss = \"l1\"\\nscales = \"0.5,1\"\\naudit-every = 5\\nmin-opacity = 0.7\\n' > {w}/c.toml"],
     "inputs": {"config": "{w}/c.toml"}, "text": {"config": True},
     "run": "sbr-render --config {config} paint -i {w}/t.png -o {out}"},
    {"tool": "sbr-render", "verb": "render",
     "setup": [IMAGES, STROKES],
     "inputs": {"strokes": "{w}/strokes.h5"}, "also": ["r.svg"],
     "run": S + "render -i {strokes} --size 36x36 --svg r.svg -o {out}"},
    {"tool": "sbr-render", "verb": "render -i - (stack, --index)",
     "setup": [IMAGES, STACK, STACK_STROKES],
     "inputs": {"strokes": "{w}/sstrokes.h5"},
     "run": S + "render -i - --index 1 -o {out} < {strokes}"},
    {"tool": "sbr-render", "verb": "audit",
     "setup": [IMAGES, STROKES],
     "inputs": {"strokes": "{w}/strokes.h5"},
     "run": S + "audit -i {strokes} --target {w}/t.png"},
    {"tool": "sbr-render", "verb": "audit --target (PNG)",
     "setup": [IMAGES, STROKES],
     "inputs": {"target": "{w}/t.png"}, "text": {"target": True},
     "run": S + "audit -i {w}/strokes.h5 --target {target} --summary"},
    {"tool": "sbr-render", "verb": "audit (stack)",
     "setup": [IMAGES, STACK, STACK_STROKES],
     "inputs": {"strokes": "{w}/sstrokes.h5", "target": "{w}/stack.h5"},
     "run": S + "audit -i {strokes} --target {target}"},
    {"tool": "sbr-render", "verb": "speed",
     "setup": [IMAGES, STROKES],
     "inputs": {"strokes": "{w}/strokes.h5"},
     "run": S + "speed -i {strokes} --repeats 1 --segments 4"},
    {"tool": "sbr-render", "verb": "speed --target",
     "setup": [IMAGES, STACK, STACK_STROKES],
     "inputs": {"target": "{w}/stack.h5"},
     "run": S + "speed -i {w}/sstrokes.h5 --target {target} --index 1 --repeats 1 --segments 4"},
    {"tool": "sbr-render", "verb": "train-decoder --images",
     "setup": [IMAGES, STACK],
     "inputs": {"images": "{w}/stack.h5"},
     "run": S + "train-decoder --images {images} --steps 3 --batch 4 --hidden 8 -o {out}"},
    {"tool": "sbr-render", "verb": "train-decoder --images (PNG)",
     "setup": [IMAGES],
     "inputs": {"images": "{w}/t.png"}, "text": {"images": True},
     "run": S + "train-decoder --images {images} --steps 3 --batch 4 --hidden 8 -o {out}"},
]
