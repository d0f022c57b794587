"""FAISS peers of louver-index's benchmark (Debian's python3-faiss), on the
run's kv.h5 and hits.h5 (louver-index query --topk-oracle; its hits are
checked against the dense exact scan in the run). Prints the FAISS version,
then one line per peer:

- IVF (the approximate index Louver is compared with at equal work):
  IndexIVFFlat with inner product, nlist = N / 64 (lists as large as
  Louver's clusters), k-means (10 iterations) trained on a random sample of
  16 keys per list (Debian's FAISS trains slowly; the full set does not
  change the recall much and would take minutes at 128K). Each query's T is
  applied with range_search; nprobe is chosen so that the keys scanned (the
  sizes of the probed lists) match Louver's scanned fraction as closely as
  possible, then 2x and 4x that budget. Recall against Louver's hits.
- IndexFlatIP.range_search with each query's T: the exact dense scan a user
  would run instead of Louver (float32 scores: a key within rounding of T
  may fall on either side, counted as missed or extra).
- IndexHNSWFlat (inner product, M = 32, efConstruction 40): the graph index
  a user would pick for approximate search, asked for the top-k with k =
  Louver's scanned keys per query (its budget) and efSearch = k, its results
  cut at T.

One query per range_search call (each has its own T).

usage: faiss_peers.py kv.h5 hits.h5 THREADS
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
print(f"faiss {faiss.__version__}")
m = len(queries)
want = [set(ids[off[q]:off[q + 1]].tolist()) for q in range(m)]


def score(found):
    hit = extra = total = 0
    for q in range(m):
        got = set(found[q].tolist())
        hit += len(want[q] & got)
        extra += len(got - want[q])
        total += len(want[q])
    return hit / total, extra


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
    return score(found)[0], seconds


for factor in (1, 2, 4):
    target = min(1.0, factor * louver_fraction)
    nprobe = int(np.argmin(np.abs(cumulative - target))) + 1
    recall, seconds = run(nprobe)
    print(f"faiss-ivf nlist={nlist} nprobe={nprobe}: scanned {100 * scanned(nprobe):.1f}% "
          f"(Louver x{factor}), recall {recall:.3f}, {1e3 * seconds / len(queries):.3f} ms/query, build {build:.2f} s")



flat = faiss.IndexFlatIP(d)
flat.add(keys)
best, found = float("inf"), None
for _ in range(3):  # the fastest of three rounds, as louver-index --repeats 3
    t0 = time.perf_counter()
    out = []
    for q in range(m):
        lims, _, got = flat.range_search(queries[q:q + 1], float(np.float32(thr[q])))
        out.append(got[lims[0]:lims[1]])
    best = min(best, time.perf_counter() - t0)
    found = out
recall, extra = score(found)
print(f"faiss-flat range_search (exact dense peer): recall {recall:.4f}, {extra} extra, {1e3 * best / m:.3f} ms/query")

t0 = time.perf_counter()
hnsw = faiss.IndexHNSWFlat(d, 32, faiss.METRIC_INNER_PRODUCT)
hnsw.hnsw.efConstruction = 40
hnsw.add(keys)
build = time.perf_counter() - t0
k = max(1, int(round(louver_fraction * n)))
hnsw.hnsw.efSearch = k
t0 = time.perf_counter()
scores, got = hnsw.search(queries, k)
seconds = time.perf_counter() - t0
found = [got[q][(got[q] >= 0) & (scores[q] >= thr[q])] for q in range(m)]
recall, _ = score(found)
print(f"faiss-hnsw M=32 top-{k} (Louver's scanned keys, efSearch {k}): recall {recall:.3f}, "
      f"{1e3 * seconds / m:.3f} ms/query, build {build:.1f} s")
