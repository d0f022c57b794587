# louver-index.sh - gen | build | query | append through files and pipes,
# checked against numpy's float64 scores; sharded queries; bad input.
. "$(dirname "$0")/lib.sh"

check "gen | build through a pipe" sh -c 'louver-index gen --n 4000 --d 64 --queries 30 --dv 16 --seed 3 -o - | louver-index build -i - --subspaces 8 --leaf-size 16 --buffer 100 -o index.h5'
check "gen the same file" louver-index -q gen --n 4000 --d 64 --queries 30 --dv 16 --seed 3 -o kv.h5
check "query --topk-oracle --compare-dense" louver-index -q query -i index.h5 --queries kv.h5 --topk-oracle 40 --compare-dense -o hits.h5
check "query --repeats 3 --compare-dense: the same hits as one round" sh -c 'louver-index -q query -i index.h5 --queries kv.h5 --topk-oracle 40 --repeats 3 --compare-dense -o hits_r.h5 && h5diff hits_r.h5 hits.h5 /ids /ids && h5diff hits_r.h5 hits.h5 /scanned /scanned'
check "query --threshold" louver-index -q query -i index.h5 --queries kv.h5 --threshold 2.5 -o hits_t.h5
check "query --method quest-threshold (exact, agrees with dense)" louver-index -q query -i index.h5 --queries kv.h5 --topk-oracle 40 --method quest-threshold --compare-dense -o quest_t.h5
check "query --method quest-topk --budget 0.05" louver-index -q query -i index.h5 --queries kv.h5 --topk-oracle 40 --method quest-topk --budget 0.05 --page-size 16 --compare-dense -o quest_k.h5
check "query --method ivf --budget 0.1: k-means lists, recall reported, hits all above T" sh -c 'louver-index -q query -i index.h5 --queries kv.h5 --topk-oracle 40 --method ivf --budget 0.1 --compare-dense -o ivf.h5 && '"$PY"' -c "
import h5py, numpy as np
h = h5py.File(\"ivf.h5\"); kv = h5py.File(\"kv.h5\")
a = h.attrs; assert a[\"method\"] == \"ivf\" and a[\"lists\"] == 63 and 0 < a[\"recall\"] <= 1 and 0.1 <= a[\"scanned_fraction\"] < 0.5, dict(a)
off, ids = h[\"offsets\"][()], h[\"ids\"][()]; k, q = kv[\"keys\"][()].astype(float), kv[\"queries\"][()].astype(float)
assert all((k[ids[off[r]:off[r + 1]]] @ q[r] >= h[\"threshold\"][r] - 1e-9).all() for r in range(len(off) - 1))"'
check "attend (sparse vs dense attention)" louver-index -q attend -i index.h5 --queries kv.h5 --topk-oracle 40 -o att.h5
check "attend with every key (T below all scores) equals dense" louver-index -q attend -i index.h5 --queries kv.h5 --threshold -1e30 -o att_all.h5
check "attend --mass 0.99" louver-index -q attend -i index.h5 --queries kv.h5 --mass 0.99 -o att_mass.h5
check "query --mass 0.9 --mass-sample 64" louver-index -q query -i index.h5 --queries kv.h5 --mass 0.9 --mass-sample 64 --compare-dense -o hits_mass.h5
check "gen more keys" louver-index -q gen --n 700 --d 64 --queries 1 --dv 16 --seed 9 -o more.h5
check "append 700 keys (buffer flushes into codes)" louver-index -q append -i index.h5 --keys more.h5 -o index2.h5
check "query after appends" louver-index -q query -i index2.h5 --queries kv.h5 --topk-oracle 47 -o hits2.h5
check "append with --rebuild-growth 1.1 rebuilds the codebooks" sh -c 'louver-index -q append -i index.h5 --keys more.h5 --rebuild-growth 1.1 -o index3.h5 && [ "$(nk-data info index3.h5 --format tsv | awk -F"\t" "\$2==\"rebuilt_heads\" {print \$7}")" = 1 ]'
check "append with rebuilds off keeps the old codebooks" sh -c 'louver-index -q append -i index.h5 --keys more.h5 --rebuild-growth 0 --rebuild-ratio 0 -o index4.h5 && [ "$(nk-data info index4.h5 --format tsv | awk -F"\t" "\$2==\"rebuilt_heads\" {print \$7}")" = 0 ]'
check "query after a rebuild" louver-index -q query -i index3.h5 --queries kv.h5 --topk-oracle 47 --compare-dense -o hits3.h5
for i in 0 1 2; do louver-index -q query -i index.h5 --queries kv.h5 --topk-oracle 40 --shard $i/3 -o "shard$i.h5"; done
check "merge sharded queries" nk-data -q merge shard2.h5 shard0.h5 shard1.h5 -o merged.h5
for i in 0 1; do
  SLURM_ARRAY_TASK_ID=$i SLURM_ARRAY_TASK_COUNT=2 bash "$NK_SOURCE/data/batch/louver-index.sbatch" index.h5 kv.h5 40 slurm 2>/dev/null
done
check "the sbatch example's shards merge to the whole run" sh -c 'nk-data -q merge slurm.shard-1.h5 slurm.shard-0.h5 -o slurm.h5 && h5diff slurm.h5 hits.h5 /ids /ids' 
check "GQA: 4 query heads over 2 KV heads" sh -c 'louver-index -q gen --n 1500 --d 32 --queries 5 --heads 2 --query-heads 4 -o gqa.h5 && louver-index -q build -i gqa.h5 --subspaces 4 -o gqa_index.h5 && louver-index -q query -i gqa_index.h5 --queries gqa.h5 --topk-oracle 15 -o gqa_hits.h5'
check "iid profile" sh -c 'louver-index -q gen --n 2000 --d 32 --queries 10 --profile iid -o iid.h5 && louver-index -q build -i iid.h5 -o iid_index.h5 && louver-index -q query -i iid_index.h5 --queries iid.h5 --topk-oracle 20 --compare-dense -o iid_hits.h5'

check "plot: KL per step of generations through an index (nk-lm generate --divergence), SVG" sh -c 'echo "The cat sat on the" > p.txt && nk-lm -q generate -m "$NK_SOURCE/data/lm/causal.h5" --prompts p.txt --max-new 30 --divergence -o g_own.h5 && nk-lm -q generate -m "$NK_SOURCE/data/lm/causal.h5" --prompts p.txt --max-new 30 --key-index louver --mass 0.99 --divergence -o g_louver.h5 && louver-index -q plot g_own.h5 g_louver.h5 -o kl.svg && grep -q "louver --mass 0.99" kl.svg && grep -q "spike level" kl.svg'
expect_fail "plot of a generation without /kl: exit 3 naming the dataset" 3 "/kl" sh -c 'nk-lm -q generate -m "$NK_SOURCE/data/lm/causal.h5" --prompts p.txt --max-new 4 -o g_plain.h5 >/dev/null && louver-index plot g_plain.h5 -o x.svg'
expect_fail "plot --row past the generations: exit 3" 3 "--row 5" louver-index plot g_own.h5 --row 5 -o x.svg
if "$PY" - <<'PYEOF'
import h5py, numpy as np, sys
fails = 0
def check(name, ok):
    global fails
    print(("ok   " if ok else "FAIL ") + name); fails += 0 if ok else 1
def verify(kv_keys, queries, hits_file, name, heads_map=None):
    h = h5py.File(hits_file, "r")
    off, ids, thr = h["/offsets"][...], h["/ids"][...], h["/threshold"][...]
    keys = kv_keys.astype(np.float64)
    bad = 0
    for r in range(len(thr)):
        kh = 0 if heads_map is None else heads_map(r)
        scores = (keys[kh] if keys.ndim == 3 else keys) @ queries[r].astype(np.float64)
        scale = np.abs(keys[kh] if keys.ndim == 3 else keys) @ np.abs(queries[r].astype(np.float64))
        got = set(ids[off[r]:off[r + 1]].tolist())
        must = set(np.nonzero(scores >= thr[r] + 1e-12 * scale)[0].tolist())   # clearly above T
        may = set(np.nonzero(scores >= thr[r] - 1e-12 * scale)[0].tolist())    # within rounding of T
        if not (must <= got <= may): bad += 1
    check(f"{name}: every key with score >= T returned, none below ({len(thr)} queries)", bad == 0)
    return h
kv = h5py.File("kv.h5", "r"); keys = kv["/keys"][...]; q = kv["/queries"][...]
h = verify(keys, q, "hits.h5", "topk-oracle")
check("top-k oracle returns at least k keys per query", np.all(np.diff(h["/offsets"][...]) >= 40))
check("scanned fraction below 1 (the index prunes)", h.attrs["scanned_fraction"] < 1.0)
verify(keys, q, "hits_t.h5", "fixed threshold")
verify(keys, q, "quest_t.h5", "quest-threshold")
qk = h5py.File("quest_k.h5", "r")
check(f"quest-topk reports its recall ({qk.attrs['recall']:.3f}) and scans at most its budget", 0 <= qk.attrs["recall"] <= 1 and qk.attrs["scanned_fraction"] <= 0.06)
more = h5py.File("more.h5", "r")["/keys"][...]
verify(np.concatenate([keys, more]), q, "hits2.h5", "after appends")
verify(np.concatenate([keys, more]), q, "hits3.h5", "after appends and a codebook rebuild")
a = h5py.File("att.h5", "r")
K = keys.astype(np.float64); V = kv["/values"][...].astype(np.float64)
logits = (q.astype(np.float64) @ K.T) / np.sqrt(K.shape[1])
p = np.exp(logits - logits.max(axis=1, keepdims=True)); p /= p.sum(axis=1, keepdims=True)
dense = p @ V
check("attend: dense output equals numpy softmax attention", np.allclose(a["/dense_output"][...], dense, rtol=1e-9, atol=1e-12))
thr = a["/threshold"][...]
hits_file = h5py.File("hits.h5", "r")  # query with the same index, queries and oracle: the same hits
off, hit_ids = hits_file["/offsets"][...], hits_file["/ids"][...]
check("attend used the same thresholds as query", np.array_equal(thr, hits_file["/threshold"][...]))
sparse = []
for r in range(len(thr)):
    keep = hit_ids[off[r]:off[r + 1]]
    w = np.exp(logits[r][keep] - logits[r][keep].max()); w /= w.sum()
    sparse.append(w @ V[keep])
check("attend: sparse output equals numpy softmax over the hits", np.allclose(a["/output"][...], np.array(sparse), rtol=1e-7, atol=1e-9))
check("attend: mass and relative error are consistent", np.all(a["/mass"][...] <= 1 + 1e-12) and np.all(a["/relative_error"][...] >= 0))
am = h5py.File("att_mass.h5", "r")
check(f"--mass 0.99 keeps at least 0.99 of the softmax mass on every query (least {am['/mass'][...].min():.5f})", am["/mass"][...].min() >= 0.99)
verify(keys, q, "hits_mass.h5", "--mass threshold")
al = h5py.File("att_all.h5", "r")
check("attend over every key has zero error and mass 1", np.max(al["/relative_error"][...]) < 1e-12 and np.min(al["/mass"][...]) > 1 - 1e-12)
m = h5py.File("merged.h5", "r"); w = h5py.File("hits.h5", "r")
check("merged shards equal the whole run", np.array_equal(m["/ids"][...], w["/ids"][...]) and np.array_equal(m["/offsets"][...], w["/offsets"][...]))
g = h5py.File("gqa.h5", "r")
gq = g["/queries"][...]
verify(g["/keys"][...], gq.reshape(-1, gq.shape[-1]), "gqa_hits.h5", "GQA", heads_map=lambda r: (r // gq.shape[1]) // 2)
i = h5py.File("iid.h5", "r")
verify(i["/keys"][...], i["/queries"][...], "iid_hits.h5", "iid")
sys.exit(1 if fails else 0)
PYEOF
then pass "numpy reference"; else fail "numpy reference"; fi

"$PY" - <<'PYEOF'
import h5py, numpy as np, shutil
kv = h5py.File("kv.h5", "r")
with h5py.File("nan_keys.h5", "w") as f:
    k = kv["/keys"][...].copy(); k[17, 5] = np.nan; f["/keys"] = k
with h5py.File("empty_keys.h5", "w") as f:
    f["/keys"] = np.zeros((0, 64), np.float32)
with h5py.File("d32_queries.h5", "w") as f:
    f["/queries"] = np.zeros((3, 32), np.float32)
shutil.copy("index.h5", "corrupt.h5")
with h5py.File("corrupt.h5", "a") as f:
    r = f["/head0/residuals"][...]; r[2, 100] = 0.0; f["/head0/residuals"][...] = r
shutil.copy("index.h5", "corrupt_codes.h5")
with h5py.File("corrupt_codes.h5", "a") as f:
    c = f["/head0/codes"][...]; c[0, 7] = 1 << 20; f["/head0/codes"][...] = c
PYEOF
expect_fail "NaN in keys" 3 "input 'nan_keys.h5': dataset /keys: NaN at index \[17,5\]" louver-index build -i nan_keys.h5 -o bad.h5
expect_fail "N = 0" 3 "dataset /keys: is empty" louver-index build -i empty_keys.h5 -o bad.h5
expect_fail "--repeats 0" 2 "repeat" louver-index query -i index.h5 --queries kv.h5 --threshold 0 --repeats 0 -o bad.h5
expect_fail "d mismatch between index and queries" 3 "dataset /queries: has d = 32 but the index has d = 64" louver-index query -i index.h5 --queries d32_queries.h5 --threshold 0 -o bad.h5
expect_fail "d mismatch on append" 3 "dataset /keys: has d = 32 but the index has d = 64" louver-index append -i index.h5 --keys iid.h5 -o bad.h5
expect_fail "residual that is not an upper bound" 3 "dataset /head0/residuals: key 100, subspace 2: residual is not an upper bound" louver-index query -i corrupt.h5 --queries kv.h5 --threshold 0 -o bad.h5
expect_fail "code out of range" 3 "dataset /head0/codes: key 7 has cluster 1048576 outside" louver-index query -i corrupt_codes.h5 --queries kv.h5 --threshold 0 -o bad.h5
expect_fail "a foreign file as index" 3 "nk_schema is 'louver-index.kv/1', expected louver-index.index/" louver-index query -i kv.h5 --queries kv.h5 --threshold 0 -o bad.h5
expect_fail "threshold and oracle together" 2 "error: --threshold excludes --topk-oracle" louver-index query -i index.h5 --queries kv.h5 --threshold 1 --topk-oracle 3 -o bad.h5
expect_fail "--mass with --threshold" 2 "error: --(mass|threshold) excludes --(mass|threshold)" louver-index query -i index.h5 --queries kv.h5 --threshold 1 --mass 0.9 -o bad.h5
expect_fail "no threshold" 2 "give exactly one of --threshold, --topk-oracle and --mass" louver-index query -i index.h5 --queries kv.h5 -o bad.h5
expect_fail "attend without values" 3 "dataset /values: missing: attend needs an index built with /values" louver-index attend -i iid_index.h5 --queries iid.h5 --threshold 0 -o bad.h5
expect_fail "subspaces > d" 2 "--subspaces must be in 1..d = 64" louver-index build -i kv.h5 --subspaces 65 -o bad.h5
[ ! -e bad.h5 ] && pass "no output file from failed runs" || fail "a failed run left bad.h5"
no_temp_files "no temp files" "$WORK"
finish
