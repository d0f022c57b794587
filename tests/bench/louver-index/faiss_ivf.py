"""FAISS IVF baseline for louver-index's benchmark (Debian's python3-faiss).

IndexIVFFlat with inner product, nlist = N / 64 (lists as large as Louver's
clusters), k-means (10 iterations) trained on a random sample of 16 keys per
list (Debian's FAISS trains slowly; the full set does not change the recall
much and would take minutes at 128K). For each query, the threshold T of
Louver's run (hits.h5 /threshold) is applied with range_search; nprobe is
chosen so that the keys scanned (the sizes of the probed lists) match
Louver's scanned fraction as closely as possible, then also at 2x and 4x that
budget. Recall is against Louver's hits, which the run checks against the
dense exact scan. Prints one line per budget.

usage: faiss_ivf.py kv.h5 hits.h5 THREADS
"""
import sys
import time

import faiss
import h5py
import numpy as np

kv, hits, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
faiss.omp_set_num_threads(threads)
f = h5py.File(kv, "r")
keys = np.ascontiguousarray(f["/keys"][...], dtype=np.float32)
queries = np.ascontiguousarray(f["/queries"][...], dtype=np.float32)
h = h5py.File(hits, "r")
thr = h["/threshold"][...].astype(np.float32)
off, ids = h["/offsets"][...], h["/ids"][...]
louver_fraction = float(h.attrs["scanned_fraction"])
n, d = keys.shape
nlist = max(1, n // 64)
quantizer = faiss.IndexFlatIP(d)
index = faiss.IndexIVFFlat(quantizer, d, nlist, faiss.METRIC_INNER_PRODUCT)
index.cp.niter = 10
sample = np.random.default_rng(0).choice(n, size=min(n, 16 * nlist), replace=False)
t0 = time.perf_counter()
index.train(keys[np.sort(sample)])
index.add(keys)
build = time.perf_counter() - t0
sizes = np.array([index.invlists.list_size(i) for i in range(nlist)])


# Fraction of keys scanned at every nprobe: the lists in the quantizer's order, cumulated.
_, order = quantizer.search(queries, nlist)
cumulative = np.cumsum(sizes[order], axis=1).mean(0) / n


def scanned(nprobe):
    return cumulative[nprobe - 1]


def run(nprobe):
    index.nprobe = nprobe
    t0 = time.perf_counter()
    found = []
    for q in range(len(queries)):  # one threshold per query
        lims, _, got = index.range_search(queries[q:q + 1], float(thr[q]))
        found.append(got[lims[0]:lims[1]])
    seconds = time.perf_counter() - t0
    total = hit = 0
    for q in range(len(queries)):
        want = set(ids[off[q]:off[q + 1]].tolist())
        hit += len(want & set(found[q].tolist()))
        total += len(want)
    return hit / total, seconds


for factor in (1, 2, 4):
    target = min(1.0, factor * louver_fraction)
    nprobe = int(np.argmin(np.abs(cumulative - target))) + 1
    recall, seconds = run(nprobe)
    print(f"faiss-ivf nlist={nlist} nprobe={nprobe}: scanned {100 * scanned(nprobe):.1f}% "
          f"(Louver x{factor}), recall {recall:.3f}, {1e3 * seconds / len(queries):.3f} ms/query, build {build:.2f} s")
