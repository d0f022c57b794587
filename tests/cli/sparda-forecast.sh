# sparda-forecast.sh - gen | select | train | eval through files and pipes;
# the selector's and the Forecast's blocks against numpy (pooled keys, group
# softmax sums, forced blocks, top-k with ties to the lower index); eval's
# recall and coverage recomputed in numpy; planted traces learned from zero
# to recall >= 0.95; batched, h5py-written and nk-lm-captured traces; bad input.
. "$(dirname "$0")/lib.sh"

SEL="--block 16 --topk 4"
check "gen --planted | select --by selector through a pipe" sh -c "sparda-forecast gen --planted --noise 0.05 --layers 3 --tokens 512 --block 16 --seed 2 -o - | tee p.h5 | sparda-forecast -q select -i - $SEL -o sel.h5"
check "train --init zero (KL only) on the planted trace" sparda-forecast -q train -i p.h5 $SEL --init zero --steps 600 -o fz.h5
check "train --kl topk (lstsq start)" sparda-forecast -q train -i p.h5 $SEL --kl topk --steps 50 -o ft.h5
check "select --by forecast" sparda-forecast -q select -i p.h5 --by forecast --forecast fz.h5 $SEL -o fsel.h5
check "eval prints a per-layer table" sh -c "sparda-forecast eval -i p.h5 --forecast fz.h5 $SEL -o ev.h5 | head -1 | grep -q '^layer	recall	coverage	queries'"
check "eval --positions 200:330" sparda-forecast -q eval -i p.h5 --forecast fz.h5 $SEL --positions 200:330 -o evp.h5
check "a batch of 3 sequences (leading axis)" sh -c "sparda-forecast -q gen --planted --batch 3 --layers 2 --tokens 256 --block 16 --seed 3 -o b.h5 && sparda-forecast -q select -i b.h5 $SEL -o bsel.h5 && sparda-forecast -q train -i b.h5 $SEL --steps 20 -o bf.h5 && sparda-forecast -q select -i b.h5 --by forecast --forecast bf.h5 $SEL -o bfsel.h5"
check "init 0 blocks, 3 local blocks" sparda-forecast -q select -i p.h5 --block 16 --topk 5 --init-blocks 0 --local-blocks 3 -o sel03.h5

if "$PY" - <<'PYEOF'
import h5py, numpy as np, sys
fails = 0
def check(name, ok):
    global fails
    print(("ok   " if ok else "FAIL ") + name); fails += 0 if ok else 1
def rope(x, pos, theta):  # rotate-half, x [n, heads, d]
    d = x.shape[-1]; half = d // 2
    inv = theta ** (-2.0 * np.arange(half) / d)
    ang = pos[:, None] * inv[None, :]; c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    a, b = x[..., :half], x[..., half:]
    return np.concatenate([a * c - b * s, b * c + a * s], -1)
def forced(t, B, init, local):
    own = t // B
    return sorted(set(range(min(init, own + 1))) | set(range(max(own - local + 1, 0), own + 1)))
def select(scores_fn, T, G, B, init, local, topk):
    K = init + local + topk; out = np.full((G, T, K), -1, np.int32)
    for g in range(G):
        for t in range(T):
            f = forced(t, B, init, local); nc = t // B
            pool = [j for j in range(nc) if j not in f]
            if pool:
                s = scores_fn(g, t)[:nc]
                pool = sorted(pool, key=lambda j: (-s[j], j))[:topk]
            row = f + pool; out[g, t, :len(row)] = row
    return out
def pooled(k, B):
    H, T, d = k.shape; nb = T // B
    return k[:, :nb * B].reshape(H, nb, B, d).mean(2)
def selector_scores(q, kb, Gs):
    d = q.shape[-1]
    def fn(g, t):
        nc = t // B
        tot = np.zeros(kb.shape[1])
        for h in range(g * Gs, (g + 1) * Gs):
            z = kb[g, :nc] @ q[h, t] / np.sqrt(d)
            if nc: p = np.exp(z - z.max()); tot[:nc] += p / p.sum()
        return tot
    return fn
B, topk = 16, 4
f = h5py.File("p.h5"); L = f.attrs["layers"]; theta = f.attrs["rope_theta"]
sel = h5py.File("sel.h5"); fsel = h5py.File("fsel.h5"); fc = h5py.File("fz.h5")
for l in range(L):
    g = f[f"capture/layer_{l:02d}"]; q = g["q"][...].astype(np.float64); k = g["k"][...].astype(np.float64)
    Hq, T, d = q.shape; Hkv = k.shape[0]; kb = pooled(k, B)
    want = select(selector_scores(q, kb, Hq // Hkv), T, Hkv, B, 1, 2, topk)
    got = sel[f"layer_{l:02d}/blocks"][...]
    check(f"layer {l}: selector blocks equal numpy's ({(got == want).all(1).all(1).mean() if got.shape == want.shape else 'shape'} rows)", got.shape == want.shape and (got == want).all())
    # the Forecast: f_g = RoPE_t(h W)[g], ranked by f_g . Kb_j / sqrt(d)
    src = f[f"capture/layer_{max(l - 1, 0):02d}/attn_in"][...].astype(np.float64)
    w = fc["layer_00/w_curr" if l == 0 else f"layer_{l - 1:02d}/w_forecast"][...].astype(np.float64)
    fq = rope((src @ w).reshape(T, Hkv, d), np.arange(T, dtype=np.float64), theta)
    want = select(lambda g_, t: kb[g_] @ fq[t, g_] / np.sqrt(d), T, Hkv, B, 1, 2, topk)
    got = fsel[f"layer_{l:02d}/blocks"][...]
    agree = (got == want).all(-1).mean()
    check(f"layer {l}: forecast blocks equal numpy's on {agree:.4f} of queries (>= 0.999; float rounding may swap near-ties)", agree >= 0.999)
    if l == 1:
        s03 = h5py.File("sel03.h5")["layer_01/blocks"][...]
        want = select(selector_scores(q, kb, Hq // Hkv), T, Hkv, B, 0, 3, 5)
        check("--init-blocks 0 --local-blocks 3 --topk 5: equal numpy's", s03.shape == want.shape and (s03 == want).all())
# eval: recall and coverage recomputed over positions 200..329
ev = h5py.File("evp.h5")
for l in range(L):
    g = f[f"capture/layer_{l:02d}"]; q = g["q"][...].astype(np.float64); k = g["k"][...].astype(np.float64)
    Hq, T, d = q.shape; Hkv = k.shape[0]; Gs = Hq // Hkv
    S = sel[f"layer_{l:02d}/blocks"][...]; F = fsel[f"layer_{l:02d}/blocks"][...]
    rec, cov, n = 0.0, 0.0, 0
    for gg in range(Hkv):
        for t in range(200, 330):
            fo = forced(t, B, 1, 2); nf = len(fo)
            if len([j for j in range(t // B) if j not in fo]) <= topk: continue
            s_nf = set(S[gg, t, nf:]) - {-1}; f_all = set(F[gg, t]) - {-1}; s_all = set(S[gg, t]) - {-1}
            rec += len(s_nf & f_all) / topk
            mass = np.zeros(t // B + 1)
            for h in range(gg * Gs, (gg + 1) * Gs):
                z = k[gg, :t + 1] @ q[h, t] / np.sqrt(d); p = np.exp(z - z.max()); p /= p.sum()
                np.add.at(mass, np.arange(t + 1) // B, p / Gs)
            cov += sum(mass[j] for j in f_all) / sum(mass[j] for j in s_all); n += 1
    check(f"layer {l}: eval recall {ev['recall'][l]:.6f} = numpy {rec / n:.6f}", abs(ev["recall"][l] - rec / n) < 1e-9)
    check(f"layer {l}: eval coverage {ev['coverage'][l]:.6f} = numpy {cov / n:.6f}", abs(ev["coverage"][l] - cov / n) < 1e-9)
    check(f"layer {l}: eval counted {ev['queries'][l]} queries = numpy {n}", ev["queries"][l] == n)
full = h5py.File("ev.h5")
check(f"planted trace, trained from zero by KL: recall >= 0.95 in every layer ({np.round(full['recall'][...], 4)})", (full["recall"][...] >= 0.95).all())
check(f"... and coverage >= 0.99 ({np.round(full['coverage'][...], 4)})", (full["coverage"][...] >= 0.99).all())
loss = fc["loss"][...]
check(f"the KL falls during training (layer means {loss[:, :10].mean():.4f} -> {loss[:, -10:].mean():.4f})", loss[:, -10:].mean() < 0.5 * loss[:, :10].mean())
# batched: each sequence selected as its own trace
b = h5py.File("b.h5"); bs = h5py.File("bsel.h5")["layer_01/blocks"][...]
q = b["capture/layer_01/q"][...].astype(np.float64); k = b["capture/layer_01/k"][...].astype(np.float64)
ok = bs.shape == (3, 2, 256, 7)
for i in range(3):
    kb = pooled(k[i], B)
    ok = ok and (bs[i] == select(selector_scores(q[i], kb, 2), 256, 2, B, 1, 2, topk)).all()
check("batch axis: each sequence's selection equals numpy's", ok)
sys.exit(1 if fails else 0)
PYEOF
then pass "python reference checks"; else fail "python reference checks"; fi

# The decode engine, replayed over the planted trace: a device pool of 0.1 MiB
# (51 blocks of 2 KiB) so that blocks are evicted and fetched again. The
# CPU engine here (--device cpu, also where a GPU exists); the GPU's replay
# is compared with these outputs below.
DEC="--block 16 --topk 4 --positions 300:400 --device-mem 0.1 --device cpu"
check "decode --mode resident" sparda-forecast -q decode -i p.h5 --mode resident $DEC -o dres.h5
check "decode --mode sync (0.02 GB/s cap)" sparda-forecast -q decode -i p.h5 --mode sync $DEC --bandwidth 0.02 -o dsync.h5
check "decode --mode forecast" sparda-forecast -q decode -i p.h5 --mode forecast --forecast fz.h5 $DEC -o dfc.h5
check "a wrong forecast (trained on another trace)" sh -c "sparda-forecast -q gen --planted --layers 3 --tokens 512 --block 16 --seed 9 -o other9.h5 && sparda-forecast -q train -i other9.h5 $SEL --steps 20 -o wrong.h5"
check "decode --mode forecast --verify with the wrong forecast" sparda-forecast -q decode -i p.h5 --mode forecast --verify --forecast wrong.h5 $DEC -o dver.h5
check "decode --bandwidth auto, batched trace" sparda-forecast -q decode -i b.h5 --mode forecast --forecast bf.h5 --block 16 --topk 4 --positions 200:256 --device-mem 0.2 --bandwidth auto -o dbatch.h5
if "$PY" - <<'PYEOF'
import h5py, numpy as np, sys
fails = 0
def check(name, ok):
    global fails
    print(("ok   " if ok else "FAIL ") + name); fails += 0 if ok else 1
res, syn, fc, ver = [h5py.File(n) for n in ("dres.h5", "dsync.h5", "dfc.h5", "dver.h5")]
f = h5py.File("p.h5"); fsel = h5py.File("fsel.h5"); B = 16
for l in range(3):
    n = f"layer_{l:02d}/out"
    check(f"layer {l}: sync == resident bit for bit", (res[n][...] == syn[n][...]).all())
    check(f"layer {l}: forecast --verify (a wrong forecast) == sync bit for bit", (ver[n][...] == syn[n][...]).all())
    # forecast: attention over the Forecast's blocks, in numpy
    g = f[f"capture/layer_{l:02d}"]; q, k, v = [g[x][...].astype(np.float64) for x in "qkv"]
    Hq, T, d = q.shape; Hkv = k.shape[0]; G = Hq // Hkv; blocks = fsel[f"layer_{l:02d}/blocks"][...]
    want = np.zeros((Hq, 100, d))
    for i, t in enumerate(range(300, 400)):
        for h in range(Hq):
            js = sorted(set(blocks[h // G, t]) - {-1})
            idx = np.concatenate([np.arange(j * B, min((j + 1) * B, t + 1)) for j in js])
            z = k[h // G, idx] @ q[h, t] / np.sqrt(d); p = np.exp(z - z.max()); p /= p.sum()
            want[h, i] = p @ v[h // G, idx]
    err = np.abs(fc[n][...] - want).max() / np.abs(want).max()
    check(f"layer {l}: forecast output = numpy attention over the Forecast's blocks (rel {err:.1e} <= 1e-5)", err <= 1e-5)
for name, x in (("sync", syn), ("forecast", fc), ("verify", ver)):
    s = x["stats"]
    check(f"{name}: bytes copied {s['bytes'][0]} = misses {s['misses'][0]} x block bytes {s['block_bytes'][0]}", s["bytes"][0] == s["misses"][0] * s["block_bytes"][0] == s["misses"][0] * 2 * B * 16 * 4)
    check(f"{name}: every requested block is a hit or a miss, and blocks were evicted and fetched again ({s['misses'][0]} misses > 51 slots)", s["hits"][0] + s["misses"][0] == s["requested"][0] and s["misses"][0] > 51)
s = syn["stats"]; rate = s["bytes"][0] / s["copy_busy_seconds"][0]
# Never faster than the cap; within 10% of it on an idle machine (the benchmark reports it), but a
# busy one (ctest -j2) wakes the copy thread late: here within a factor of two.
check(f"the copy thread keeps the 0.02 GB/s cap ({rate / 1e9:.4f} GB/s while busy: at most 1.05x, at least 0.5x)", 0.5 <= rate / 2e7 <= 1.05)
check(f"... and sync's wall time covers the transfers ({s['wall_seconds'][0]:.3f} s >= {s['bytes'][0] / 2e7:.3f} s)", s["wall_seconds"][0] >= s["bytes"][0] / 2e7)
db = h5py.File("dbatch.h5")
check("batched decode: [B,Hq,P,d] outputs and an auto bandwidth", db["layer_01/out"].shape == (3, 4, 56, 16) and db["stats/bandwidth"][0] > 0)
sys.exit(1 if fails else 0)
PYEOF
then pass "decode against numpy and between modes"; else fail "decode against numpy and between modes"; fi


check "plot: recall and coverage per layer of two eval files" sparda-forecast plot -i ev.h5 evp.h5 -o recall.svg
check "plot: the step time by part of four decode files" sparda-forecast plot -i dres.h5 dsync.h5 dfc.h5 dver.h5 -o steps.svg
check "the SVGs parse, with a bar segment per part and mode and a point per layer" $PY -c "
import xml.dom.minidom as m, sys
bars = m.parse('steps.svg').getElementsByTagName('rect'); lines = m.parse('recall.svg')
sys.exit(0 if len(bars) >= 1 + 4 + 4 and 'forecast' in open('recall.svg').read() and 'sync' in open('steps.svg').read() else 1)"
expect_fail "plot: eval and decode files together" 2 "not both" sparda-forecast plot -i ev.h5 dsync.h5 -o x.svg
expect_fail "plot: a file of another kind" 3 "p.h5.*neither" sparda-forecast plot -i p.h5 -o x.svg

# A trace written by h5py with no nk_ attributes (float64, packed rows of two
# lengths with /capture/offsets as nk-lm capture --corpus writes them).
"$PY" - <<'PYEOF'
import h5py, numpy as np
src = h5py.File("p.h5")
with h5py.File("plain.h5", "w") as f:
    f.attrs["rope_theta"] = 10000.0
    for l in range(2):
        g = src[f"capture/layer_{l:02d}"]
        for n in ("attn_in", "q", "k"):
            f[f"capture/layer_{l:02d}/{n}"] = g[n][...].astype(np.float64)
with h5py.File("packed.h5", "w") as f:
    f.attrs["rope_theta"] = 10000.0
    f["capture/offsets"] = np.array([0, 300, 512], np.int64)
    for l in range(2):
        g = src[f"capture/layer_{l:02d}"]
        for n in ("attn_in", "q", "k", "v"):
            f[f"capture/layer_{l:02d}/{n}"] = g[n][...]
PYEOF
check "an h5py trace (float64, no v, no nk_schema) gives the same blocks" sh -c "sparda-forecast -q select -i plain.h5 $SEL -o plain_sel.h5 && $PY -c \"import h5py, numpy as np, sys; a = h5py.File('plain_sel.h5'); b = h5py.File('sel.h5'); sys.exit(0 if all((a[f'layer_0{l}/blocks'][...] == b[f'layer_0{l}/blocks'][...]).all() for l in range(2)) else 1)\""
check "packed rows (/capture/offsets): each row is its own sequence" sh -c "sparda-forecast -q select -i packed.h5 $SEL -o packed_sel.h5 && $PY -c \"
import h5py, numpy as np, sys
a = h5py.File('packed_sel.h5'); b = h5py.File('sel.h5')['layer_01/blocks'][...]
x = a['layer_01/blocks'][...]
ok = x.shape == (2, 512, 7) and (a['offsets'][...] == [0, 300, 512]).all() and (x[:, :300] == b[:, :300]).all()
# the second row starts again at position 0: its first query reads only block 0 of its own
ok = ok and (x[:, 300, 0] == 0).all() and (x[:, 300, 1:] == -1).all()
sys.exit(0 if ok else 1)\""

check "decode packed rows of two lengths: NaN past the shorter row's end, the rest = the single-trace decode" sh -c "sparda-forecast -q decode -i packed.h5 --block 16 --topk 4 --positions 200:260 --device cpu -o dpk.h5 && sparda-forecast -q decode -i p.h5 --block 16 --topk 4 --positions 200:260 --device cpu --mode resident -o dpk1.h5 && $PY -c \"
import h5py, numpy as np, sys
a = h5py.File('dpk.h5')['layer_01/out'][...]; b = h5py.File('dpk1.h5')['layer_01/out'][...]
ok = a.shape == (2, 4, 60, 16) and (a[0] == b).all() and np.isnan(a[1, :, 12:]).all() and not np.isnan(a[1, :, :12]).any()
sys.exit(0 if ok else 1)\""

check "decode --shard 0/2 and 1/2 of the packed rows, joined by nk-data merge, = the whole run's outputs" sh -c "sparda-forecast -q decode -i packed.h5 --block 16 --topk 4 --positions 200:260 --device cpu --shard 0/2 -o dsh0.h5 && sparda-forecast -q decode -i packed.h5 --block 16 --topk 4 --positions 200:260 --device cpu --shard 1/2 -o dsh1.h5 && nk-data -q merge dsh0.h5 dsh1.h5 -o dshm.h5 && $PY -c \"
import h5py, numpy as np, sys
m, w = h5py.File('dshm.h5'), h5py.File('dpk.h5')
layers = [k for k in w if k.startswith('layer_')]
ok = len(layers) >= 2 and all(np.array_equal(m[k + '/out'][...], w[k + '/out'][...], equal_nan=True) for k in layers)
ok = ok and list(m['sequences'][...]) == [0, 1] and (m['positions'][...] == w['positions'][...]).all() and len(m['stats/step_seconds']) == 120
sys.exit(0 if ok else 1)\""

# --device cuda: the offload family (pinned host pool, copy stream, block
# scores and sparse decode on the GPU) against the CPU engine's outputs.
if nvidia-smi -L >/dev/null 2>&1; then
  GDEC="--block 16 --topk 4 --positions 300:400 --device-mem 0.1 --device cuda"
  check "decode on the GPU: resident, sync, forecast, forecast --verify" sh -c "sparda-forecast -q decode -i p.h5 --mode resident $GDEC -o gres.h5 && sparda-forecast -q decode -i p.h5 --mode sync $GDEC -o gsync.h5 && sparda-forecast -q decode -i p.h5 --mode forecast --forecast fz.h5 $GDEC -o gfc.h5 && sparda-forecast -q decode -i p.h5 --mode forecast --verify --forecast wrong.h5 $GDEC -o gver.h5 && sparda-forecast -q decode -i packed.h5 --block 16 --topk 4 --positions 200:260 --device cuda -o gpk.h5"
  check "GPU replay = the CPU engine (1e-4), sync = resident = verify bit for bit, the same misses and bytes" "$PY" -c "
import h5py, numpy as np, sys
ok = True
for g, c in (('gres', 'dres'), ('gsync', 'dsync'), ('gfc', 'dfc'), ('gver', 'dver')):
    a, b = h5py.File(g + '.h5'), h5py.File(c + '.h5')
    for l in range(3):
        x, y = a[f'layer_{l:02d}/out'][...], b[f'layer_{l:02d}/out'][...]
        err = np.abs(x - y).max() / np.abs(y).max()
        print(g, l, 'relative difference', err); ok = ok and err <= 1e-4
    if g in ('gsync', 'gfc'):  # the same LRU choices (verify's depend on when the CPU's copy thread finishes)
        ok = ok and a['stats/misses'][0] == b['stats/misses'][0] and a['stats/bytes'][0] == b['stats/bytes'][0]
r, s, v = [h5py.File(n + '.h5') for n in ('gres', 'gsync', 'gver')]
ok = ok and all((r[f'layer_{l:02d}/out'][...] == s[f'layer_{l:02d}/out'][...]).all() and (v[f'layer_{l:02d}/out'][...] == s[f'layer_{l:02d}/out'][...]).all() for l in range(3))
p, q = h5py.File('gpk.h5')['layer_01/out'][...], h5py.File('dpk.h5')['layer_01/out'][...]
ok = ok and np.array_equal(np.isnan(p), np.isnan(q)) and np.nanmax(np.abs(p - q)) <= 1e-4 * np.nanmax(np.abs(q))
sys.exit(0 if ok else 1)"
  check "a --bandwidth cap replays on the CPU engine even with --device cuda" sh -c "sparda-forecast decode -i p.h5 $GDEC --bandwidth 1 -o gcap.h5 2>&1 | grep -q 'replaying on the CPU'"
else
  expect_fail "decode --device cuda without a GPU" 1 "--device cuda: " sparda-forecast decode -i p.h5 $SEL --device cuda -o x.h5
fi

# The shipped nk-lm model: a capture of text, trained and evaluated.
fortune_text() { for f in /usr/share/games/fortunes/computers /usr/share/games/fortunes/science; do [ -f "$f" ] && head -c 3000 "$f"; done; }
if [ -f /usr/share/games/fortunes/computers ] && [ -f "$NK_SOURCE/data/lm/causal.h5" ]; then
  fortune_text > text.txt
  check "nk-lm capture --corpus | train | eval (the shipped causal model)" sh -c "nk-lm -q corpus --text text.txt --paragraphs --tokenizer $NK_SOURCE/data/lm/causal.h5 -o corpus.h5 && nk-lm -q capture -m $NK_SOURCE/data/lm/causal.h5 --corpus corpus.h5 --split train -o cap.h5 && sparda-forecast -q train -i cap.h5 $SEL --steps 100 -o capf.h5 && sparda-forecast eval -i cap.h5 --forecast capf.h5 $SEL -o cape.h5"
  check "eval --shard 0/2 and 1/2 of the capture's rows, joined by nk-data merge, = the whole run's per-sequence results and means; plot reads the merged file" sh -c "sparda-forecast -q eval -i cap.h5 --forecast capf.h5 $SEL --shard 0/2 -o sh0.h5 && sparda-forecast -q eval -i cap.h5 --forecast capf.h5 $SEL --shard 1/2 -o sh1.h5 && nk-data -q merge sh1.h5 sh0.h5 -o shm.h5 && sparda-forecast -q plot -i shm.h5 -o shm.svg && $PY -c \"
import h5py, numpy as np, sys
m, w = h5py.File('shm.h5'), h5py.File('cape.h5')
ok = 'recall' not in m and (m['sequences/index'][...] == np.arange(len(w['sequences/index']))).all()
for n in ('recall', 'coverage', 'queries'):
    a, b = m['sequences/' + n][...], w['sequences/' + n][...]
    ok = ok and a.shape == b.shape and np.allclose(a, b, equal_nan=True, rtol=0, atol=1e-12)
q = w['sequences/queries'][...]; r = np.nan_to_num(w['sequences/recall'][...])
ok = ok and np.allclose((r * q).sum(0) / q.sum(0), w['recall'][...], atol=1e-12) and (q.sum(0) == w['queries'][...]).all()
sys.exit(0 if ok else 1)\""
  check "InfiniGen (the capture's wq): eval at r = d, select at r = 8 and at r = d" sh -c "sparda-forecast -q eval -i cap.h5 --by infinigen $SEL -o igev.h5 && sparda-forecast -q select -i cap.h5 --by infinigen --rank 8 $SEL -o ig8.h5 && sparda-forecast -q select -i cap.h5 --by infinigen $SEL -o igd.h5 && sparda-forecast -q select -i cap.h5 $SEL -o capsel.h5"
  if "$PY" - <<'PYEOF'
import h5py, numpy as np, sys
fails = 0
def check(name, ok):
    global fails
    print(("ok   " if ok else "FAIL ") + name); fails += 0 if ok else 1
def rope(x, pos, theta):
    d = x.shape[-1]; half = d // 2
    ang = pos[:, None] * theta ** (-2.0 * np.arange(half) / d); c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    return np.concatenate([x[..., :half] * c - x[..., half:] * s, x[..., half:] * c + x[..., :half] * s], -1)
f = h5py.File("cap.h5"); theta = f.attrs["rope_theta"]; off = f["capture/offsets"][...]
B, topk = 16, 4
g0 = f["capture/layer_00"]
check("the capture holds wq [D, Hq*d] and wk [D, Hkv*d]", g0["wq"].shape == (192, 192) and g0["wk"].shape == (192, 64))
# wq really is the projection: RoPE(attn_in wq) = q for layer 0
x = g0["attn_in"][...].astype(np.float64); Hq, N, d = g0["q"].shape
pos = np.concatenate([np.arange(off[i + 1] - off[i]) for i in range(len(off) - 1)]).astype(np.float64)
q = rope((x @ g0["wq"][...]).reshape(N, Hq, d), pos, theta).transpose(1, 0, 2)
err = np.abs(q - g0["q"][...]).max() / np.abs(g0["q"][...]).max()
check(f"RoPE(attn_in wq) equals the captured q (rel {err:.1e})", err < 1e-4)
a, b = h5py.File("igd.h5")["layer_00/blocks"][...], h5py.File("capsel.h5")["layer_00/blocks"][...]
agree = (a == b).all(-1).mean()
check(f"layer 0 at r = d speculates from its own input: the selector's blocks on {agree:.4f} of queries (>= 0.999)", agree >= 0.999)
ev = h5py.File("igev.h5")
check(f"eval --by infinigen: layer 0 recall {ev['recall'][0]:.4f} >= 0.999", ev["recall"][0] >= 0.999)
# rank 8 on layer 2 against numpy: skewing basis from the Gram of the group's post-RoPE queries
g1, g2 = f["capture/layer_01"], f["capture/layer_02"]
q2 = g2["q"][...].astype(np.float64); k2 = g2["k"][...].astype(np.float64); Hkv = k2.shape[0]; G = Hq // Hkv
spec = rope((g1["attn_in"][...].astype(np.float64) @ g2["wq"][...]).reshape(N, Hq, d), pos, theta)  # [N, Hq, d]
got = h5py.File("ig8.h5")["layer_02/blocks"][...]; same = total = 0
for g in range(Hkv):
    Q = q2[g * G:(g + 1) * G].reshape(-1, d); w, v = np.linalg.eigh(Q.T @ Q); V = v[:, ::-1][:, :8]
    for r in range(len(off) - 1):
        T = off[r + 1] - off[r]; nb = T // B
        if nb == 0: continue
        kb = k2[g, off[r]:off[r] + nb * B].reshape(nb, B, d).mean(1) @ V
        for t in range(T):
            own = t // B; forced = sorted(set(range(min(1, own + 1))) | set(range(max(own - 1, 0), own + 1)))
            pool = [j for j in range(own) if j not in forced]
            if pool:
                sc = np.zeros(own)
                for h in range(g * G, (g + 1) * G):
                    z = kb[:own] @ (spec[off[r] + t, h] @ V) / np.sqrt(d); p = np.exp(z - z.max()); sc += p / p.sum()
                pool = sorted(pool, key=lambda j: (-sc[j], j))[:topk]
            want = (forced + pool + [-1] * 7)[:7]
            same += (list(got[g, off[r] + t]) == want); total += 1
check(f"layer 2, r = 8: InfiniGen's blocks equal numpy's on {same / total:.4f} of queries (>= 0.995)", same / total >= 0.995)
sys.exit(1 if fails else 0)
PYEOF
  then pass "InfiniGen against numpy"; else fail "InfiniGen against numpy"; fi
  # eval --model: each method inside the model, perplexity on held-out text and the needle task.
  check "a held-out corpus and a sparse-gqa copy of the shipped model (blocks of 16, top-4)" sh -c "nk-lm -q corpus --text text.txt --paragraphs --validation 0.5 --tokenizer $NK_SOURCE/data/lm/causal.h5 -o heldout.h5 && nk-lm -q train --corpus heldout.h5 --init $NK_SOURCE/data/lm/causal.h5 --attention sparse-gqa --sparse-block 16 --sparse-topk 4 --batch 1 --steps 1 --warmup 1 --lr 1e-6 -o sparse.h5 && nk-lm -q corpus --text text.txt --paragraphs --validation 0.5 --vocab 300 -o corpus_other.h5"
  EM="--forecast capf.h5 --corpus heldout.h5 --windows 2 --needles 4"
  check "eval --model (the dense model, $SEL) prints the four methods" sh -c "sparda-forecast eval --model $NK_SOURCE/data/lm/causal.h5 $SEL $EM -o emd.h5 | grep -c '^dense	\|^selector	\|^forecast	\|^infinigen	' | grep -qx 4"
  check "eval --model of the sparse-gqa model (its own selector)" sparda-forecast -q eval --model sparse.h5 $EM -o ems.h5
  check "the needle documents and held-out windows as token rows (h5py)" $PY -c "
import h5py, numpy as np
c = h5py.File('heldout.h5'); tok, off, split = c['tokens'][...], c['doc_offsets'][...], c['split'][...]
eos = 2045
stream = np.concatenate([np.append(tok[off[d]:off[d + 1]], eos) for d in range(len(split)) if split[d] == 1])
n = min(2, len(stream) // 256)  # eval's windows: --windows 2 at most, whole ones
assert n == h5py.File('emd.h5').attrs['windows'] >= 1
with h5py.File('win.h5', 'w') as f: f['tokens'] = stream[:256 * n].reshape(n, 256).astype(np.int32)
with h5py.File('nd.h5', 'w') as f: f['tokens'] = h5py.File('emd.h5')['needle/tokens'][...]"
  check "dense and selector perplexities = nk-lm score of the dense and the sparse-gqa model on those windows; the needle answers = score's top-1" sh -c "nk-lm -q score -m $NK_SOURCE/data/lm/causal.h5 --token-ids win.h5 -o wd.h5 && nk-lm -q score -m sparse.h5 --token-ids win.h5 -o wsp.h5 && nk-lm -q score -m $NK_SOURCE/data/lm/causal.h5 --token-ids nd.h5 --top-k 1 -o nds.h5 && $PY -c \"
import h5py, numpy as np, sys
def ppl(f): lp = h5py.File(f)['logprob'][...][:, 1:]; return np.exp(-lp.mean())
d, s = h5py.File('emd.h5'), h5py.File('ems.h5')
names = [x.decode() if isinstance(x, bytes) else x for x in d['model/methods'][...]]
assert names == ['dense', 'selector', 'forecast', 'infinigen'], names
ok = abs(d['model/perplexity'][0] - ppl('wd.h5')) < 1e-4 * ppl('wd.h5')
ok = ok and abs(s['model/perplexity'][1] - ppl('wsp.h5')) < 1e-4 * ppl('wsp.h5')
ok = ok and abs(s['model/perplexity'][1] - s['model/perplexity'][0]) > 1e-6  # the sparse reading differs from dense
top = h5py.File('nds.h5')['topk/ids'][...][:, :, 0]; toks = h5py.File('nd.h5')['tokens'][...]; ans = d['needle/answer'][...]
want = [int(all(top[i, t - 1] == toks[i, t] for t in range(a, b))) for i, (a, b) in enumerate(ans)]
ok = ok and list(d['model/needle_correct'][0]) == want and abs(d['model/needle_accuracy'][0] - np.mean(want)) < 1e-12
# The answer tokens decode to the 4-digit value (byte-level BPE: 256 bytes, then the merges).
merges = h5py.File('sparse.h5')['tokenizer/merges'][...]; vocab = [bytes([i]) for i in range(256)]
for a, b in merges: vocab.append(vocab[a] + vocab[b])
for i, (a, b) in enumerate(ans):
    text = b''.join(vocab[t] for t in toks[i, a:b]).strip()
    ok = ok and len(text) == 4 and text.isdigit() and b'secret number of' in b''.join(vocab[t] for t in toks[i, max(a - 12, 0):a])
for f in (d, s):
    acc = f['model/needle_accuracy'][...]; ok = ok and ((acc >= 0) & (acc <= 1)).all() and np.isfinite(f['model/perplexity'][...]).all()
sys.exit(0 if ok else 1)\""
  check "train --model: the model with its Forecast in one file (nk-lm reads it; eval --model and decode --model use the Forecast)" sh -c "sparda-forecast -q train -i cap.h5 $SEL --steps 100 --model $NK_SOURCE/data/lm/causal.h5 -o withf.h5 && nk-lm info -m withf.h5 > /dev/null && sparda-forecast -q eval --model withf.h5 $SEL --corpus heldout.h5 --windows 1 --needles 0 -o emw.h5 && sparda-forecast -q eval --model $NK_SOURCE/data/lm/causal.h5 --forecast capf.h5 $SEL --corpus heldout.h5 --windows 1 --needles 0 -o emf.h5 && sparda-forecast -q decode --model withf.h5 --prompt-tokens 40 --steps 4 --chunk 20 $SEL --mode forecast -o dw.h5 && $PY -c \"
import h5py, numpy as np, sys
w, f = h5py.File('withf.h5'), h5py.File('capf.h5')
ok = all(np.array_equal(w['forecast/' + n][...], f[n][...]) for n in ('layer_00/w_curr', 'layer_00/w_forecast', 'layer_02/w_forecast'))
ok = ok and w.attrs['nk_schema'] == 'nk-lm.model/1' and np.array_equal(h5py.File('emw.h5')['model/perplexity'][...], h5py.File('emf.h5')['model/perplexity'][...])
sys.exit(0 if ok else 1)\""
  expect_fail "train --model of another model than the trace's" 2 "not the model of the trace" sparda-forecast train -i p.h5 $SEL --model $NK_SOURCE/data/lm/causal.h5 -o x.h5
  expect_fail "eval --model without a Forecast" 2 "needs --forecast" sparda-forecast eval --model sparse.h5 --corpus heldout.h5 -o x.h5
  expect_fail "eval --model with a Forecast of another shape" 3 "fz.h5" sparda-forecast eval --model sparse.h5 --forecast fz.h5 --corpus heldout.h5 -o x.h5
  expect_fail "eval --model: a corpus of another tokenizer" 2 "tokenizer is not the model's" sparda-forecast eval --model sparse.h5 --forecast capf.h5 --corpus corpus_other.h5 -o x.h5
  # Decoding the model itself: the engine as nk::lm's attention (chunked prefill of random prompts, then generation).
  MDEC="--model $NK_SOURCE/data/lm/causal.h5 --prompt-tokens 150 --steps 24 --chunk 40 --block 16 --topk 4 --device-mem 0.2"
  head -c 450 /usr/share/games/fortunes/science > short.txt
  check "a Forecast of the shipped model from a short capture of other text (a poor one)" sh -c "nk-lm -q capture -m $NK_SOURCE/data/lm/causal.h5 --text short.txt -o cap2.h5 && sparda-forecast -q train -i cap2.h5 $SEL --steps 5 -o poor.h5"
  check "decode --model: resident, sync (0.5 GB/s), forecast, forecast --verify with the poor Forecast" sh -c "sparda-forecast -q decode $MDEC --mode resident -o mres.h5 && sparda-forecast -q decode $MDEC --mode sync --bandwidth 0.5 -o msync.h5 && sparda-forecast -q decode $MDEC --mode forecast --forecast capf.h5 -o mfc.h5 && sparda-forecast -q decode $MDEC --mode forecast --verify --forecast poor.h5 -o mver.h5"
  check "decode --model: resident, sync and verify generate the same tokens; bytes = misses x block bytes" sh -c "$PY -c \"
import h5py, numpy as np, sys
r, s, v = h5py.File('mres.h5'), h5py.File('msync.h5'), h5py.File('mver.h5')
ok = (r['tokens'][...] == s['tokens'][...]).all() and (v['tokens'][...] == s['tokens'][...]).all()
ok = ok and s['stats/misses'][0] > 0 and s['stats/bytes'][0] == s['stats/misses'][0] * s['stats/block_bytes'][0]
ok = ok and h5py.File('mfc.h5')['tokens'].shape == (24, 1)
# the prefill's copies: none resident, some for sync (all of them before the generation's)
ok = ok and r['stats/prefill_bytes'][0] == 0 and s['stats/prefill_bytes'][0] > 0 and s.attrs['prefill_tokens'] == 150
sys.exit(0 if ok else 1)\""
  expect_fail "decode --model --prefill-tokens" 2 "applies to --bench-shapes" sparda-forecast decode $MDEC --mode sync --prefill-tokens 40 -o x.h5
  expect_fail "decode --model --mode infinigen" 2 "replays traces only" sparda-forecast decode $MDEC --mode infinigen -o x.h5
  expect_fail "decode --model --mode forecast without a Forecast" 2 "needs --forecast" sparda-forecast decode $MDEC --mode forecast -o x.h5
  expect_fail "decode --model past the context" 2 "pass the model's context of 256" sparda-forecast decode --model $NK_SOURCE/data/lm/causal.h5 --prompt-tokens 250 --steps 24 -o x.h5
  expect_fail "InfiniGen on a trace without wq" 3 "p.h5.*layer_00/wq.*missing" sparda-forecast eval -i p.h5 --by infinigen $SEL -o x.h5
fi

# Bad input: one line naming file, dataset and layer; exit 3; no output.
"$PY" - <<'PYEOF'
import h5py, numpy as np, shutil
def copy(name):
    shutil.copy("p.h5", name); return h5py.File(name, "r+")
with copy("shape.h5") as f:
    del f["capture/layer_02/q"]; f["capture/layer_02/q"] = np.zeros((4, 500, 16), np.float32)
with copy("nan.h5") as f:
    x = f["capture/layer_01/k"][...]; x[1, 77, 3] = np.nan; del f["capture/layer_01/k"]; f["capture/layer_01/k"] = x
with copy("gqa.h5") as f:
    for l in range(3):
        x = f[f"capture/layer_{l:02d}/q"][...]; del f[f"capture/layer_{l:02d}/q"]; f[f"capture/layer_{l:02d}/q"] = x[:3]
with copy("theta.h5") as f:
    del f.attrs["rope_theta"]
with copy("short.h5") as f:
    for l in range(3):
        for n in ("attn_in", "q", "k", "v"):
            x = f[f"capture/layer_{l:02d}/{n}"][...]; del f[f"capture/layer_{l:02d}/{n}"]
            f[f"capture/layer_{l:02d}/{n}"] = x[:10] if n == "attn_in" else x[:, :10]
with copy("ragged.h5") as f:
    f["capture/offsets"] = np.array([0, 300, 200, 512], np.int64)
PYEOF
check "a forecast of another model (D 96)" sparda-forecast -q gen --planted --layers 3 --tokens 256 --d-model 96 --block 16 -o other.h5
check "... trained" sparda-forecast -q train -i other.h5 $SEL --steps 5 -o otherf.h5
expect_fail "layers of different shapes" 3 "shape.h5.*layer_02/q.*layer 2 has shape \[4,500,16\]" sparda-forecast select -i shape.h5 $SEL -o x.h5
expect_fail "NaN in a key" 3 "nan.h5.*layer_01/k" sparda-forecast train -i nan.h5 $SEL -o x.h5
expect_fail "Hq not a multiple of Hkv" 3 "gqa.h5.*2 KV heads do not divide the 3 query heads" sparda-forecast select -i gqa.h5 $SEL -o x.h5
expect_fail "no rope_theta" 3 "theta.h5.*rope_theta is missing" sparda-forecast select -i theta.h5 $SEL -o x.h5
expect_fail "T below one block" 3 "short.h5.*layer 0: T = 10 tokens hold no complete block of 16" sparda-forecast eval -i short.h5 --forecast fz.h5 $SEL -o x.h5
expect_fail "topk above the block count" 3 "p.h5.*--topk 40 is above the 32 complete blocks" sparda-forecast select -i p.h5 --block 16 --topk 40 -o x.h5
expect_fail "a forecast of another model" 3 "otherf.h5.*w_curr.*\[96,32\].*another model" sparda-forecast eval -i p.h5 --forecast otherf.h5 $SEL -o x.h5
expect_fail "decode --model with a Forecast of another model" 3 "otherf.h5.*w_curr.*of the model" sparda-forecast decode --model "$NK_SOURCE/data/lm/causal.h5" --prompt-tokens 100 --steps 2 --mode forecast --forecast otherf.h5 $SEL -o x.h5
expect_fail "decreasing /capture/offsets" 3 "ragged.h5.*capture/offsets" sparda-forecast select -i ragged.h5 $SEL -o x.h5
expect_fail "a forecast that is not one" 3 "sel.h5.*nk_schema.*expected a forecast" sparda-forecast select -i p.h5 --by forecast --forecast sel.h5 $SEL -o x.h5
expect_fail "not a trace" 3 "fz.h5.*nk_schema" sparda-forecast select -i fz.h5 $SEL -o x.h5
expect_fail "empty standard input" 3 "standard input" sh -c "sparda-forecast select -i - $SEL -o x.h5 < /dev/null"
expect_fail "truncated trace" 3 "trunc.h5" sh -c "head -c 20000 p.h5 > trunc.h5 && sparda-forecast select -i trunc.h5 $SEL -o x.h5"
expect_fail "--by forecast without --forecast" 2 "needs --forecast" sparda-forecast select -i p.h5 --by forecast $SEL -o x.h5
expect_fail "--positions outside T" 2 "positions 100:900" sparda-forecast eval -i p.h5 --forecast fz.h5 $SEL --positions 100:900 -o x.h5
expect_fail "decode without values" 3 "plain.h5.*layer_00/v.*missing" sparda-forecast decode -i plain.h5 $SEL -o x.h5
expect_fail "decode with too small a device pool" 2 "device-mem holds 2 blocks" sparda-forecast decode -i p.h5 $SEL --positions 300:400 --device-mem 0.004 -o x.h5
expect_fail "decode --verify in sync mode" 2 "verify applies to" sparda-forecast decode -i p.h5 $SEL --verify -o x.h5
expect_fail "decode --bandwidth fast" 2 "bandwidth 'fast'" sparda-forecast decode -i p.h5 $SEL --bandwidth fast -o x.h5
expect_fail "--planted with too small a D" 2 "d-model >= 2 x kv-heads x head-dim = 64" sparda-forecast gen --planted --d-model 32 -o x.h5
check "no output was left by the failures" sh -c "test ! -e x.h5 && test ! -e x.svg"
no_temp_files "no temp files" .
finish
