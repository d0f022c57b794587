#!/bin/bash
# run.sh BIN_DIR - sbr-render's headline comparison in one run:
#   renderer: tiled analytic QBS against the brute-force polyline renderer
#             (DiffVG semantics), forward and forward+backward, 512x512, 2000 strokes;
#   quality:  the method (decoder init + audit) against (b) random init without
#             audit (prior practice) and (c) random / grid init with audit, at
#             equal stroke budget, and the method with 15% fewer strokes against
#             (b); defective strokes surviving (sbr-render audit);
#   images:   scikit-image's astronaut, chelsea, coffee, camera at 256 (500
#             strokes) and 512 (2000 strokes).
# Env: SIZES="256 512", IMAGES="astronaut chelsea coffee camera" (any of scikit-image's .png/.jpg
# images, e.g. the held-out "retina gravel motorcycle_right clock_motion"), ITER (500).
# About 17 min on 2 cores.
set -euo pipefail
BIN=$(cd "${1:-build/bin}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
SK=$($PY -c 'import skimage, os; print(os.path.join(os.path.dirname(skimage.__file__), "data"))')
WORK=$(mktemp -d "${TMPDIR:-/tmp}/nk-bench-sbr-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
SIZES=${SIZES:-256 512}
IMAGES=${IMAGES:-astronaut chelsea coffee camera}
ITER=${ITER:-500}
export PATH="$BIN:$PATH"
echo "# sbr-render benchmark: $(nproc) cores, iterations $ITER"
for size in $SIZES; do
  budget=$([ "$size" -ge 512 ] && echo 2000 || echo 500)
  for img in $IMAGES; do
    f="$SK/$img.png"; [ -f "$f" ] || f="$SK/$img.jpg"
    [ -f "$f" ] || { echo "run.sh: no image $img.png or $img.jpg in $SK" >&2; exit 2; }
    nk-data -q import "$f" --channels 3 --resize "${size}x${size}" -o "$img-$size.h5"
    for method in "method:--init decoder" "b_random_noaudit:--init random --no-audit" "c_random_audit:--init random" "c_grid_audit:--init grid"; do
      name=${method%%:*}; opts=${method#*:}
      /usr/bin/time -f "%M" -o "mem-$name-$img-$size.txt" \
        sbr-render -q paint -i "$img-$size.h5" --strokes "$budget" --iterations "$ITER" $opts -o "$name-$img-$size.h5"
      sbr-render -q audit -i "$name-$img-$size.h5" --target "$img-$size.h5" --summary > "audit-$name-$img-$size.tsv"
    done
    # The method with 15% fewer strokes, against (b) at the full budget.
    sbr-render -q paint -i "$img-$size.h5" --strokes $((budget * 85 / 100)) --iterations "$ITER" -o "method85-$img-$size.h5"
  done
done
big=$(echo $SIZES | tr ' ' '\n' | sort -n | tail -1)
img=$(echo $IMAGES | tr ' ' '\n' | sed -n 2p); img=${img:-$(echo $IMAGES | cut -d' ' -f1)}
echo "# renderer speed on method-$img-$big.h5 (best of 3; brute force: 16-segment polylines, best of 1)"
sbr-render speed -i "method-$img-$big.h5" --target "$img-$big.h5" --repeats 3 --no-brute > speed-qbs.tsv
sbr-render speed -i "method-$img-$big.h5" --target "$img-$big.h5" --repeats 1 > speed.tsv
$PY "$HERE/summary.py" "$WORK" "$SIZES" "$IMAGES"
