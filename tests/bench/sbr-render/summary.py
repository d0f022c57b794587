"""summary.py WORK SIZES IMAGES - tables of the sbr-render benchmark."""
import sys, os, h5py, numpy as np
work, sizes, images = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
methods = [("method", "decoder + audit (method)"), ("b_random_noaudit", "(b) random, no audit"),
           ("c_random_audit", "(c) random + audit"), ("c_grid_audit", "(c) grid + audit")]
def tsv(path):
    return dict(l.split("\t") for l in open(path).read().splitlines())
print("\n## Quality at equal stroke budget (mean over images)\n")
print("| size | strokes | variant | PSNR dB | SSIM | strokes kept | defective | paint s | peak MB |")
print("|---|---|---|---|---|---|---|---|---|")
for size in sizes:
    budget = 2000 if int(size) >= 512 else 500
    base = None
    for key, label in methods:
        p, s, kept, dfr, sec, mem = [], [], [], [], [], []
        for img in images:
            with h5py.File(os.path.join(work, f"{key}-{img}-{size}.h5")) as f:
                p.append(f["/metrics/psnr"][0]); s.append(f["/metrics/ssim"][0]); sec.append(f["/metrics/seconds"][0])
                kept.append(f["/offsets"][1])
            a = tsv(os.path.join(work, f"audit-{key}-{img}-{size}.tsv"))
            dfr.append(float(a["fraction"]))
            mem.append(int(open(os.path.join(work, f"mem-{key}-{img}-{size}.txt")).read().split()[-1]) / 1024)
        if key == "b_random_noaudit":
            base = np.mean(p)
        print(f"| {size} | {budget} | {label} | {np.mean(p):.2f} | {np.mean(s):.4f} | {np.mean(kept):.0f} | "
              f"{100 * np.mean(dfr):.2f}% | {np.mean(sec):.1f} | {max(mem):.0f} |")
    means = {"method": [], "b_random_noaudit": [], "method85": []}
    for img in images:
        read = lambda key: h5py.File(os.path.join(work, f"{key}-{img}-{size}.h5"))
        pm, pb, p85 = (read(k)["/metrics/psnr"][0] for k in ("method", "b_random_noaudit", "method85"))
        for key, v in zip(("method", "b_random_noaudit", "method85"), (pm, pb, p85)):
            means[key].append(v)
        n85 = read("method85")["/offsets"][1]
        dm = float(tsv(os.path.join(work, f"audit-method-{img}-{size}.tsv"))["fraction"])
        print(f"|  | {img} | method vs (b): {pm:.2f} vs {pb:.2f} dB ({100 * (pm / pb - 1):+.1f}%), defective "
              f"{100 * dm:.2f}%; method with {n85} strokes: {p85:.2f} dB ({'>=' if p85 >= pb else '<'} (b) with {budget}) "
              f"| | | | | | |")
    pm, pb, p85 = (np.mean(means[k]) for k in ("method", "b_random_noaudit", "method85"))
    print(f"|  | mean | method vs (b): {pm:.2f} vs {pb:.2f} dB ({100 * (pm / pb - 1):+.1f}%); method with 85% of the "
          f"budget: {p85:.2f} dB ({'>=' if p85 >= pb else '<'} (b)) | | | | | | |")
print("\n## Renderer, forward and forward+backward\n")
q, b = tsv(os.path.join(work, "speed-qbs.tsv")), tsv(os.path.join(work, "speed.tsv"))
print(f"{q['size']}, {q['strokes']} strokes: QBS forward {1e3 * float(q['qbs_forward_s']):.1f} ms, "
      f"forward+backward {1e3 * float(q['qbs_forward_backward_s']):.1f} ms; brute force ({b['brute_segments']} segments) "
      f"forward {float(b['brute_forward_s']):.2f} s, forward+backward {float(b['brute_forward_backward_s']):.2f} s; "
      f"speedup forward {float(b['brute_forward_s']) / float(q['qbs_forward_s']):.0f}x, forward+backward "
      f"{float(b['brute_forward_backward_s']) / float(q['qbs_forward_backward_s']):.0f}x; relative gradient "
      f"difference {float(b['gradient_relative_difference']):.3f}")
