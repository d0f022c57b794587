# snapmla-decode.sh - gen | quant | attend through pipes; cast bit-exact
# against an independent numpy E4M3/BF16 (every code, every midpoint and its
# float32 neighbours, 10^6 random values); attend against numpy decodes of
# the stored bytes; eval's ordering of the layouts; shards; bad input.
. "$(dirname "$0")/lib.sh"

S=snapmla-decode
check "gen (ragged, deepseek profile)" $S gen --batch 3 --tokens 300 --heads 4 --d-c 128 --d-r 16 --ragged --seed 3 -o c.h5
check "gen | quant snapmla644 | attend through pipes" sh -c "$S gen --batch 3 --tokens 300 --heads 4 --d-c 128 --d-r 16 --ragged --seed 3 -o - | $S quant -i - --layout snapmla644 -o - | $S attend -i - --queries c.h5 -o pipe.h5"
for l in bf16 flashmla656 snapmla644 fp8-naive; do
  check "quant --layout $l" $S -q quant -i c.h5 --layout $l -o "kv_$l.h5"
done
check "attend bf16, flashmla656, fp8-naive; snapmla644 with --pv fp32, --q-fp32, --plain-scores, 1 and 7 splits" sh -c "
  $S -q attend -i kv_bf16.h5 --queries c.h5 -o o_bf16.h5 && $S -q attend -i kv_flashmla656.h5 --queries c.h5 -o o_flash.h5 &&
  $S -q attend -i kv_fp8-naive.h5 --queries c.h5 -o o_naive.h5 &&
  $S -q attend -i kv_snapmla644.h5 --queries c.h5 --pv fp32 --splits 1 -o o_snap32.h5 &&
  $S -q attend -i kv_snapmla644.h5 --queries c.h5 --pv fp32 --splits 7 -o o_snap32s7.h5 &&
  $S -q attend -i kv_snapmla644.h5 --queries c.h5 --pv fp32 --plain-scores -o o_plain.h5 &&
  $S -q attend -i kv_snapmla644.h5 --queries c.h5 --q-fp32 --pv fp32 -o o_qf.h5"
check "attend in two shards (--shard) and the portable copy" sh -c "
  $S -q attend -i kv_snapmla644.h5 --queries c.h5 --shard 0/2 -o sh0.h5 && $S -q attend -i kv_snapmla644.h5 --queries c.h5 --shard 1/2 -o sh1.h5 &&
  nk-data -q merge sh0.h5 sh1.h5 -o merged.h5 && $S -q attend -i kv_snapmla644.h5 --queries c.h5 -o whole.h5 &&
  NK_KERNELS_ISA=generic $S -q attend -i kv_snapmla644.h5 --queries c.h5 -o generic.h5"
check "eval (every layout against float64)" sh -c "$S -q gen --batch 2 --tokens 1024 --heads 8 --seed 5 -o big.h5 && $S eval -i big.h5 -o ev.h5 > ev.tsv"
check "plot: each layout's error against N from two eval tables (an SVG, one line per layout and PV mode)" sh -c "$S -q gen --batch 2 --tokens 256 --heads 8 --seed 5 -o small.h5 && $S -q eval -i small.h5 -o ev256.h5 > /dev/null && $S -q plot ev.h5 ev256.h5 -o err.svg && grep -q 'snapmla644 (fp8 PV)' err.svg && grep -q 'cached tokens N' err.svg"
check "speed (every layout, 2 repeats)" sh -c "$S -q speed -i big.h5 --repeats 2 -o speed.h5 > speed.tsv"
check "serve: bf16 and snapmla644 under one budget" sh -c "$S -q --seed 2 serve --budget-mib 0.3 --requests 6 --prompt-tokens 40 --output-tokens 200 --heads 4 --d-c 128 --d-r 16 -o serve.h5 > serve.tsv"
# The shipped MLA model's perplexity with its cache in each layout, on text
# it never saw (this repository's README), and token-by-token decoding.
M="$NK_SOURCE/data/lm/mla.h5"
check "eval --model: the shipped mla model on held-out text, every layout, --check-decode" sh -c "$S eval --model '$M' --text '$NK_SOURCE/README.md' --windows 6 --check-decode -o em.h5 > em.tsv"
check "eval --model: token by token = teacher forced (0 logit difference) in every cache; absorbed = unabsorbed; bf16 within 0.1%, snapmla644 within 0.5% of bf16" "$PY" -c "
import h5py, numpy as np
t = h5py.File('em.h5')['/table']
name = [a.decode() + ':' + b.decode() for a, b in zip(t['layout'][()], t['pv'][()])]
ppl = dict(zip(name, t['perplexity'][()])); tbt = dict(zip(name, t['token_by_token'][()]))
print(ppl, tbt)
assert all(tbt[k] == 0 for k in name if k != 'float32:unabsorbed'), tbt
assert abs(ppl['float32:absorbed'] / ppl['float32:unabsorbed'] - 1) < 1e-5
assert abs(ppl['bf16:fp32'] / ppl['float32:unabsorbed'] - 1) < 1e-3
assert abs(ppl['snapmla644:fp8'] / ppl['bf16:fp32'] - 1) < 5e-3 and abs(ppl['snapmla644:fp32'] / ppl['bf16:fp32'] - 1) < 5e-3
assert list(t['row_bytes'][()][2:]) == [288, 164, 164, 164, 148]
"
check "capture: the shipped model's layer-0 cache of 3 windows of 64 tokens, then eval over it" sh -c "$S -q capture --model '$M' --text '$NK_SOURCE/README.md' --layer 0 --windows 3 --context 64 -o cap.h5 && $S -q eval -i cap.h5 -o capev.h5"
check "capture: c = RMSNorm(RMSNorm(x) W_DKV^T), k_R = RoPE(RMSNorm(x) W_KR^T), q_c = W_UK^T q_nope recomputed in numpy from the checkpoint" "$PY" -c "
import h5py, numpy as np
m, c = h5py.File('$M'), h5py.File('cap.h5')
def P(n):
    d = m['params'][n]
    v = d[()]
    return (v.astype(np.uint32) << 16).view(np.float32).astype(np.float64) if d.dtype == np.uint16 else v.astype(np.float64)
dc, dr, H, hd, eps, theta = int(m.attrs['kv_rank']), int(m.attrs['rope_dim']), int(m.attrs['n_heads']), int(m.attrs['head_dim']), float(m.attrs['norm_eps']), float(m.attrs['rope_theta'])
nope = hd - dr
rms = lambda x, w: x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w
def rope(x, pos):
    half = x.shape[-1] // 2
    ang = pos[:, None] * theta ** (-np.arange(half) * 2.0 / x.shape[-1])
    co, si = np.cos(ang), np.sin(ang)
    return np.concatenate([x[:, :half] * co - x[:, half:] * si, x[:, half:] * co + x[:, :half] * si], -1)
L = 'model.layers.0.self_attn.'
worst = 0
for b, toks in enumerate(c['tokens'][()]):
    a = rms(P('model.embed_tokens.weight')[toks], P('model.layers.0.input_layernorm.weight'))
    kva = a @ P(L + 'kv_a_proj_with_mqa.weight').T
    ckv = rms(kva[:, :dc], P(L + 'kv_a_layernorm.weight'))
    kpe = rope(kva[:, dc:], np.arange(len(toks), dtype=np.float64))
    q = (a[-1] @ P(L + 'q_proj.weight').T).reshape(H, hd)
    qr = rope(q[:, nope:], np.full(H, len(toks) - 1.0))
    kvb = P(L + 'kv_b_proj.weight').reshape(H, nope + hd, dc)
    qc = np.einsum('he,hec->hc', q[:, :nope], kvb[:, :nope])
    for ours, ref in [(c['ckv'][b], ckv), (c['kpe'][b], kpe), (c['q'][b], np.concatenate([qc, qr], -1))]:
        worst = max(worst, np.abs(ours - ref).max() / np.abs(ref).max())
print('worst relative difference', worst)
assert worst < 1e-4
"
# The Hugging Face route: capture_hf.py over a torch model of DeepSeek-V2's module form (an
# independent MLA written from the definition, the shipped weights, the capture's token ids).
check "capture_hf.py --module: the same layer-3 cache as capture (an independent torch MLA of DeepSeek-V2's module form, 2 windows), read by eval" sh -c "
  $S -q capture --model '$M' --text '$NK_SOURCE/README.md' --layer 3 --windows 2 --context 64 -o cap3.h5 &&
  HF_MODEL='$M' HF_TOKENS=cap3.h5 $PY '$NK_SOURCE/data/snapmla-decode/capture_hf.py' --module '$NK_SOURCE/tests/cli/snapmla-decode.hf_model.py' \
    --text '$NK_SOURCE/README.md' --layer 3 --tokens 64 --windows 2 -o hf3.h5 > /dev/null &&
  $PY -c \"
import h5py, numpy as np
a, b = h5py.File('cap3.h5'), h5py.File('hf3.h5')
for k in ['ckv', 'kpe', 'q']:
    assert a[k].shape == b[k].shape, k
    assert np.abs(a[k][()] - b[k][()]).max() <= 1e-4 * np.abs(a[k][()]).max(), k
assert abs(a.attrs['softmax_scale'] - b.attrs['softmax_scale']) < 1e-12
\" && $S -q eval -i hf3.h5 -o hfev.h5 > /dev/null"
expect_fail "capture at a layer the model lacks" 2 "is not one of the model's 4 layers" $S capture --model "$M" --text "$NK_SOURCE/README.md" --layer 4 -o bad.h5
expect_fail "plot of an eval --model table" 3 "eval --model table" $S plot em.h5 -o bad.svg
expect_fail "eval --model of a gqa model" 2 "not an mla model" $S eval --model "$NK_SOURCE/data/lm/causal.h5" --text "$NK_SOURCE/README.md" -o bad.h5
expect_fail "eval --model with -i" 2 "goes without it" $S eval --model "$M" -i c.h5 --text "$NK_SOURCE/README.md" -o bad.h5
expect_fail "eval --model without text" 2 "exactly one of --corpus, --text" $S eval --model "$M" -o bad.h5
echo "too short" > short.txt
expect_fail "eval --model on text shorter than a window" 2 "fewer than one window" $S eval --model "$M" --text short.txt -o bad.h5
# Values for cast: every code's value, every midpoint between neighbours and
# both float32 neighbours of each, past the largest value, and 10^6 random floats.
"$PY" - <<'PYEOF'
import h5py, numpy as np
vals = []
for code in range(256):
    e, m = (code >> 3) & 15, code & 7
    if (code & 0x7f) == 0x7f: continue
    v = m * 2.0**-9 if e == 0 else (1 + m / 8) * 2.0**(e - 7)
    vals.append(-v if code & 0x80 else v)
grid = np.unique(np.abs(np.array(vals)))
mids = (grid[:-1] + grid[1:]) / 2
pts = np.concatenate([grid, mids, np.nextafter(mids.astype(np.float32), np.float32(0)), np.nextafter(mids.astype(np.float32), np.float32(1e9)),
                      [448, 464, 465, 500, 1e6, 3e38]]).astype(np.float32)
rng = np.random.default_rng(7)
rnd = np.concatenate([rng.standard_normal(500000) * 10.0 ** rng.uniform(-4, 3, 500000),
                      rng.uniform(-500, 500, 500000)]).astype(np.float32)
x = np.concatenate([pts, -pts, rnd]).astype(np.float32)
with h5py.File("x.h5", "w") as f:
    f["/x"] = x
PYEOF
check "cast --to e4m3 and --to bf16" sh -c "$S -q cast -i x.h5 --to e4m3 -o e4m3.h5 && $S -q cast -i x.h5 --to bf16 -o bf16.h5"

if "$PY" - <<'PYEOF'
import h5py, numpy as np
fails = 0
def check(name, ok):
    global fails
    print(("ok   " if ok else "FAIL ") + name); fails += 0 if ok else 1

# --- independent E4M3: the nearest of the 254 finite codes, ties to the even code, saturating
codes = np.array([c for c in range(256) if (c & 0x7f) != 0x7f])
def value(c):
    e, m = (c >> 3) & 15, c & 7
    v = m * 2.0**-9 if e == 0 else (1 + m / 8) * 2.0**(e - 7)
    return -v if c & 0x80 else v
cv = np.array([value(c) for c in codes])
def e4m3(x):
    x = np.clip(x.astype(np.float64), -448, 448)
    d = np.abs(x[:, None] - cv[None, :])
    best = d.min(axis=1, keepdims=True)
    tied = d == best
    # among the nearest: the even code; for a zero the code of the input's sign
    even = np.where(tied & (codes[None, :] % 2 == 0), codes[None, :], 1 << 20).min(axis=1)
    pick = np.where(even < (1 << 20), even, np.where(tied, codes[None, :], 1 << 20).min(axis=1))
    # rounding to zero (|x| up to half the subnormal step, the tie going to the even 0): the input's sign
    pick = np.where(np.abs(x) <= 2.0**-10, np.where(np.signbit(x), 0x80, 0), pick)
    return pick.astype(np.uint8)
x = h5py.File("x.h5")["/x"][()]
got = h5py.File("e4m3.h5")["/codes"][()]
want = np.concatenate([e4m3(x[i:i + 100000]) for i in range(0, len(x), 100000)])
bad = np.flatnonzero(got != want)
check(f"cast e4m3 bit-exact against numpy on {len(x)} values ({len(bad)} differ{'' if not len(bad) else ': first ' + repr((x[bad[0]], got[bad[0]], want[bad[0]]))})", len(bad) == 0)
# --- independent BF16: round the float32 bits to nearest even on 16 bits
u = x.view(np.uint32).astype(np.uint64)
want16 = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
got16 = h5py.File("bf16.h5")["/codes"][()]
check(f"cast bf16 bit-exact against numpy ({int((got16 != want16).sum())} differ)", np.array_equal(got16, want16))

# --- attend against numpy decodes of the stored bytes
c = h5py.File("c.h5")
q, lengths, scale = c["/q"][()].astype(np.float64), c["/lengths"][()], c.attrs["softmax_scale"]
B, H, dk = q.shape
def f32(b): return np.frombuffer(b.tobytes(), "<f4").astype(np.float64)
def bf(b): return (np.frombuffer(b.tobytes(), "<u2").astype(np.uint32) << 16).view(np.float32).astype(np.float64)
def e4(b): return np.array([value(int(v)) if (v & 0x7f) != 0x7f else np.nan for v in b])
E4 = np.array([value(v) if (v & 0x7f) != 0x7f else np.nan for v in range(256)])
def rows_of(name, b):
    f = h5py.File(name)
    pages, table = f["/kv_pages"][()], f["/block_table"][()]
    n = lengths[b]
    return np.stack([pages[table[b, t // 64], t % 64] for t in range(n)])
def round_bf16(v):
    u = v.astype(np.float32).view(np.uint32).astype(np.uint64)
    return (((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
def e4m3_round(v): return E4[e4m3(v)]
def attention(scores, V):
    m = scores.max(axis=-1, keepdims=True); p = np.exp(scores - m)
    return (p @ V) / p.sum(axis=-1, keepdims=True), (m[..., 0] + np.log(p.sum(axis=-1)))
dc, dr = 128, 16
def run(layout, out_name, q_fp32=False):
    worst = 0
    o = h5py.File(out_name)
    for b in range(B):
        R = rows_of(f"kv_{layout}.h5", b)
        if layout == "bf16":
            K = bf(R); K = K.reshape(len(R), dc + dr); C, KR, st = K[:, :dc], K[:, dc:], np.ones(len(R))
            Q = round_bf16(q[b]); qc, qr, sq = Q[:, :dc], Q[:, dc:], np.ones(H)
        elif layout == "snapmla644":
            C = E4[R[:, :dc]]; st = f32(R[:, dc:dc + 4]); KR = bf(R[:, dc + 4:]).reshape(len(R), dr)
            if q_fp32:
                qc, qr, sq = q[b][:, :dc], q[b][:, dc:], np.ones(H)
            else:
                sq = np.abs(q[b][:, :dc].astype(np.float32)).max(axis=1) / np.float32(448)
                sq = sq.astype(np.float32).astype(np.float64)
                qc = E4[e4m3((q[b][:, :dc].astype(np.float32) / sq[:, None].astype(np.float32)).ravel())].reshape(H, dc)
                qr = round_bf16((q[b][:, dc:].astype(np.float32) / sq[:, None].astype(np.float32)))
        scores = scale * sq[:, None] * st[None, :] * (qc @ C.T + qr @ KR.T)
        ref, lse = attention(scores, C * st[:, None])
        got = o["/out"][b]
        worst = max(worst, np.abs(got - ref).max() / np.abs(ref).max(), np.abs(o["/lse"][b] - lse).max() / np.abs(lse).max())
    return worst
w = run("bf16", "o_bf16.h5"); check(f"attend bf16 = float64 attention on the BF16 bytes (max rel {w:.1e} <= 1e-5)", w <= 1e-5)
w = run("snapmla644", "o_snap32.h5"); check(f"attend snapmla644 --pv fp32 = a numpy decode of the stored bytes (max rel {w:.1e} <= 1e-4)", w <= 1e-4)
w = run("snapmla644", "o_qf.h5", q_fp32=True); check(f"attend snapmla644 --q-fp32 --pv fp32 = numpy (max rel {w:.1e} <= 1e-4)", w <= 1e-4)
a, b = h5py.File("o_snap32.h5"), h5py.File("o_snap32s7.h5")
d = np.abs(a["/out"][()] - b["/out"][()]).max() / np.abs(a["/out"][()]).max()
check(f"splits 1 and 7 agree ({d:.1e} <= 1e-6)", d <= 1e-6)
p = h5py.File("o_plain.h5")
d = np.abs(a["/out"][()] - p["/out"][()]).max() / np.abs(a["/out"][()]).max()
dl = np.abs(a["/lse"][()] - p["/lse"][()]).max() / np.abs(a["/lse"][()]).max()
check(f"pre-posed and plain scores agree (out {d:.1e}, lse {dl:.1e} <= 1e-6 relative)", d <= 1e-5 and dl <= 1e-6)
m, w_ = h5py.File("merged.h5"), h5py.File("whole.h5")
check("two shards merged = the whole run", np.array_equal(m["/out"][()], w_["/out"][()]) and np.array_equal(m["/lse"][()], w_["/lse"][()]))
g = h5py.File("generic.h5")
d = np.abs(g["/out"][()] - w_["/out"][()]).max() / np.abs(w_["/out"][()]).max()
check(f"the portable copy agrees with the AVX2 copy ({d:.1e}; isa {g.attrs['isa']} vs {w_.attrs['isa']})", d <= 1e-4 and g.attrs["isa"] == "generic")
pp = h5py.File("pipe.h5")
check("the piped run = attend of the same file (default fp8 PV)", np.array_equal(pp["/out"][()], w_["/out"][()]))
# eval: the ordering the layouts must show on the deepseek profile
t = h5py.File("ev.h5")["/table"]
rows = {(l.decode(), p.decode()): e for l, p, e in zip(t["layout"][()], t["pv"][()], t["rel_l2"][()])}
print("     eval rel_l2:", {k: float(f"{v:.2e}") for k, v in rows.items()})
check("eval: bf16 < flashmla656, snapmla644 < fp8-naive; every error < 0.5",
      rows[("bf16", "fp32")] < rows[("flashmla656", "fp32")] and rows[("snapmla644", "fp8")] < rows[("fp8-naive", "fp8")] and max(rows.values()) < 0.5)
check("eval: bytes per token 1152/656/644/580", list(t["row_bytes"][()]) == [1152, 656, 644, 644, 580])
sp = h5py.File("speed.h5")["/table"]
check("speed: four layouts, positive times, bf16 the unit",
      len(sp["seconds"][()]) == 4 and np.all(sp["seconds"][()] > 0) and sp["speedup_vs_bf16"][0] == 1.0)
sv = h5py.File("serve.h5")
t = sv["/table"]
pages = t["pages"][()]
# every request generated its tokens; 0.3 MiB holds 17 pages of 64 bf16 rows (288 B at d_c 128, d_R 16:
# 4 requests of 4 pages at once) and 29 of snapmla644 (164 B: all 6); capacity is what the layout changes
check(f"serve: 6 x 200 tokens in each layout, pages {list(pages)}, peak batch {list(t['peak_batch'][()])}",
      list(t["generated"][()]) == [1200, 1200] and list(pages) == [17, 29] and list(t["peak_batch"][()]) == [4, 6])
raise SystemExit(1 if fails else 0)
PYEOF
then pass "the numpy checks above"; else fail "the numpy checks above"; fi

# Bad input: one line naming file and dataset, exit 3, no output left.
"$PY" - <<'PYEOF'
import h5py, numpy as np, shutil
def copy(src, dst, edit):
    shutil.copy(src, dst)
    with h5py.File(dst, "r+") as f: edit(f)
def set_(path, value):
    def edit(f):
        d = f[path][()]; d[tuple(value[0])] = value[1]; del f[path]; f[path] = d
    return edit
copy("c.h5", "nan.h5", set_("/ckv", ([1, 5, 3], np.nan)))
copy("c.h5", "inf_q.h5", set_("/q", ([0, 1, 2], np.inf)))
copy("c.h5", "long.h5", set_("/lengths", ([1], 301)))
copy("kv_snapmla644.h5", "table.h5", set_("/block_table", ([0, 1], 99)))
copy("kv_snapmla644.h5", "nancode.h5", set_("/kv_pages", ([2, 5, 7], 0x7f)))
copy("kv_snapmla644.h5", "zeroscale.h5", lambda f: None)
with h5py.File("zeroscale.h5", "r+") as f:
    d = f["/kv_pages"][()]; d[0, 3, 128:132] = 0; del f["/kv_pages"]; f["/kv_pages"] = d
copy("kv_snapmla644.h5", "rowbytes.h5", lambda f: f.attrs.__setitem__("row_bytes", 656))
copy("kv_snapmla644.h5", "lens.h5", set_("/lengths", ([0], 64 * 5 + 1)))
with h5py.File("q8.h5", "w") as f:
    f["/q"] = np.ones((3, 4, 100), np.float32); f.attrs["softmax_scale"] = 0.1
with h5py.File("wide.h5", "w") as f:
    f["/ckv"] = np.ones((1, 10, 100), np.float32); f["/kpe"] = np.ones((1, 10, 16), np.float32); f["/lengths"] = np.array([10], np.int32)
PYEOF
expect_fail "NaN in the cache" 3 "input 'nan.h5': dataset /ckv: NaN at index \[1,5,3\]" $S quant -i nan.h5 -o bad.h5
expect_fail "Inf in the queries" 3 "input 'inf_q.h5': dataset /q: Inf at index \[0,1,2\]" $S attend -i kv_bf16.h5 --queries inf_q.h5 -o bad.h5
expect_fail "a length beyond N" 3 "input 'long.h5': dataset /lengths: length 301 at index \[1\] is outside 1..300" $S quant -i long.h5 -o bad.h5
expect_fail "a block table entry outside /kv_pages" 3 "input 'table.h5': dataset /block_table: entry \[0,1\] = 99 is not a page" $S attend -i table.h5 --queries c.h5 -o bad.h5
expect_fail "a NaN E4M3 code in a row" 3 "input 'nancode.h5': dataset /kv_pages: page 2, row 5 .*NaN E4M3 code at element 7" $S attend -i nancode.h5 --queries c.h5 -o bad.h5
expect_fail "a zero token scale" 3 "input 'zeroscale.h5': dataset /kv_pages: page 0, row 3 .*token scale" $S attend -i zeroscale.h5 --queries c.h5 -o bad.h5
expect_fail "row_bytes not the layout's" 3 "input 'rowbytes.h5': dataset /: row_bytes 656 is not snapmla644's 164" $S attend -i rowbytes.h5 --queries c.h5 -o bad.h5
expect_fail "lengths beyond the pages" 3 "input 'lens.h5': dataset /lengths: length 321 at index \[0\] is outside 1\.\." $S attend -i lens.h5 --queries c.h5 -o bad.h5
expect_fail "query and cache widths disagree" 3 "input 'q8.h5': dataset /q: query width 100 is not d_c \+ d_R = 144" $S attend -i kv_bf16.h5 --queries q8.h5 -o bad.h5
expect_fail "flashmla656 with d_c not a multiple of 128" 2 "flashmla656 needs d_c a multiple of 128; the cache has d_c 100" $S quant -i wide.h5 --layout flashmla656 -o bad.h5
expect_fail "--pv fp8 on bf16" 2 "--pv fp8 needs a layout whose values are E4M3 codes" $S attend -i kv_bf16.h5 --queries c.h5 --pv fp8 -o bad.h5
expect_fail "empty stdin" 3 "standard input is empty" sh -c "$S attend -i - --queries c.h5 -o bad.h5 < /dev/null"
expect_fail "absurd sizes" 2 "more than the memory available" $S gen --batch 4096 --tokens 16000000 -o bad.h5
[ ! -e bad.h5 ] && pass "no output file from failed runs" || fail "a failed run left bad.h5"
no_temp_files "no temp files" "$WORK"
finish
