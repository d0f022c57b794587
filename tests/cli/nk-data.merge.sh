# nk-data.merge.sh - shard outputs merge back into the whole, in shard order.
. "$(dirname "$0")/lib.sh"

"$PY" - <<'PYEOF'
import h5py, numpy as np
rng = np.random.default_rng(0)
whole = rng.normal(size=(10, 3)).astype(np.float32)
ids = np.arange(10, dtype=np.int64)
hits = [rng.integers(0, 50, size=rng.integers(0, 4)) for _ in range(10)]
np.save("whole.npy", whole)
bounds = [(0, 4), (4, 7), (7, 10)]
for i, (a, b) in enumerate(bounds):
    with h5py.File(f"part{i}.h5", "w") as f:
        f.attrs["nk_schema"] = "test.shards/1"
        f.attrs["nk_shard"] = f"{i}/3"
        f["/x"] = whole[a:b]; f["/x"].attrs["dims"] = "N,D"
        f["/ids"] = ids[a:b]
        f["/config"] = np.array([1.5, 2.5]); f["/config"].attrs["nk_merge"] = "same"
        f["/partial"] = np.full((2, 2), i + 1, np.float32); f["/partial"].attrs["nk_merge"] = "sum"
        counts = [len(h) for h in hits[a:b]]
        f["/offsets"] = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        f["/offsets"].attrs["nk_merge"] = "offsets"
        f["/hits"] = np.concatenate([np.zeros(0, np.int64)] + [h.astype(np.int64) for h in hits[a:b]])
        f["/names"] = np.array([f"item{k}".encode() for k in range(a, b)], dtype=h5py.string_dtype())
import shutil
shutil.copy("part1.h5", "odd.h5")
with h5py.File("odd.h5", "a") as f:
    del f["/x"]
    f["/x"] = np.zeros((2, 4), np.float32)
with h5py.File("lacking.h5", "w") as f:
    f.attrs["nk_schema"] = "test.shards/1"; f.attrs["nk_shard"] = "1/3"
    f["/x"] = np.zeros((3, 3), np.float32)
np.save("hits.npy", np.concatenate([h for h in hits]).astype(np.int64))
PYEOF

check "merge shards given out of order" nk-data merge part2.h5 part0.h5 part1.h5 -o merged.h5
if "$PY" - <<'PYEOF'
import h5py, numpy as np
with h5py.File("merged.h5", "r") as f:
    assert np.array_equal(f["/x"][...], np.load("whole.npy")), "x"
    assert f["/x"].attrs["dims"] == "N,D"
    assert np.array_equal(f["/ids"][...], np.arange(10)), "ids"
    assert np.array_equal(f["/config"][...], [1.5, 2.5]), "config"
    assert f["/partial"].dtype == np.float32 and np.array_equal(f["/partial"][...], np.full((2, 2), 6.0)), "sum"
    offsets = f["/offsets"][...]
    assert offsets[0] == 0 and len(offsets) == 11 and np.all(np.diff(offsets) >= 0), "offsets"
    assert np.array_equal(f["/hits"][...], np.load("hits.npy")), "hits"
    assert offsets[-1] == len(f["/hits"]), "offsets end"
    names = [n.decode() if isinstance(n, bytes) else n for n in f["/names"][...]]
    assert names == [f"item{k}" for k in range(10)], names
    assert f.attrs["nk_schema"] == "test.shards/1"
    assert "part0.h5" in f.attrs["nk_merged_from"]
PYEOF
then pass "merged datasets equal the whole (concat, same, offsets, sum, strings)"; else fail "merged content"; fi
expect_fail "missing shard" 3 "shard\(s\) 1/3 missing" nk-data merge part0.h5 part2.h5 -o partial.h5
check "--allow-partial" nk-data merge part0.h5 part2.h5 --allow-partial -o partial.h5
expect_fail "duplicate shard" 3 "shard 0/3 is given twice" nk-data merge part0.h5 part0.h5 part1.h5 part2.h5 -o dup.h5
expect_fail "shapes that do not fit" 3 "dataset /x: shape \[2,4\] does not fit" nk-data merge part0.h5 odd.h5 part2.h5 -o bad.h5
expect_fail "a dataset missing in one part" 3 "input 'lacking.h5': dataset /config: missing here" nk-data merge part0.h5 lacking.h5 part2.h5 -o bad.h5
# CSR offsets that decrease, go negative or add up past int64 (#40).
$PY - <<'EOF2'
import h5py, numpy as np
for name, offsets in [("decreasing", [0, 5, 3, 6]), ("negative", [0, -4]), ("huge", [0, 2**62, 2**62 + 5])]:
    for part in range(2):
        with h5py.File(f"off_{name}{part}.h5", "w") as f:
            f.attrs["nk_schema"] = "test.merge/1"
            f["/offsets"] = np.array(offsets if part == 1 or name == "huge" else [0, 1], np.int64)
            f["/offsets"].attrs["nk_merge"] = "offsets"
EOF2
expect_fail "decreasing CSR offsets" 3 "off_decreasing1.h5.*/offsets.*must not decrease \(index 2: 3 < 5\)" nk-data merge off_decreasing0.h5 off_decreasing1.h5 -o bad.h5
expect_fail "negative CSR offsets" 3 "off_negative1.h5.*/offsets.*must not decrease" nk-data merge off_negative0.h5 off_negative1.h5 -o bad.h5
expect_fail "CSR offsets that overflow int64 once joined" 3 "off_huge1.h5.*/offsets.*overflow int64" nk-data merge off_huge0.h5 off_huge1.h5 -o bad.h5
check "merge through a pipe" sh -c 'nk-data merge part0.h5 part1.h5 part2.h5 -o - | nk-data info - --format tsv > piped.tsv'
grep -q $'/x\t\[10,3\]' piped.tsv && pass "piped merge has /x [10,3]" || fail "piped merge shape"
[ ! -e dup.h5 ] && [ ! -e bad.h5 ] && pass "failed merges leave no file" || fail "failed merge left a file"
finish
