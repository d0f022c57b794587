"""nk-data: every verb that reads a file (tests/fuzz/fuzz.py)."""
import shlex

D = "nk-data -q --threads 1 "


def py(code):
    """A setup step running Python code with the recipe's folder as argv[1] (braces kept from str.format)."""
    return "/usr/bin/python3 -c " + shlex.quote(code.replace("{", "{{").replace("}", "}}")) + " {w}"


# 16x16 crops of scikit-image's test images (gray camera, RGB astronaut) in every format import decodes: 8-bit
# gray and RGB PNG, 16-bit gray PNG, RGBA PNG, JPEG, binary PGM and PPM, BMP, TGA and GIF. Image, IDX, gzip and CSV
# files are not HDF5: they are marked as text so that they get the byte-level mutators (text edits, truncation,
# byte flips, empty, directory) and not the h5py ones.
IMAGES = py("import importlib.util, os, sys, numpy as np; from PIL import Image; w = sys.argv[1]\n"
            "d = os.path.join(os.path.dirname(importlib.util.find_spec('skimage').origin), 'data')\n"
            "g = Image.open(d + '/camera.png').convert('L').crop((200, 60, 216, 76))\n"
            "a = Image.open(d + '/astronaut.png').convert('RGBA').resize((16, 16)); c = a.convert('RGB')\n"
            "g.save(w + '/g.png'); c.save(w + '/c.png'); a.save(w + '/ca.png'); c.save(w + '/c.jpg', quality=80)\n"
            "g.save(w + '/g.pgm'); c.save(w + '/c.ppm'); c.save(w + '/c.bmp'); c.save(w + '/c.tga')\n"
            "c.convert('P').save(w + '/c.gif')\n"
            "Image.fromarray(np.asarray(g).astype(np.uint16) * 257).save(w + '/g16.png')")
# Items 0-3 of the Fashion-MNIST test set as IDX files (count field set to 4), raw and gzip-compressed.
IDX = py("import gzip, sys; w = sys.argv[1]; F = '/usr/share/datasets/fashion-mnist/'\n"
         "im = gzip.open(F + 't10k-images-idx3-ubyte.gz').read(16 + 4 * 784)\n"
         "lb = gzip.open(F + 't10k-labels-idx1-ubyte.gz').read(8 + 4)\n"
         "im = im[:4] + (4).to_bytes(4, 'big') + im[8:]; lb = lb[:4] + (4).to_bytes(4, 'big') + lb[8:]\n"
         "open(w + '/i.idx', 'wb').write(im); open(w + '/l.idx', 'wb').write(lb)\n"
         "open(w + '/i.idx.gz', 'wb').write(gzip.compress(im, mtime=0))\n"
         "open(w + '/l.idx.gz', 'wb').write(gzip.compress(lb, mtime=0))")
# CSV tables: a header and three rows; comments, blank lines, CR LF and spaces around fields; tab-separated.
CSV = "printf 'a,b,c\\n1,2,3\\n4.5,-5,6e-3\\n0,0.25,-1e-2\\n' > {w}/t.csv"
CSV_CRLF = "printf '# comment\\r\\nx, y ,z\\r\\n\\r\\n1,2,3\\r\\n-1.5,2e-3,7\\r\\n# end\\r\\n' > {w}/crlf.csv"
TSV = "printf '1\\t2\\n3\\t4\\n5\\t6\\n' > {w}/t.tsv"
# HDF5 inputs made by nk-data itself: an RGB image stack, Fashion-MNIST items and labels, a CSV matrix.
STACK = D + "import {w}/g.png {w}/c.png --channels 3 -o {w}/stack.h5"
FMNIST = D + "import-idx {w}/i.idx.gz {w}/l.idx.gz -o {w}/fmnist.h5"
VECTORS = D + "import-csv {w}/t.csv -o {w}/vectors.h5"
# A file of other dtypes and shapes: uint8 [N,H,W], float64 [H,W], int16 [N], complex, compound, enum, a scalar,
# strings, nested groups, numeric and array root attributes.
MIXED = py("import h5py, numpy as np, sys; w = sys.argv[1]; r = np.random.default_rng(0)\n"
           "with h5py.File(w + '/mixed.h5', 'w') as f:\n"
           "    f.attrs['nk_schema'] = 'test.mixed/1'; f.attrs['count'] = np.int64(3); f.attrs['scale'] = 0.5\n"
           "    f.attrs['sizes'] = np.array([3, 4, 5], np.int32); f.attrs['note'] = 'a note'\n"
           "    f['/u8'] = r.integers(0, 256, (3, 6, 5), dtype=np.uint8); f['/u8'].attrs['dims'] = 'N,H,W'\n"
           "    f['/img'] = r.random((6, 5)); f['/img'].attrs['units'] = 'au'\n"
           "    f['/g/i16'] = np.arange(-3, 4, dtype=np.int16); f['/g/i16'].attrs['dims'] = 'N'\n"
           "    f['/g/z'] = np.array([1 + 2j, 3 - 1j], np.complex64)\n"
           "    f['/g/rec'] = np.array([(1, 2.5), (3, 4.5)], dtype=[('a', '<i4'), ('b', '<f8')])\n"
           "    f.create_dataset('/g/e', data=np.array([0, 1, 1], np.int8), dtype=h5py.enum_dtype({'no': 0, 'yes': 1}, basetype='i1'))\n"
           "    f['/g/deep/scalar'] = 7.0\n"
           "    f['/names'] = np.array([b'one', b'two', b'three'], dtype=h5py.string_dtype())")
# Three shards of one run (nk_shard I/3) with every merge rule: concat (float, int, strings), same, offsets, sum,
# and item (a per-shard result under /results/); written out of order on the command line.
SHARDS = py("import h5py, numpy as np, sys; w = sys.argv[1]; r = np.random.default_rng(0)\n"
            "whole = r.normal(size=(7, 3)).astype(np.float32)\n"
            "hits = [r.integers(0, 50, size=r.integers(0, 4)) for _ in range(7)]\n"
            "for i, (a, b) in enumerate([(0, 3), (3, 5), (5, 7)]):\n"
            "    with h5py.File(w + '/part%d.h5' % i, 'w') as f:\n"
            "        f.attrs['nk_schema'] = 'test.shards/1'; f.attrs['nk_shard'] = '%d/3' % i; f.attrs['nk_command'] = 'x'\n"
            "        f['/x'] = whole[a:b]; f['/x'].attrs['dims'] = 'N,D'; f['/x'].attrs['units'] = 'm'\n"
            "        f['/ids'] = np.arange(a, b, dtype=np.int64)\n"
            "        f['/config'] = np.array([1.5, 2.5]); f['/config'].attrs['nk_merge'] = 'same'\n"
            "        f['/k'] = np.int64(4)\n"
            "        f['/partial'] = np.full((2, 2), i + 1, np.float32); f['/partial'].attrs['nk_merge'] = 'sum'\n"
            "        f['/offsets'] = np.concatenate([[0], np.cumsum([len(h) for h in hits[a:b]])]).astype(np.int64)\n"
            "        f['/offsets'].attrs['nk_merge'] = 'offsets'\n"
            "        f['/hits'] = np.concatenate([np.zeros(0, np.int64)] + [h.astype(np.int64) for h in hits[a:b]])\n"
            "        f['/names'] = np.array([('item%d' % k).encode() for k in range(a, b)], dtype=h5py.string_dtype())\n"
            "        f['/results/algo/run%d/score' % i] = np.array([float(i)]); f['/results/algo/run%d/score' % i].attrs['nk_merge'] = 'item'\n"
            "        f['/results/algo/run%d' % i].attrs['seed'] = i")
# Two tables without nk_shard (joined in command-line order).
TABLES = [CSV, "printf 'a,b,c\\n7,8,9\\n' > {w}/u.csv", VECTORS, D + "import-csv {w}/u.csv -o {w}/vectors2.h5"]

RECIPES = [
    # import: one recipe per image format (the mutated file is one of the inputs).
    {"tool": "nk-data", "verb": "import (PNG gray+RGB)",
     "setup": [IMAGES],
     "inputs": {"gray": "{w}/g.png", "rgb": "{w}/c.png"}, "text": {"gray": True, "rgb": True},
     "run": D + "import {gray} {rgb} -o {out}"},
    {"tool": "nk-data", "verb": "import (PNG RGBA, --resize)",
     "setup": [IMAGES],
     "inputs": {"rgba": "{w}/ca.png"}, "text": {"rgba": True},
     "run": D + "import {rgba} {w}/g.png --resize 12x10 --channels 1 -o {out}"},
    {"tool": "nk-data", "verb": "import (PNG 16-bit)",
     "setup": [IMAGES],
     "inputs": {"png16": "{w}/g16.png"}, "text": {"png16": True},
     "run": D + "import {png16} --channels 3 -o {out}"},
    {"tool": "nk-data", "verb": "import (JPEG)",
     "setup": [IMAGES],
     "inputs": {"jpeg": "{w}/c.jpg"}, "text": {"jpeg": True},
     "run": D + "import {jpeg} {w}/c.png -o {out}"},
    {"tool": "nk-data", "verb": "import (PGM, PPM)",
     "setup": [IMAGES],
     "inputs": {"pgm": "{w}/g.pgm", "ppm": "{w}/c.ppm"}, "text": {"pgm": True, "ppm": True},
     "run": D + "import {pgm} {ppm} --resize 8x8 -o {out}"},
    {"tool": "nk-data", "verb": "import (BMP, TGA, GIF)",
     "setup": [IMAGES],
     "inputs": {"bmp": "{w}/c.bmp", "tga": "{w}/c.tga", "gif": "{w}/c.gif"},
     "text": {"bmp": True, "tga": True, "gif": True},
     "run": D + "import {bmp} {tga} {gif} --resize 8x8 -o {out}"},
    {"tool": "nk-data", "verb": "import - (stdin)",
     "setup": [IMAGES],
     "inputs": {"png": "{w}/c.png"}, "text": {"png": True},
     "run": D + "import - {w}/g.png -o {out} < {png}"},
    # import-idx: gzip and raw IDX, images and labels.
    {"tool": "nk-data", "verb": "import-idx (gzip)",
     "setup": [IDX],
     "inputs": {"images": "{w}/i.idx.gz", "labels": "{w}/l.idx.gz"}, "text": {"images": True, "labels": True},
     "run": D + "import-idx {images} {labels} -o {out}"},
    {"tool": "nk-data", "verb": "import-idx (raw)",
     "setup": [IDX],
     "inputs": {"images": "{w}/i.idx", "labels": "{w}/l.idx"}, "text": {"images": True, "labels": True},
     "run": D + "import-idx {images} {labels} --offset 1 --limit 2 -o {out}"},
    {"tool": "nk-data", "verb": "import-idx (images only)",
     "setup": [IDX],
     "inputs": {"images": "{w}/i.idx"}, "text": {"images": True},
     "run": D + "import-idx {images} -o {out}"},
    # import-csv.
    {"tool": "nk-data", "verb": "import-csv",
     "setup": [CSV],
     "inputs": {"table": "{w}/t.csv"}, "text": {"table": True},
     "run": D + "import-csv {table} -o {out}"},
    {"tool": "nk-data", "verb": "import-csv (CR LF, comments)",
     "setup": [CSV_CRLF],
     "inputs": {"table": "{w}/crlf.csv"}, "text": {"table": True},
     "run": D + "import-csv {table} --dataset /a/b -o {out}"},
    {"tool": "nk-data", "verb": "import-csv (tab)",
     "setup": [TSV],
     "inputs": {"table": "{w}/t.tsv"}, "text": {"table": True},
     "run": D + "import-csv {table} --delimiter \"$(printf '\\t')\" -o {out}"},
    # export: PNG of a stack item, of uint8 and float64 data, CSV of 1-D and 2-D data, from standard input.
    {"tool": "nk-data", "verb": "export (PNG)",
     "setup": [IMAGES, STACK],
     "inputs": {"stack": "{w}/stack.h5"}, "also": ["e.png"],
     "run": D + "export {stack} --index 1 -o e.png"},
    {"tool": "nk-data", "verb": "export (PNG, IDX items)",
     "setup": [IDX, FMNIST],
     "inputs": {"fmnist": "{w}/fmnist.h5"}, "also": ["e.png"],
     "run": D + "export {fmnist} --index 3 --normalize -o e.png"},
    {"tool": "nk-data", "verb": "export (PNG uint8 [N,H,W])",
     "setup": [MIXED],
     "inputs": {"mixed": "{w}/mixed.h5"}, "also": ["e.png"],
     "run": D + "export {mixed} --dataset /u8 --index 2 -o e.png"},
    {"tool": "nk-data", "verb": "export (PNG float64 [H,W])",
     "setup": [MIXED],
     "inputs": {"mixed": "{w}/mixed.h5"},
     "run": D + "export {mixed} --dataset /img --normalize --format png -o {out}"},
    {"tool": "nk-data", "verb": "export (CSV 1-D)",
     "setup": [IDX, FMNIST],
     "inputs": {"fmnist": "{w}/fmnist.h5"}, "also": ["e.csv"],
     "run": D + "export {fmnist} --dataset /labels -o e.csv"},
    {"tool": "nk-data", "verb": "export (CSV 2-D)",
     "setup": [CSV, VECTORS],
     "inputs": {"vectors": "{w}/vectors.h5"},
     "run": D + "export {vectors} --dataset /vectors --format csv -o {out}"},
    {"tool": "nk-data", "verb": "export - (stdin)",
     "setup": [IMAGES, STACK],
     "inputs": {"stack": "{w}/stack.h5"}, "also": ["e.png"],
     "run": D + "export - -o e.png < {stack}"},
    # info: every format, on nk-data files and on a file of other types.
    {"tool": "nk-data", "verb": "info (tsv)",
     "setup": [IMAGES, STACK],
     "inputs": {"stack": "{w}/stack.h5"},
     "run": D + "info {stack} --format tsv"},
    {"tool": "nk-data", "verb": "info (json, mixed types)",
     "setup": [MIXED],
     "inputs": {"mixed": "{w}/mixed.h5"},
     "run": D + "info {mixed} --format json"},
    {"tool": "nk-data", "verb": "info (table, shards)",
     "setup": [SHARDS],
     "inputs": {"part": "{w}/part1.h5"},
     "run": D + "info {part} --format table"},
    {"tool": "nk-data", "verb": "info - (stdin)",
     "setup": [IDX, FMNIST],
     "inputs": {"fmnist": "{w}/fmnist.h5"},
     "run": D + "info - < {fmnist}"},
    # merge: shards with every rule; plain files in command-line order; one part on standard input.
    {"tool": "nk-data", "verb": "merge (shards)",
     "setup": [SHARDS],
     "inputs": {"p0": "{w}/part0.h5", "p1": "{w}/part1.h5", "p2": "{w}/part2.h5"},
     "run": D + "merge {p2} {p0} {p1} -o {out}"},
    {"tool": "nk-data", "verb": "merge --allow-partial",
     "setup": [SHARDS],
     "inputs": {"p0": "{w}/part0.h5", "p2": "{w}/part2.h5"},
     "run": D + "merge {p0} {p2} --allow-partial -o {out}"},
    {"tool": "nk-data", "verb": "merge (no shards)",
     "setup": TABLES,
     "inputs": {"a": "{w}/vectors.h5", "b": "{w}/vectors2.h5"},
     "run": D + "merge {a} {b} -o {out}"},
    {"tool": "nk-data", "verb": "merge - (stdin)",
     "setup": [SHARDS],
     "inputs": {"p1": "{w}/part1.h5"},
     "run": D + "merge {w}/part0.h5 - {w}/part2.h5 -o {out} < {p1}"},
    # --config: a TOML file of common and verb options.
    {"tool": "nk-data", "verb": "--config",
     "setup": ["printf 'a;b\\n1;2\\n3;4\\n' > {w}/s.csv",
               "printf 'threads = 1\\nquiet = true\\n[import-csv]\\ndelimiter = \";\"\\ndataset = \"/t/v\"\\n' > {w}/c.toml"],
     "inputs": {"config": "{w}/c.toml"}, "text": {"config": True},
     "run": "nk-data --config {config} import-csv {w}/s.csv -o {out}"},
]
