# teacher-limits.sh - teacher | data through a pipe, checked in numpy; files
# written by h5py alone accepted; theory against independent numpy state
# evolutions (k = 1 GLM with a first-order jump, tanh GLM, the linear closed
# form, coupled he3 GLMs where a solver that kept the uninformed branch would
# fail); bad input.
. "$(dirname "$0")/lib.sh"

TL="teacher-limits -q"
REF="$NK_SOURCE/tests/cli/teacher_limits_reference.py"
check "teacher | data through a pipe" sh -c "$TL teacher --d 16 --k 8 --beta 1 --activation he3 --noise 0.25 --seed 3 -o - | $TL data -i - --n 3000 --test 500 --seed 4 -o data.h5"
check "data again with fewer rows" sh -c "$TL teacher --d 16 --k 8 --beta 1 --activation he3 --noise 0.25 --seed 3 -o t.h5 && $TL data -i t.h5 --n 100 --test 50 --seed 4 -o small.h5"

"$PY" - <<'PYEOF'
import h5py, numpy as np, os, sys
sys.path.insert(0, os.environ["NK_SOURCE"] + "/tests/cli")
from nk_check import report, finish
f, s = h5py.File("data.h5"), h5py.File("small.h5")
W, v = f["/teacher/W"][()], f["/teacher/v"][()]
report(W.shape == (8, 16) and W.dtype == np.float64 and v.shape == (8,), "teacher: /teacher/W [k,d] float64, /teacher/v [k]")
p = np.arange(1, 9) ** -1.0
report(np.allclose(v, p / np.linalg.norm(p)), "teacher: v_i = i^-beta / ||(j^-beta)_j||")
report(f.attrs["activation"] == "he3" and f.attrs["noise"] == 0.25 and f.attrs["beta"] == 1.0, "root attributes activation, noise, beta")
X, y, Xt, ft, yt = (f[k][()] for k in ["/train/X", "/train/y", "/test/X", "/test/f", "/test/y"])
he3 = lambda z: (z**3 - 3 * z) / np.sqrt(6)
report(np.allclose(he3(Xt @ W.T / 4.0) @ v, ft, atol=1e-12), "data: /test/f = sum_i v_i he3(w_i.x / sqrt d) recomputed")
noise = np.var(y - he3(X @ W.T / 4.0) @ v)
report(abs(noise - 0.25) < 0.03, f"data: noise variance {noise:.4f} ~ Delta 0.25")
report(abs(np.var(yt - ft) - 0.25) < 0.06, "data: /test/y - /test/f has variance Delta")
report(abs(X.std() - 1) < 0.02 and abs(X.mean()) < 0.02, "x ~ N(0, I_d)")
report(np.array_equal(s["/train/X"][()], X[:100]) and np.array_equal(s["/train/y"][()], y[:100]), "the first n rows of a larger n are the same rows")
# A teacher written by h5py alone: only the named datasets and attributes.
with h5py.File("foreign.h5", "w") as g:
    g["/teacher/W"] = np.random.default_rng(0).standard_normal((5, 12))
    g["/teacher/v"] = np.array([0.8, 0.4, 0.3, 0.2, 0.1])
    g.attrs["activation"] = "tanh"
    g.attrs["noise"] = 0.5
finish()
PYEOF
[ $? -eq 0 ] && pass "teacher and data checked in numpy" || fail "teacher and data checked in numpy"

check "data and theory take a file with no nk_* attributes" sh -c "$TL data -i foreign.h5 --n 10 --test 10 -o fd.h5 && $TL theory -i foreign.h5 --n 12,120 -o fth.h5"

# theory against the references (tests/cli/teacher_limits_reference.py).
check "theory: k = 1 he3 across its jump" $TL theory --d 64 --k 1 --activation he3 --noise 100 --n 6400,8500,9500,10500,11000,14000,25000 -o glm_he3.h5
check "  matches the numpy GLM state evolution" "$PY" "$REF" glm glm_he3.h5 he3
check "theory: k = 1 tanh" $TL theory --d 64 --k 1 --activation tanh --noise 0.5 --n 16,128,1024 -o glm_tanh.h5
check "  matches the numpy GLM state evolution" "$PY" "$REF" glm glm_tanh.h5 tanh
check "theory: linear, k = 8" $TL theory --d 64 --k 8 --activation linear --noise 0.5 --n 10,64,300,3000 -o lin.h5
check "  matches m = rho / (1 + alpha rho / (Delta + m))" "$PY" "$REF" linear lin.h5
check "theory: coupled he3 GLMs, k = 6" $TL theory --d 64 --k 6 --activation he3 --noise 2000 --n 1e5,3e5,1e6,3e6,1e7,3e7,1e8 -o he3.h5
check "  matches the numpy coupled equations; BO and uninformed told apart" "$PY" "$REF" he3 he3.h5

"$PY" - <<'PYEOF'
import h5py, numpy as np, os, sys
t = h5py.File("he3.h5")["/theory"]
q, kc, on, n = t["overlap"][()], t["k_c"][()], t["onset_n"][()], t["n"][()]
ok = np.array_equal(kc, (q >= 0.5).sum(1)) and np.all(np.diff(on[np.isfinite(on)]) > 0)
ok &= np.all(t["student_eps"][-1] - t["eps_bo"][()] < 1e-9) and np.all(np.diff(t["student_eps"][()], axis=0) <= 1e-9)
print(("ok   " if ok else "FAIL ") + "k_c counts q >= 1/2; onsets rise with i; wider students err less, width k is BO")
sys.exit(0 if ok else 1)
PYEOF
[ $? -eq 0 ] && pass "theory outputs consistent" || fail "theory outputs consistent"

# Bad input: exit 3 naming file and dataset, exit 2 for bad options, no output left.
"$PY" - <<'PYEOF'
import h5py, numpy as np
def write(name, W, v, act="he3", noise=0.1):
    with h5py.File(name, "w") as g:
        g["/teacher/W"] = W
        g["/teacher/v"] = v
        g.attrs["activation"] = act
        g.attrs["noise"] = noise
W = np.ones((4, 6))
write("kmismatch.h5", W, np.ones(3))
Wn = W.copy(); Wn[1, 2] = np.nan
write("nan.h5", Wn, np.ones(4))
write("empty.h5", np.ones((0, 6)), np.ones(0))
write("noise0.h5", W, np.ones(4), noise=0.0)
write("act.h5", W, np.ones(4), act="swish")
PYEOF
expect_fail "k mismatch between /teacher/W and /teacher/v" 3 "kmismatch.h5.*/teacher/v.*k must match" $TL data -i kmismatch.h5 -o o.h5
expect_fail "NaN in /teacher/W" 3 "nan.h5.*/teacher/W" $TL theory -i nan.h5 --n 10 -o o.h5
expect_fail "theory with Delta 1e-300 (its solve would not end)" 2 "Delta >= 1e-3" $TL theory --d 8 --k 3 --noise 1e-300 --n 10 -o o.h5
expect_fail "k = 0" 3 "empty.h5.*/teacher/W.*empty" $TL data -i empty.h5 -o o.h5
expect_fail "Delta <= 0 in the file" 3 "noise0.h5.*noise.*Delta > 0" $TL theory -i noise0.h5 --n 10 -o o.h5
expect_fail "unknown activation in the file" 3 "act.h5.*unknown activation 'swish'" $TL data -i act.h5 -o o.h5
expect_fail "beta <= 1/2 given to theory" 2 "beta must exceed 1/2" $TL theory --beta 0.5 --n 10 -o o.h5
expect_fail "n = 0" 2 "n must be a finite number > 0" $TL theory --n 0 -o o.h5
expect_fail "relu-centered beyond n = d^2" 2 "quadratic part.*d\\^2 = 256" $TL theory --d 16 --activation relu-centered --n 100,1000 -o o.h5
expect_fail "Delta <= 0 on the command line" 2 "noise" $TL teacher --noise 0 -o o.h5
expect_fail "absurd sizes" 2 "GiB" $TL teacher --d 16000000 --k 16000000 -o o.h5
expect_fail "empty stdin" 3 "standard input is empty" sh -c "$TL data -i - -o o.h5 < /dev/null"
head -c 2000 data.h5 > truncated.h5
expect_fail "truncated file" 3 "truncated.h5" $TL data -i truncated.h5 -o o.h5
[ ! -e o.h5 ] && pass "no partial output after the failures" || fail "o.h5 was left behind"
no_temp_files "no temp files left" .
finish
