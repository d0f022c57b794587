# summary.py RUNS.tsv PLOT.svg - the tnqe-encode benchmark table (means over
# the items of each run) and the depth-vs-PSNR plot of camera256.
import sys, h5py, numpy as np
runs = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
rows, base = [], {}
for image, method, param, path, secs in runs:
    m = h5py.File(path, "r")["/metrics"]
    r = dict(image=image, method=method, param=param, n=len(m["index"]),
             qubits=m["qubits"][:].mean(), cnots=m["cnots"][:].mean(), depth=m["depth"][:].mean(),
             fid=m["fidelity"][:].mean(), fidmin=m["fidelity"][:].min(), psnr=m["psnr"][:].mean(),
             ssim=m["ssim"][:].mean(), succ=m["success_probability"][:].mean(), secs=float(secs) / len(m["index"]))
    rows.append(r)
    if method == "amplitude":
        base[image] = r
hdr = f"{'image':<12} {'method':<18} {'param':<7} {'qubits':>6} {'CNOTs':>8} {'depth':>8} {'/amp':>7} {'fidelity':>9} {'min fid':>8} {'PSNR dB':>8} {'SSIM':>6} {'s/image':>8}  post-sel. p"
print(hdr)
for r in rows:
    b = base.get(r["image"])
    ratio = r["depth"] / b["depth"] if b else float("nan")
    post = f"{r['succ']:.2e}" if r["succ"] < 1 else "1"
    print(f"{r['image']:<12} {r['method']:<18} {r['param']:<7} {r['qubits']:>6.0f} {r['cnots']:>8.0f} {r['depth']:>8.0f} {ratio:>7.4f} "
          f"{r['fid']:>9.5f} {r['fidmin']:>8.5f} {r['psnr']:>8.2f} {r['ssim']:>6.3f} {r['secs']:>8.2f}  {post}")
# Plot: depth (log) vs PSNR for camera256, one polyline per method, the baseline as a point.
cam = [r for r in rows if r["image"] == "camera256" and np.isfinite(r["psnr"])]
if cam:
    W, H, L, B, T, R = 720, 460, 70, 50, 30, 200
    xs = [np.log10(r["depth"]) for r in cam]
    ys = [min(r["psnr"], 60) for r in cam]
    x0, x1 = np.floor(min(xs)), np.ceil(max(xs))
    y0, y1 = 5 * np.floor(min(ys) / 5), 5 * np.ceil(max(ys) / 5)
    px = lambda v: L + (v - x0) / (x1 - x0) * (W - L - R)
    py = lambda v: H - B - (v - y0) / (y1 - y0) * (H - B - T)
    colours = {"sequential": "#1f77b4", "parallel": "#ff7f0e", "sequential+train": "#2ca02c", "layered": "#9467bd",
               "layered+train": "#d62728", "amplitude": "#000000"}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{L}" y="18" font-size="14">camera 256x256: circuit depth vs PSNR of the decoded image</text>']
    for e in range(int(x0), int(x1) + 1):
        out.append(f'<line x1="{px(e)}" y1="{T}" x2="{px(e)}" y2="{H-B}" stroke="#ddd"/><text x="{px(e)-12}" y="{H-B+16}">1e{e}</text>')
    for v in np.arange(y0, y1 + 0.1, 5):
        out.append(f'<line x1="{L}" y1="{py(v)}" x2="{W-R}" y2="{py(v)}" stroke="#ddd"/><text x="{L-30}" y="{py(v)+4}">{v:.0f}</text>')
    out.append(f'<text x="{(W-R)/2}" y="{H-10}">depth (log scale)</text><text x="12" y="{T+10}">PSNR dB</text>')
    for i, (meth, col) in enumerate(colours.items()):
        pts = sorted([(np.log10(r["depth"]), min(r["psnr"], 60), r["param"]) for r in cam if r["method"] == meth])
        if not pts:
            continue
        out.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' % (col, " ".join(f"{px(a):.1f},{py(b):.1f}" for a, b, _ in pts)))
        for a, b, p in pts:
            out.append(f'<circle cx="{px(a):.1f}" cy="{py(b):.1f}" r="4" fill="{col}"><title>{meth} {p}</title></circle>')
        out.append(f'<rect x="{W-R+15}" y="{T+20*i}" width="12" height="12" fill="{col}"/><text x="{W-R+32}" y="{T+20*i+11}">{meth}</text>')
    out.append("</svg>")
    open(sys.argv[2], "w").write("\n".join(out))
    print(f"plot: {sys.argv[2]}")
