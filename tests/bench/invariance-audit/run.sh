#!/usr/bin/env bash
# run.sh BIN_DIR [OUT_DIR] - invariance-audit's benchmark, one run (2 threads, nothing else running),
# with the shipped prior (data/invariance-audit/prior.h5):
#  1. one audit (1 query, 8 samples, 40 steps, 4 inner steps) by NDTM on planted:mask-left: our
#     seconds against the same prior and the same NDTM step written in PyTorch (torch_ndtm.py,
#     autograd for the VJPs; the peer a researcher would otherwise write), and our sampler's
#     GFLOP/s (prior multiply-adds x 2 x (forwards + 2 backwards) x samples / seconds) as a
#     share of this machine's SGEMM rate (torch, 2048^3, 2 threads);
#  2. the methods side by side: ndtm, dps, none (the prior alone), invert (no prior) on
#     planted:mask-left, planted:down4 and a CNN's penultimate features (trained here on
#     TRAIN items, 2 epochs), Q test queries x 8 samples: median relative mismatch, the
#     revealed fraction for the planted fibers (fixed part within 2%, free part >= 20% off the
#     query's), mean diversity, seconds per audit.
# Q (default 20) and TRAIN (default 10000) shrink it. Not yet here (issue #29): the dedicated
# conditional model, realism (Frechet distance), likelihood.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
. "$here/../lib.sh" "$1" invariance-audit
out=${2:-$root/build/bench/invariance-audit}
mkdir -p "$out"
PY=/usr/bin/python3
# The peer and the SGEMM probe run in the benchmark venv (PyPI torch with MKL); PYV=/usr/bin/python3
# uses Debian's torch instead (whose SGEMM is far from the machine's limit).
PYV=${PYV:-$(bash "$here/../nk-lm/venv.sh" | tail -1)}
FM=/usr/share/datasets/fashion-mnist
Q=${Q:-20} TRAIN=${TRAIN:-10000}
PRIOR=$root/data/invariance-audit/prior.h5
T="--threads 2"
started=$SECONDS

nk-data -q import-idx $FM/t10k-images-idx3-ubyte.gz --limit "$Q" -o "$work/q.h5"
echo "== 1. one audit: ours against PyTorch, and the machine's limit"
invariance-audit -q $T --seed 1 sample --query "$work/q.h5" --index 0 --extractor planted:mask-left --samples 8 -o "$out/audit.h5"
peer=$("$PYV" "$here/torch_ndtm.py" "$PRIOR" "$work/q.h5" --index 0 --samples 8 --threads 2)
limit=$("$PYV" "$root/tests/bench/proxy-certify/torch_certify.py" --sgemm --size 2048 --threads 2)
"$PY" - "$out/audit.h5" "$PRIOR" "$peer" "$limit" <<'PYEOF'
import sys, h5py, numpy as np
a, prior, peer, limit = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
m = h5py.File(a)["/metrics"]
ours = float(m["seconds"][0])
# multiply-adds of one image through the U-Net: every conv2d and linear of every part
macs = 0
with h5py.File(prior) as f:
    for name in f["/prior/parts"]:
        g = f[f"/prior/parts/{name}"]
        h, w, c = (int(v) for v in g.attrs["input"].split(","))
        for line in [s.decode() if isinstance(s, bytes) else s for s in g["arch"][()]]:
            op, *x = line.split(); x = [int(v) for v in x]
            if op == "upsample": h, w = h * x[0], w * x[0]
            if op == "linear": macs += x[0] * x[1]
            if op == "conv2d":
                h, w = (h + 2 * x[4] - x[2]) // x[3] + 1, (w + 2 * x[4] - x[2]) // x[3] + 1
                macs += h * w * x[1] * x[0] * x[2] * x[2]
flops = 2 * macs * 8 * (int(m["prior_forwards"][0]) + 2 * int(m["prior_backwards"][0]))
gflops = flops / ours / 1e9
peak = float(limit.split("=")[1])
ps = float(peer.split()[0].split("=")[1]); pm = float(peer.split()[1].split("=")[1])
print(f"prior: {macs / 1e6:.1f} M multiply-adds per image; one audit = {flops / 1e9:.1f} GFLOP")
print(f"ours:    {ours:.2f} s per audit, median mismatch {np.median(m['mismatch'][()]):.4f}, {gflops:.1f} GFLOP/s = {gflops / peak:.2f} of the {peak:.1f} GFLOP/s SGEMM limit")
print(f"PyTorch: {ps:.2f} s per audit, median mismatch {pm:.4f} (ours {ps / ours:.2f}x its speed)")
PYEOF

echo "== 2. methods side by side ($Q queries x 8 samples)"
nk-data -q import-idx $FM/train-images-idx3-ubyte.gz $FM/train-labels-idx1-ubyte.gz --limit "$TRAIN" -o "$work/train.h5"
invariance-audit -q $T --seed 2 train-extractor -i "$work/train.h5" --kind cnn --epochs 2 -o "$out/cnn.h5"
for ex in planted:mask-left planted:down4 cnn; do
  spec=$ex; [ "$ex" = cnn ] && spec="$out/cnn.h5:penultimate"
  for g in ndtm dps none invert; do
    invariance-audit -q $T --seed 1 sample --query "$work/q.h5" --all --extractor "$spec" --samples 8 --guidance $g \
      -o "$out/${ex#planted:}-$g.h5"
  done
done
"$PY" - "$out" <<'PYEOF'
import sys, h5py, numpy as np
out = sys.argv[1]
print("extractor\tmethod\tmedian_mismatch\trevealed\tdiversity\tseconds_per_audit")
for ex in ["mask-left", "down4", "cnn"]:
    for g in ["ndtm", "dps", "none", "invert"]:
        f = h5py.File(f"{out}/{ex}-{g}.h5")
        s, q, m = f["/samples"][()], f["/query"][()], f["/metrics"]
        rev = "-"
        if ex == "mask-left":
            part = lambda a, lo, hi: a[..., lo:hi, :].reshape(a.shape[:-3] + (-1,))
            fixed = np.linalg.norm(part(s, 14, 28) - part(q, 14, 28)[:, None], axis=-1) / np.linalg.norm(part(q, 14, 28), axis=-1)[:, None]
            free = np.linalg.norm(part(s, 0, 14) - part(q, 0, 14)[:, None], axis=-1) / np.maximum(np.linalg.norm(part(q, 0, 14), axis=-1)[:, None], 1e-9)
            rev = f"{np.mean((fixed <= 0.02) & (free >= 0.2)):.2f}"
        if ex == "down4":
            b = lambda a: a.reshape(a.shape[:-3] + (7, 4, 7, 4)).mean(axis=(-3, -1)).reshape(a.shape[:-3] + (-1,))
            fixed = np.linalg.norm(b(s) - b(q)[:, None], axis=-1) / np.linalg.norm(b(q), axis=-1)[:, None]
            free = np.linalg.norm((s - q[:, None]).reshape(s.shape[:2] + (-1,)), axis=-1) / np.linalg.norm(q.reshape(q.shape[0], -1), axis=-1)[:, None]
            rev = f"{np.mean((fixed <= 0.02) & (free >= 0.2)):.2f}"
        print(f"{ex}\t{g}\t{np.median(m['mismatch'][()]):.4f}\t{rev}\t{m['diversity'][()].mean():.2f}\t{m['seconds'][()].mean():.2f}")
PYEOF
echo "run.sh: $((SECONDS - started)) s"
