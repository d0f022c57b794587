#!/usr/bin/python3
"""split_keys.py KV.H5 FIRST OUT_DIR CHUNK: writes OUT_DIR/first.h5 with /keys[:FIRST]
and OUT_DIR/part_NNN.h5 with the following keys CHUNK at a time (as a KV cache
grows during decoding), for the append benchmark. Plain h5py files: louver-index
accepts files without a neurkit schema where it expects user data."""
import sys

import h5py

src, first, out, chunk = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
with h5py.File(src, "r") as f:
    keys = f["/keys"][...]
with h5py.File(f"{out}/first.h5", "w") as g:
    g["/keys"] = keys[:first]
parts = 0
for start in range(first, keys.shape[0], chunk):
    with h5py.File(f"{out}/part_{parts:03d}.h5", "w") as g:
        g["/keys"] = keys[start:start + chunk]
    parts += 1
print(parts)
