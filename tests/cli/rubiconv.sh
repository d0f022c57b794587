# rubiconv.sh - gen | apply | grad through pipes, checked by an independent
# numpy reference; sharded runs merge back to the whole; bad input.
. "$(dirname "$0")/lib.sh"

check "gen | apply through a pipe" sh -c 'rubiconv gen --length 3000 --channels 4 --batch 2 --doc-lengths lognormal:150,1.0 --filter-length 700 --skip --with-dy --seed 4 -o in.h5 && rubiconv gen --length 3000 --channels 4 --batch 2 --doc-lengths lognormal:150,1.0 --filter-length 700 --skip --with-dy --seed 4 -o - | rubiconv apply -i - --skip -o y_pipe.h5'
check "gen is reproducible from --seed" sh -c 'rubiconv gen --length 3000 --channels 4 --batch 2 --doc-lengths lognormal:150,1.0 --filter-length 700 --skip --with-dy --seed 4 -o again.h5 && h5diff in.h5 again.h5 /x /x && h5diff in.h5 again.h5 /cu_seqlens /cu_seqlens'
for m in rubiconv perdoc padded direct fullfft; do
  check "apply --method $m" rubiconv -q apply -i in.h5 --skip --method $m -o "y_$m.h5"
done
check "grad" rubiconv -q grad -i in.h5 --skip -o g.h5
check "grad --method direct" rubiconv -q grad -i in.h5 --skip --method direct -o g_direct.h5
for i in 0 1; do rubiconv -q apply -i in.h5 --skip --shard $i/2 -o "y_shard$i.h5"; rubiconv -q grad -i in.h5 --skip --shard $i/2 -o "g_shard$i.h5"; done
check "merge apply shards" nk-data -q merge y_shard1.h5 y_shard0.h5 -o y_merged.h5
# The sbatch example, run as a job array would run it: shards from SLURM_ARRAY_* alone.
for i in 0 1; do
  SLURM_ARRAY_TASK_ID=$((i + 5)) SLURM_ARRAY_TASK_MIN=5 SLURM_ARRAY_TASK_COUNT=2 bash "$NK_SOURCE/data/batch/rubiconv.sbatch" in.h5 slurm 2>/dev/null
done
check "merge the sbatch example's shards" nk-data -q merge slurm.shard-5.h5 slurm.shard-6.h5 -o slurm_merged.h5
check "sbatch shards without --skip equal a whole run" sh -c 'rubiconv -q apply -i in.h5 -o y_noskip.h5 && h5diff y_noskip.h5 slurm_merged.h5 /y /y' 
check "merge grad shards (dk summed)" nk-data -q merge g_shard0.h5 g_shard1.h5 -o g_merged.h5
rubiconv gen --length 4096 --channels 3 --doc-lengths fixed:512 --filter stu --seed 1 -o stu.h5 2>/dev/null && pass "gen --filter stu" || fail "gen --filter stu"
printf '100\n7\n1\n' > lengths.txt
check "gen --doc-lengths FILE --dtype float64" rubiconv gen --length 500 --channels 2 --doc-lengths lengths.txt --dtype float64 --filter random -o f64.h5
check "apply float64" rubiconv -q apply -i f64.h5 -o y64.h5

if "$PY" - <<'PYEOF'
import h5py, numpy as np, sys
fails = 0
def check(name, ok):
    global fails
    print(("ok   " if ok else "FAIL ") + name); fails += 0 if ok else 1
f = h5py.File("in.h5", "r")
x, k, bias, dy, cu = f["/x"][...].astype(np.float64), f["/k"][...].astype(np.float64), f["/bias"][...].astype(np.float64), f["/dy"][...].astype(np.float64), f["/cu_seqlens"][...]
B, L, H = x.shape
ref = np.zeros_like(x); dx = np.zeros_like(x); dk = np.zeros_like(k)
for b in range(B):
    row = cu[b][cu[b] >= 0]
    for s, e in zip(row[:-1], row[1:]):
        for h in range(H):
            seg = x[b, s:e, h]
            ref[b, s:e, h] = np.convolve(seg, k[h])[: e - s] + bias[h] * seg
            g = dy[b, s:e, h]
            dx[b, s:e, h] = np.correlate(g, k[h], mode="full")[len(k[h]) - 1 : len(k[h]) - 1 + e - s] + bias[h] * g
            m = min(e - s, k.shape[1])
            dk[h, :m] += np.array([np.dot(g[t:], seg[: e - s - t]) for t in range(m)])
dbias = np.einsum("blh,blh->h", dy, x)
def rel(a, b): return np.abs(a - b).max() / np.abs(b).max()
for m in ("rubiconv", "perdoc", "padded", "direct"):
    y = h5py.File(f"y_{m}.h5", "r")["/y"][...]
    check(f"{m} equals numpy per-document np.convolve (rel err {rel(y, ref):.1e} <= 1e-5)", rel(y, ref) <= 1e-5)
check("fullfft differs (it leaks across boundaries)", rel(h5py.File("y_fullfft.h5", "r")["/y"][...], ref) > 1e-3)
check("pipe output equals file output", np.array_equal(h5py.File("y_pipe.h5", "r")["/y"][...], h5py.File("y_rubiconv.h5", "r")["/y"][...]))
g = h5py.File("g.h5", "r")
check(f"grad dx equals numpy (rel {rel(g['/dx'][...], dx):.1e})", rel(g["/dx"][...], dx) <= 1e-5)
check(f"grad dk equals numpy (rel {rel(g['/dk'][...], dk):.1e})", rel(g["/dk"][...], dk) <= 1e-5)
check(f"grad dbias equals numpy", rel(g["/dbias"][...], dbias) <= 1e-5)
ym = h5py.File("y_merged.h5", "r")
check("merged shards equal the whole run", np.array_equal(ym["/y"][...], h5py.File("y_rubiconv.h5", "r")["/y"][...]))
gm = h5py.File("g_merged.h5", "r")
check("merged grad shards: dx equal, dk summed", np.array_equal(gm["/dx"][...], g["/dx"][...]) and rel(gm["/dk"][...], g["/dk"][...]) < 1e-6)
check("output carries method and compute_seconds", ym.attrs["nk_schema"] == "rubiconv.output/1" and "compute_seconds" in h5py.File("y_rubiconv.h5", "r").attrs)
s = h5py.File("stu.h5", "r")["/k"][...]
check("STU filters are orthogonal eigenvector directions", abs(np.dot(s[0], s[1])) < 1e-6 * np.linalg.norm(s[0]) * np.linalg.norm(s[1]))
f64 = h5py.File("f64.h5", "r"); y64 = h5py.File("y64.h5", "r")["/y"]
check("float64 in, float64 out", y64.dtype == np.float64 and list(f64["/cu_seqlens"][0]) == [0, 100, 107, 108, 208, 215, 216, 316, 323, 324, 424, 431, 432, 500])
sys.exit(1 if fails else 0)
PYEOF
then pass "numpy reference"; else fail "numpy reference"; fi

# Bad input: each a one-line error, exit 3, no output file.
"$PY" - <<'PYEOF'
import h5py, numpy as np
src = h5py.File("in.h5", "r")
def variant(name, **changes):
    with h5py.File(name, "w") as f:
        for key in ("/x", "/k", "/cu_seqlens", "/bias", "/dy"):
            f[key] = changes.get(key, src[key][...])
variant("not_increasing.h5", **{"/cu_seqlens": np.array([[0, 10, 5, 3000], [0, 3000, -1, -1]])})
variant("not_zero.h5", **{"/cu_seqlens": np.array([3, 3000])})
variant("not_L.h5", **{"/cu_seqlens": np.array([0, 2999])})
variant("nan_x.h5", **{"/x": np.where(np.arange(24000).reshape(2, 3000, 4) == 7001, np.nan, src["/x"][...]).astype(np.float32)})
variant("inf_k.h5", **{"/k": np.where(np.arange(2800).reshape(4, 700) == 5, np.inf, src["/k"][...]).astype(np.float32)})
variant("h_mismatch.h5", **{"/k": src["/k"][:3]})
variant("huge_x.h5", **{"/x": (src["/x"][...] * 1e37).astype(np.float32)})
variant("long_k.h5", **{"/k": np.zeros((4, 3001), np.float32)})
with h5py.File("absurd.h5", "w") as f:
    f.create_dataset("/x", shape=(1, 1 << 36, 64), dtype=np.float32, chunks=(1, 1 << 16, 64))
    f["/k"] = np.zeros((64, 4), np.float32)
    f["/cu_seqlens"] = np.array([0, 1 << 36])
with h5py.File("no_bias_no_dy.h5", "w") as f:
    for key in ("/x", "/k", "/cu_seqlens"):
        f[key] = src[key][...]
with h5py.File("other_tool.h5", "w") as f:
    f.attrs["nk_schema"] = "nk-data.images/1"
    f["/x"] = np.zeros((1, 4, 1), np.float32)
PYEOF
expect_fail "cu_seqlens not increasing" 3 "input 'not_increasing.h5': dataset /cu_seqlens: row 0 must not decrease \(index 2: 5 < 10\)" rubiconv apply -i not_increasing.h5 -o bad.h5
expect_fail "finite /x whose convolution overflows float32 (was exit 1)" 3 "huge_x.h5.*/x.*overflows float32 in /y" rubiconv apply -i huge_x.h5 -o bad.h5
expect_fail "  ... and in grad" 3 "huge_x.h5.*/x, /dy.*overflows float32 in /d[xk]" rubiconv grad -i huge_x.h5 -o bad.h5
expect_fail "cu_seqlens not starting at 0" 3 "dataset /cu_seqlens: must start at 0, found 3" rubiconv apply -i not_zero.h5 -o bad.h5
expect_fail "cu_seqlens not ending at L" 3 "dataset /cu_seqlens: must end at L = 3000, found 2999" rubiconv apply -i not_L.h5 -o bad.h5
expect_fail "NaN in x" 3 "dataset /x: NaN at index \[0,1750,1\]" rubiconv apply -i nan_x.h5 -o bad.h5
expect_fail "Inf in k" 3 "dataset /k: Inf at index \[0,5\]" rubiconv apply -i inf_k.h5 -o bad.h5
expect_fail "H mismatch between x and k" 3 "dataset /k: has H = 3 filters but /x has H = 4 channels" rubiconv apply -i h_mismatch.h5 -o bad.h5
expect_fail "Lk > L" 3 "dataset /k: filter length Lk = 3001 must be in 1..L = 3000" rubiconv apply -i long_k.h5 -o bad.h5
expect_fail "absurd L refused before allocating" 3 "dataset /x: \[1,68719476736,64\] needs .* MiB, more than the memory available" rubiconv apply -i absurd.h5 -o bad.h5
expect_fail "another tool's file" 3 "nk_schema is 'nk-data.images/1', expected rubiconv.input/" rubiconv apply -i other_tool.h5 -o bad.h5
expect_fail "missing /bias with --skip" 3 "dataset /bias: missing" rubiconv apply -i no_bias_no_dy.h5 --skip -o bad.h5
expect_fail "grad without /dy" 3 "dataset /dy: missing" rubiconv grad -i no_bias_no_dy.h5 -o bad.h5
expect_fail "empty stdin" 3 "standard input is empty" sh -c 'rubiconv apply -i - -o bad.h5 < /dev/null'
expect_fail "gen --filter-length > --length" 2 "--filter-length must be in 1..L" rubiconv gen --length 10 --filter-length 11 -o bad.h5
expect_fail "gen absurd size" 2 "needs .* MiB, more than the memory available" rubiconv gen --length 17179869184 --channels 64 -o bad.h5
expect_fail "bad --doc-lengths" 2 "--doc-lengths: expected lognormal:MEDIAN,SIGMA" rubiconv gen --length 10 --doc-lengths lognormal:x -o bad.h5
if nvidia-smi -L >/dev/null 2>&1; then
  pass "a GPU is present: apply and grad on CUDA are compared with the CPU engine by unit.cuda"
else
  expect_fail "--device cuda without a GPU" 1 "--device cuda: " rubiconv --device cuda apply -i in.h5 -o bad.h5
fi
[ ! -e bad.h5 ] && pass "no output file from failed runs" || fail "a failed run left bad.h5"
no_temp_files "no temp files" "$WORK"
finish
