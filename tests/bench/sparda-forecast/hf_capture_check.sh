#!/usr/bin/env bash
# hf_capture_check.sh BIN [PYTHON] - checks tools/sparda-forecast/hf_capture.py
# (the Hugging Face hook script) against nk-lm capture: the shipped causal
# model exported as a Hugging Face folder, the same 200 tokens of Debian's
# fortunes through both, every dataset compared (relative 1e-4); then
# sparda-forecast trains and evaluates a Forecast on the hook's capture.
# PYTHON: an interpreter with torch and transformers (default: the
# benchmark venv of tests/bench/nk-lm/venv.sh). Not part of ctest.
set -euo pipefail
bin=${1:?usage: hf_capture_check.sh BIN [PYTHON]}
here=$(cd "$(dirname "$0")/../../.." && pwd)
py=${2:-$(bash "$here/tests/bench/nk-lm/venv.sh" | tail -1)}
export PATH="$bin:$PATH"
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
M="$here/data/lm/causal.h5"
nk-lm -q export -m "$M" -o "$w/hf"
nk-lm -q corpus --source fortunes --tokenizer "$M" -o "$w/c.h5"
/usr/bin/python3 - "$w" <<'PYEOF'
import h5py, numpy as np, sys
w = sys.argv[1]
c = h5py.File(f"{w}/c.h5"); tok = c["tokens"][:199]
with h5py.File(f"{w}/ids.h5", "w") as f: f["tokens"] = np.concatenate([[2044], tok]).astype(np.int32)  # BOS + 199
PYEOF
nk-lm -q capture -m "$M" --token-ids "$w/ids.h5" -o "$w/nk.h5"
"$py" "$here/tools/sparda-forecast/hf_capture.py" "$w/hf" --token-ids "$w/ids.h5" -o "$w/hf.h5"
/usr/bin/python3 - "$w" <<'PYEOF'
import h5py, numpy as np, sys
w = sys.argv[1]
a, b = h5py.File(f"{w}/nk.h5"), h5py.File(f"{w}/hf.h5")
worst = 0.0
for l in range(4):
    for n in ("attn_in", "q", "k", "v", "wq", "wk"):
        x, y = a[f"capture/layer_{l:02d}/{n}"][...], b[f"capture/layer_{l:02d}/{n}"][...]
        assert x.shape == y.shape, (l, n, x.shape, y.shape)
        worst = max(worst, float(np.abs(x - y).max() / np.abs(x).max()))
assert a.attrs["rope_theta"] == b.attrs["rope_theta"]
assert (a["capture/tokens"][...] == b["capture/tokens"][...]).all()
print(f"hf_capture.py = nk-lm capture on every layer's attn_in, q, k, v, wq, wk: worst relative difference {worst:.2e}")
sys.exit(0 if worst < 1e-4 else 1)
PYEOF
sparda-forecast -q train -i "$w/hf.h5" --block 16 --topk 4 --steps 50 -o "$w/f.h5"
sparda-forecast eval -i "$w/hf.h5" --forecast "$w/f.h5" --block 16 --topk 4 -o "$w/e.h5"
echo "hf_capture_check: ok"
