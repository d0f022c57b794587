"""loss_svg.py OUT.svg TITLE LABEL=FILE.tsv [LABEL=FILE.tsv ...] - training
loss against step of several runs (TSV with columns step and loss, as
nk-lm train --log and torch_train.py write them) overlaid in one SVG."""
import csv
import sys

W, H, L, R, T, B = 720, 420, 70, 180, 40, 50
COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b']


def curve(path):
    rows = list(csv.DictReader(open(path), delimiter='\t'))
    return [(int(r['step']), float(r['loss'])) for r in rows if r.get('loss') not in (None, '', 'nan')]


def main():
    out, title, runs = sys.argv[1], sys.argv[2], [a.split('=', 1) for a in sys.argv[3:]]
    curves = [(label, curve(path)) for label, path in runs]
    xs = [s for _, c in curves for s, _ in c]
    ys = [v for _, c in curves for _, v in c]
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(ys), max(ys)
    pad = 0.05 * (y1 - y0 or 1)
    y0, y1 = y0 - pad, y1 + pad
    px = lambda s: L + (s - x0) / max(1, x1 - x0) * (W - L - R)
    py = lambda v: T + (y1 - v) / (y1 - y0) * (H - T - B)
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="14">{title}</text>',
           f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#444"/>']
    for k in range(6):
        v = y0 + (y1 - y0) * k / 5
        s = x0 + (x1 - x0) * k / 5
        svg.append(f'<line x1="{L - 4}" x2="{L}" y1="{py(v):.1f}" y2="{py(v):.1f}" stroke="#444"/>'
                   f'<text x="{L - 8}" y="{py(v) + 4:.1f}" text-anchor="end">{v:.2f}</text>')
        svg.append(f'<line x1="{px(s):.1f}" x2="{px(s):.1f}" y1="{H - B}" y2="{H - B + 4}" stroke="#444"/>'
                   f'<text x="{px(s):.1f}" y="{H - B + 18}" text-anchor="middle">{s:.0f}</text>')
    svg.append(f'<text x="{(L + W - R) / 2}" y="{H - 12}" text-anchor="middle">step</text>')
    svg.append(f'<text x="16" y="{(T + H - B) / 2}" transform="rotate(-90 16 {(T + H - B) / 2})" '
               f'text-anchor="middle">training loss (nats/token)</text>')
    for i, (label, c) in enumerate(curves):
        colour = COLOURS[i % len(COLOURS)]
        pts = ' '.join(f'{px(s):.1f},{py(v):.1f}' for s, v in c)
        svg.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        y = T + 16 + 20 * i
        svg.append(f'<line x1="{W - R + 12}" x2="{W - R + 36}" y1="{y}" y2="{y}" stroke="{colour}" stroke-width="2"/>'
                   f'<text x="{W - R + 42}" y="{y + 4}">{label}</text>')
    svg.append('</svg>')
    open(out, 'w').write('\n'.join(svg) + '\n')


main()
