# spike_sft.sh - pretrain on a Fashion-MNIST subset (Debian's dataset-fashion-mnist,
# imported by nk-data), eval against an independent numpy LIF forward pass,
# pipes, and bad input.
. "$(dirname "$0")/lib.sh"

check "import 700 Fashion-MNIST images" nk-data -q import-idx "$FMNIST/t10k-images-idx3-ubyte.gz" "$FMNIST/t10k-labels-idx1-ubyte.gz" --limit 700 -o fm.h5
check "pretrain (1 hidden layer, direct coding)" spike-sft -q --seed 1 pretrain -i fm.h5 --hidden 48 --steps 4 --epochs 2 --batch 50 -o base.h5
check "pretrain through a pipe, zero reset, atan, rate coding, two hidden layers" sh -c 'nk-data -q import-idx "$0/t10k-images-idx3-ubyte.gz" "$0/t10k-labels-idx1-ubyte.gz" --limit 300 -o - | spike-sft -q pretrain -i - --hidden 24,16 --steps 3 --reset zero --surrogate atan --coding rate --epochs 1 --batch 30 -o rate.h5' "$FMNIST"
check "the same seed gives the same model" sh -c 'spike-sft -q --seed 1 pretrain -i fm.h5 --hidden 48 --steps 4 --epochs 2 --batch 50 -o again.h5 && h5diff base.h5 again.h5 /model /model'
check "eval prints accuracy and writes a file" spike-sft -q eval -i base.h5 --data fm.h5 -o eval.h5
spike-sft -q eval -i base.h5 --data fm.h5 > eval.txt 2>/dev/null
check "eval of the rate-coded model" spike-sft -q eval -i rate.h5 --data fm.h5

if "$PY" - <<'PYEOF'
import h5py, numpy as np, sys
fails = 0
def check(name, ok):
    global fails
    print(("ok   " if ok else "FAIL ") + name); fails += 0 if ok else 1
m = h5py.File("base.h5", "r")
check("schema spike-sft.model/1", m.attrs["nk_schema"] == b"spike-sft.model/1" or m.attrs["nk_schema"] == "spike-sft.model/1")
sizes = m["/model/sizes"][...]
check(f"sizes 784-48-10 ({sizes.tolist()})", sizes.tolist() == [784, 48, 10])
check("learned something: held-out accuracy above 50%", m.attrs["test_accuracy"] > 0.5)
# Independent forward pass in numpy (float64): direct coding, subtract reset.
a = m["/model"].attrs
T, beta, thr = int(a["steps"]), float(a["beta"]), float(a["threshold"])
W0, b0 = m["/model/weight0"][...].astype(np.float64), m["/model/bias0"][...].astype(np.float64)
W1, b1 = m["/model/weight1"][...].astype(np.float64), m["/model/bias1"][...].astype(np.float64)
d = h5py.File("fm.h5", "r")
x = d["/images"][...].reshape(d["/images"].shape[0], -1).astype(np.float64)
y = d["/labels"][...]
I = x @ W0.T + b0
U = np.zeros_like(I); count = np.zeros_like(I)
for t in range(T):
    V = beta * U + I
    S = (V - thr > 0).astype(np.float64)
    U = V - thr * S
    count += S
logits = (count / T) @ W1.T + b1
acc = float((logits.argmax(1) == y).mean())
got = dict(line.split("\t") for line in open("eval.txt").read().split("\n") if line)
check(f"eval accuracy {float(got['accuracy']):.4f} matches numpy's {acc:.4f} (within 0.5 point)", abs(float(got["accuracy"]) - acc) <= 0.005)
e = h5py.File("eval.h5", "r")
check("eval file holds the same accuracy", abs(e.attrs["accuracy"] - float(got["accuracy"])) <= 5e-5)
sys.exit(1 if fails else 0)
PYEOF
then pass "numpy reference"; else fail "numpy reference"; fi

# Bad input: exit codes and no output files.
"$PY" -c "
import h5py, numpy as np
with h5py.File('nan.h5', 'w') as f:
    x = np.random.rand(20, 4, 4, 1).astype(np.float32); x[3, 1, 1, 0] = np.nan
    f['/images'] = x; f['/labels'] = np.arange(20) % 3
with h5py.File('nolabels.h5', 'w') as f:
    f['/images'] = np.random.rand(20, 4, 4, 1).astype(np.float32)
with h5py.File('small.h5', 'w') as f:
    f['/images'] = np.random.rand(20, 4, 4, 1).astype(np.float32); f['/labels'] = np.arange(20) % 3
with h5py.File('neglabel.h5', 'w') as f:
    f['/images'] = np.random.rand(20, 4, 4, 1).astype(np.float32); f['/labels'] = np.arange(20) - 1
"
expect_fail "NaN in the images" 3 "nan.h5.*dataset /images.*(NaN|finite)" spike-sft pretrain -i nan.h5 -o bad.h5
expect_fail "no labels" 3 "dataset /labels: missing" spike-sft pretrain -i nolabels.h5 -o bad.h5
expect_fail "negative label" 3 "dataset /labels: entry 0 is -1" spike-sft pretrain -i neglabel.h5 -o bad.h5
expect_fail "eval on data of another shape" 3 "examples have 16 values, the model takes 784" spike-sft eval -i base.h5 --data small.h5
expect_fail "--steps 0" 2 "steps" spike-sft pretrain -i fm.h5 --steps 0 -o bad.h5
expect_fail "--batch larger than the data" 2 "larger than the" spike-sft pretrain -i small.h5 --batch 64 -o bad.h5
expect_fail "empty stdin" 3 "standard input" sh -c 'spike-sft pretrain -i - -o bad.h5 < /dev/null'
head -c 3000 base.h5 > truncated.h5
expect_fail "truncated model" 3 "truncated.h5" spike-sft eval -i truncated.h5 --data fm.h5
expect_fail "a foreign file as model" 3 "schema" spike-sft eval -i fm.h5 --data fm.h5
[ ! -e bad.h5 ] && pass "no output file from failed runs" || fail "a failed run left bad.h5"
no_temp_files "no temp files" "$WORK"
finish
