# lib.sh - what every benchmark script shares. Sourced first thing as
#   . "$(dirname "$0")/../lib.sh" BIN_FOLDER NAME
# it puts the binaries on PATH ($bin), makes a scratch folder $work (removed
# on exit) and defines attr FILE NAME (a root attribute of an output file).
set -euo pipefail
bin=$(cd "$1" && pwd)
export PATH="$bin:$PATH"
work=$(mktemp -d "${TMPDIR:-/tmp}/$2-XXXXXX")
trap 'rm -rf "$work"' EXIT
attr() { nk-data info "$1" --format tsv | awk -F'\t' -v k="$2" '$1=="attribute" && $2==k {print $7}'; }
