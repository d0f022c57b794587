# sbr-render.sh - paint shipped images, check the rendering against an
# independent numpy rasteriser, the SVG against the strokes, the metrics
# against scikit-image, shards against a whole run, and refuse bad input.
. "$(dirname "$0")/lib.sh"

IMG="$NK_SOURCE/data/images/camera-64.png"
check "paint a 64x64 image (decoder init, audit), PNG, SVG, frames" \
  sbr-render -q paint -i "$IMG" --strokes 60 --iterations 60 -o cam.h5 --png cam.png --svg cam.svg --frames frames --frame-count 4
check "four frames written" test -f frames/frame_0004.png -a ! -f frames/frame_0005.png
check "paint with the colour-fidelity pull: lower colour error where seen" sh -c 'sbr-render -q paint -i "$0" --strokes 60 --iterations 60 --fidelity 3 -o fid.h5 && sbr-render -q audit -i fid.h5 --target "$0" > fid.tsv && sbr-render -q audit -i cam.h5 --target "$0" > nofid.tsv && a=$(awk -F"\t" "NR>1{s+=\$5;n++} END{print s/n}" fid.tsv) && b=$(awk -F"\t" "NR>1{s+=\$5;n++} END{print s/n}" nofid.tsv) && echo "mean colour error $a with, $b without" && awk -v a="$a" -v b="$b" "BEGIN{exit !(a < b)}"' "$IMG"
check "paint with the hidden-coverage penalty: strokes more visible" sh -c 'sbr-render -q paint -i "$0" --strokes 60 --iterations 60 --hidden-penalty 0.01 -o hid.h5 && sbr-render -q paint -i "$0" --strokes 60 --iterations 60 --hidden-penalty 0 -o nohid.h5 && sbr-render -q audit -i hid.h5 --target "$0" > hid.tsv && sbr-render -q audit -i nohid.h5 --target "$0" > nohid.tsv && a=$(awk -F"\t" "NR>1{s+=\$4;n++} END{print s/n}" hid.tsv) && b=$(awk -F"\t" "NR>1{s+=\$4;n++} END{print s/n}" nohid.tsv) && echo "mean visible fraction $a with, $b without" && awk -v a="$a" -v b="$b" "BEGIN{exit !(a > b + 0.03)}"' "$IMG"
check "with the audit strokes keep --min-opacity (no glazes)" sh -c 'sbr-render -q paint -i "$0" --strokes 40 --iterations 30 --min-opacity 0.9 -o opaque.h5 && "$1" -c "import h5py,sys; o=h5py.File(\"opaque.h5\")[\"/strokes\"][:,10]; print(\"least opacity\", o.min()); sys.exit(not o.min() >= 0.9 - 1e-6)"' "$IMG" "$PY"
check "relocation: the audits move weak strokes (/metrics/relocated), none with --relocate 0" sh -c 'sbr-render -q paint -i "$0" --strokes 60 --iterations 60 --relocate 0 -o norel.h5 && "$1" -c "
import h5py, sys
moved = int(h5py.File(\"cam.h5\")[\"/metrics/relocated\"][0]); still = int(h5py.File(\"norel.h5\")[\"/metrics/relocated\"][0])
print(\"relocated\", moved, \"by default,\", still, \"with --relocate 0\"); sys.exit(not (moved > 0 and still == 0))"' "$IMG" "$PY"
check "--no-colour-bound changes the painting (the bound moves colours while settling)" sh -c 'sbr-render -q paint -i "$0" --strokes 60 --iterations 60 --no-colour-bound -o nobound.h5 && ! h5diff -q cam.h5 nobound.h5 /strokes /strokes' "$IMG"
check "paint without audit, random init" sbr-render -q paint -i "$IMG" --strokes 60 --iterations 60 --init random --no-audit -o plain.h5
check "paint with grid init and L1 loss" sbr-render -q paint -i "$IMG" --strokes 40 --iterations 20 --init grid --loss l1 -o grid.h5
check "render at twice the size" sbr-render -q render -i cam.h5 --size 128x128 -o cam128.png --svg cam128.svg
check "render to stdout is a PNG" sh -c 'sbr-render -q render -i cam.h5 -o - | file - | grep -q PNG'
check "same seed, same strokes" sh -c 'sbr-render -q --threads 2 paint -i "$0" --strokes 30 --iterations 30 -o a1.h5 && sbr-render -q --threads 2 paint -i "$0" --strokes 30 --iterations 30 -o a2.h5 && h5diff a1.h5 a2.h5 /strokes /strokes' "$IMG"
check "audit summary" sh -c 'sbr-render -q audit -i cam.h5 --target "$0" --summary > sum.tsv && grep -q "^fraction" sum.tsv' "$IMG"
check "audit report, one line per stroke" sh -c 'sbr-render -q audit -i cam.h5 --target "$0" > report.tsv' "$IMG"
check "speed: tiled against brute force" sh -c 'sbr-render -q speed -i cam.h5 --target "$0" --repeats 1 > speed.tsv && grep -q speedup_forward_backward speed.tsv' "$IMG"
check "train a decoder briefly (synthetic windows) and paint with it" sh -c 'sbr-render -q train-decoder --steps 20 --batch 8 -o dec.h5 && sbr-render -q paint -i "$0" --decoder dec.h5 --strokes 20 --iterations 5 -o d.h5' "$IMG"

# A stack: shards merged by nk-data equal a whole run.
check "import 3 images as a stack" nk-data -q import "$NK_SOURCE/data/images/camera-64.png" "$NK_SOURCE/data/images/coins-64.png" "$NK_SOURCE/data/images/moon-64.png" --channels 3 -o stack.h5
check "paint the stack whole, through a pipe" sh -c 'cat stack.h5 | sbr-render -q --threads 2 paint -i - --strokes 25 --iterations 20 -o whole.h5 --png s.png'
check "numbered PNGs for a stack" test -f s-000002.png
check "paint shards 0/2 and 1/2, merge" sh -c 'sbr-render -q --threads 2 paint -i stack.h5 --strokes 25 --iterations 20 --shard 0/2 -o p0.h5 && sbr-render -q --threads 2 paint -i stack.h5 --strokes 25 --iterations 20 --shard 1/2 -o p1.h5 && nk-data -q merge p1.h5 p0.h5 -o merged.h5'
check "merged shards equal the whole run" sh -c 'h5diff whole.h5 merged.h5 /strokes /strokes && h5diff whole.h5 merged.h5 /offsets /offsets && h5diff whole.h5 merged.h5 /items /items'
for i in 0 1; do
  SLURM_ARRAY_TASK_ID=$i SLURM_ARRAY_TASK_COUNT=2 bash "$NK_SOURCE/data/batch/sbr-render.sbatch" stack.h5 slurm 20 2>/dev/null
done
check "the sbatch example's shards merge to all three paintings" sh -c 'nk-data -q merge slurm.shard-0.h5 slurm.shard-1.h5 -o slurm.h5 && h5dump -d /items slurm.h5 | grep -q "0, 1, 2"'
check "audit a stack against its images" sh -c 'sbr-render -q audit -i whole.h5 --target stack.h5 --summary | grep -q "^fraction"'

"$PY" - "$IMG" <<'PY' && pass "numpy rasteriser, SVG, PSNR/SSIM and audit agree with sbr-render" || fail "python reference checks"
import sys, h5py, numpy as np, xml.etree.ElementTree as ET
from skimage import io
from skimage.metrics import peak_signal_noise_ratio, structural_similarity
ok = True
def expect(cond, what):
    global ok
    if not cond:
        print("FAIL", what); ok = False
with h5py.File("cam.h5") as f:
    assert f.attrs["nk_schema"] == "sbr-render.strokes/1"
    S = f["/strokes"][:].astype(np.float64); bg = f["/background"][0].astype(np.float64)
    H, W = f["/canvas"][0]; psnr = f["/metrics/psnr"][0]; ssim = f["/metrics/ssim"][0]
expect(S[:, 10].min() >= 0.6 - 1e-6, f"with the audit no stroke below opacity 0.6 (least {S[:, 10].min():.3f})")
# Independent rasteriser: distance by dense sampling of the curve, smoothstep
# coverage, alpha compositing bottom to top.
def rasterise(S, bg, W, H, scale):
    ys, xs = np.mgrid[0:int(H * scale), 0:int(W * scale)] + 0.5
    img = np.ones(xs.shape + (3,)) * bg
    t = np.linspace(0, 1, 4001)
    for s in S:
        p = np.array(s[:6]).reshape(3, 2) * scale
        B = np.outer((1 - t) ** 2, p[0]) + np.outer(2 * t * (1 - t), p[1]) + np.outer(t ** 2, p[2])
        lo = B.min(0) - s[6] * scale; hi = B.max(0) + s[6] * scale
        m = (xs >= lo[0] - 1) & (xs <= hi[0] + 1) & (ys >= lo[1] - 1) & (ys <= hi[1] + 1)
        if not m.any(): continue
        px, py = xs[m], ys[m]
        d = np.full(px.shape, np.inf)
        for k in range(0, len(t), 500):
            Bk = B[k:k + 500]
            d = np.minimum(d, np.sqrt((px[:, None] - Bk[None, :, 0]) ** 2 + (py[:, None] - Bk[None, :, 1]) ** 2).min(1))
        u = np.clip((s[6] * scale / 2 + 0.5 - d) / 1.0, 0, 1)
        a = s[10] * u * u * (3 - 2 * u)
        img[m] = a[:, None] * s[7:10] + (1 - a[:, None]) * img[m]
    return img
for png, scale in (("cam.png", 1), ("cam128.png", 2)):
    ref = rasterise(S, bg, W, H, scale)
    got = io.imread(png)[..., :3] / 255.0
    err = np.abs(ref - got).max()
    expect(err <= 3 / 255, f"{png}: max difference {err * 255:.2f}/255 from the numpy rasteriser")
# SVG: one quadratic path per stroke, same geometry and colour.
root = ET.parse("cam.svg").getroot()
paths = [e for e in root.iter() if e.tag.endswith("path")]
expect(len(paths) == len(S), f"SVG has {len(paths)} paths for {len(S)} strokes")
for e, s in zip(paths, S):
    nums = [float(v) for v in e.get("d").replace("M", " ").replace("Q", " ").split()]
    expect(np.allclose(nums, s[:6], atol=0.006), "SVG path geometry")
    expect(abs(float(e.get("stroke-width")) - s[6]) < 0.006, "SVG stroke width")
    col = e.get("stroke"); rgb = [int(col[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    expect(np.allclose(rgb, np.clip(s[7:10], 0, 1), atol=0.5 / 255 + 1e-6), "SVG colour")
# PSNR and SSIM against scikit-image (gray target replicated to RGB).
target = io.imread(sys.argv[1]).astype(np.float64) / 255.0
target = np.repeat(target[..., None], 3, axis=2) if target.ndim == 2 else target[..., :3]
render = rasterise(S, bg, W, H, 1)
p_ref = peak_signal_noise_ratio(target, render, data_range=1.0)
s_ref = structural_similarity(target, render, data_range=1.0, channel_axis=2, gaussian_weights=True, sigma=1.5, use_sample_covariance=False)
expect(abs(p_ref - psnr) < 0.05, f"PSNR {psnr:.3f} vs scikit-image {p_ref:.3f}")
expect(abs(s_ref - ssim) < 0.005, f"SSIM {ssim:.4f} vs scikit-image {s_ref:.4f}")
# The audit's table and summary agree.
rows = [l.split("\t") for l in open("report.tsv").read().splitlines()[1:]]
summ = dict(l.split("\t") for l in open("sum.tsv").read().splitlines())
expect(len(rows) == len(S) == int(summ["strokes"]), "audit report has a line per stroke")
expect(sum(r[6] != "good" for r in rows) == int(summ["defective"]), "audit summary counts the defective lines")
with h5py.File("whole.h5") as f:
    expect(list(f["/items"][:]) == [0, 1, 2], "stack items")
sys.exit(0 if ok else 1)
PY

# Bad input.
"$PY" -c "
import h5py, numpy as np, shutil
with h5py.File('zero.h5','w') as f: f['/images'] = np.zeros((1,0,8,3), np.float32)
with h5py.File('nanimg.h5','w') as f:
    x = np.ones((1,8,8,3), np.float32); x[0,2,2,1] = np.nan; f['/images'] = x
with h5py.File('huge.h5','w') as f: f.create_dataset('/images', shape=(1, 100000, 100000, 3), dtype=np.float32)
shutil.copy('cam.h5', 'nan.h5')
with h5py.File('nan.h5','r+') as f: f['/strokes'][0, 3] = np.nan
shutil.copy('cam.h5', 'outside.h5')
with h5py.File('outside.h5','r+') as f:
    s = f['/strokes'][:]; s[:5, :6] = s[:5, :6] * 40 - 900; s[5, :6] = [1e30, -1e30, 3e29, 1e30, -2e30, 5]; f['/strokes'][...] = s
shutil.copy('dec.h5', 'dec_v2.h5')
with h5py.File('dec_v2.h5','r+') as f: f.attrs['nk_schema'] = 'sbr-render.decoder/2'
shutil.copy('dec.h5', 'dec_shape.h5')
with h5py.File('dec_shape.h5','r+') as f:
    del f['/decoder/w3']; f['/decoder/w3'] = np.zeros((5, 5), np.float32)
"
check "strokes outside the canvas are clipped, not a crash" sbr-render -q render -i outside.h5 -o outside.png
expect_fail "--strokes 0" 2 "strokes" sbr-render paint -i "$IMG" --strokes 0 -o bad.h5
expect_fail "--relocate above 1" 2 "relocate" sbr-render paint -i "$IMG" --relocate 2 -o bad.h5
expect_fail "image of zero size" 3 "zero size" sbr-render paint -i zero.h5 -o bad.h5
expect_fail "NaN pixel" 3 "/images.*(NaN|finite)" sbr-render paint -i nanimg.h5 -o bad.h5
expect_fail "absurd image size: refused before reading" 3 "refused before" sbr-render paint -i huge.h5 -o bad.h5
expect_fail "NaN stroke parameter" 3 "nan.h5.*/strokes" sbr-render render -i nan.h5 -o bad.png
expect_fail "decoder of another version" 3 "decoder/2" sbr-render paint -i "$IMG" --decoder dec_v2.h5 -o bad.h5
expect_fail "decoder with wrong shapes" 3 "/decoder/w3" sbr-render paint -i "$IMG" --decoder dec_shape.h5 -o bad.h5
expect_fail "truncated strokes file" 3 "cut.h5" sh -c 'head -c 2000 cam.h5 > cut.h5; sbr-render render -i cut.h5 -o bad.png'
expect_fail "empty stdin" 3 "standard input" sh -c 'sbr-render paint -i - -o bad.h5 < /dev/null'
expect_fail "not an image" 3 "notimg" sh -c 'echo hello > notimg.txt; sbr-render paint -i notimg.txt -o bad.h5'
expect_fail "target of another size" 3 "canvas" sbr-render audit -i cam.h5 --target cam128.png
expect_fail "bad --size" 2 "WxH" sbr-render render -i cam.h5 --size 12 -o bad.png
expect_fail "absurd --size: refused before allocating" 2 "GB" sbr-render render -i cam.h5 --size 65536x65536 -o bad.png
# Memory the process may use is what its limits leave, not the machine's free memory (#40):
# 20000x20000 needs about 9.6 GB; under ulimit -v 4 GB it is refused before allocating.
# (ASan reserves terabytes of address space for its shadow memory: no ulimit -v there.)
if [ -z "${ASAN_OPTIONS:-}" ]; then
  expect_fail "--size 20000x20000 under ulimit -v 4 GB: refused before allocating" 2 "needs 9 GB.*ulimit" sh -c 'ulimit -v 4000000; sbr-render speed -i cam.h5 --size 20000x20000 --no-brute'
fi
check "--frame-count 100000 of a 5-stroke painting (was half an hour)" sbr-render -q paint -i "$IMG" --strokes 5 --iterations 5 --frames many --frame-count 100000 -o few.h5
n=$("$PY" -c "import h5py; print(len(h5py.File('few.h5')['/strokes']))")
[ "$(ls many | wc -l)" = "$n" ] && pass "  one frame per stroke: $n" || fail "  $(ls many | wc -l) frames for $n strokes"
check "no partial outputs" sh -c '! ls bad.h5 bad.png 2>/dev/null'
no_temp_files "no temp files left" .
"$PY" -c "import h5py; h5py.File('huge.h5', 'w').create_dataset('images', shape=(2**40, 8, 8, 1), dtype='f4', chunks=(1, 8, 8, 1))"
expect_fail "a file declaring 2^40 images (1 KB on disk)" 3 "huge.h5.*/images.*more than 2\\^24" sbr-render -q paint -i huge.h5 --strokes 10 --iterations 1 -o out_huge.h5
finish
