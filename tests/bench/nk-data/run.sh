#!/usr/bin/env bash
# nk-data benchmark: the cost of a pipe against a file for a 51 MB image stack
# (17 RGB 512x512 float32 images): wall time and peak memory of each route.
set -euo pipefail
bin=$(cd "$1" && pwd)
export PATH="$bin:$PATH"
skimage=$(/usr/bin/python3 -c 'import skimage, os; print(os.path.join(os.path.dirname(skimage.__file__), "data"))')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stack=$(for i in $(seq 17); do printf '%s ' "$skimage/astronaut.png"; done)

# measure LABEL COMMAND: best of 3 wall times; peak RSS of the largest process.
measure() {
  local label=$1 best="" peak=0; shift
  for run in 1 2 3; do
    /usr/bin/time -f '%e %M' -o "$work/t" bash -c "$*" 2>/dev/null
    read -r seconds kib < "$work/t"
    if [ -z "$best" ] || awk "BEGIN{exit !($seconds < $best)}"; then best=$seconds; fi
    [ "$kib" -gt "$peak" ] && peak=$kib
  done
  printf '%-34s %8.2f s %10.1f MiB\n' "$label" "$best" "$(awk "BEGIN{print $peak/1024}")"
}

printf '%-34s %10s %14s\n' "route" "wall" "peak RSS"
measure "import -> file" "nk-data -q import $stack -o $work/s.h5"
measure "import -> file -> info" "nk-data -q import $stack -o $work/s.h5 && nk-data info $work/s.h5 >/dev/null"
measure "import -o - | info -" "nk-data -q import $stack -o - | nk-data info - >/dev/null"
measure "import -o - | export -" "nk-data -q import $stack -o - | nk-data -q export - --index 16 -o $work/x.png"
measure "export from file" "nk-data -q export $work/s.h5 --index 16 -o $work/y.png"
