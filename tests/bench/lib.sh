# lib.sh - what every benchmark script shares. Sourced first thing as
#   . "$(dirname "$0")/../lib.sh" BIN_FOLDER NAME
# it puts the binaries on PATH ($bin), makes a scratch folder $work (removed
# on exit) and defines attr FILE NAME (a root attribute of an output file)
# and limits (sets TRIAD_GBS and SGEMM_GFLOPS, this machine's memory
# bandwidth and SGEMM rate on 2 threads, from build/bench/limits.env, which
# tests/bench/limits/limits.sh measures when it is missing).
set -euo pipefail
bin=$(cd "$1" && pwd)
export PATH="$bin:$PATH"
work=$(mktemp -d "${TMPDIR:-/tmp}/$2-XXXXXX")
trap 'rm -rf "$work"' EXIT
attr() { nk-data info "$1" --format tsv | awk -F'\t' -v k="$2" '$1=="attribute" && $2==k {print $7}'; }
limits() {
  local env
  env="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/bench/limits.env"
  [ -s "$env" ] || bash "$(dirname "${BASH_SOURCE[0]}")/limits/limits.sh" "$env" > /dev/null
  # shellcheck disable=SC1090
  . "$env"
}
