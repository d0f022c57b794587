# lib.sh - helpers for the CLI tests: each check prints one line, the script
# exits non-zero if any failed. Sourced by every tests/cli/*.sh.
set -u
: "${NK_BIN:?NK_BIN must point at the folder of the built binaries}"
: "${NK_SOURCE:?NK_SOURCE must point at the source tree}"
PY=/usr/bin/python3
SKIMAGE_DATA=$($PY -c 'import skimage, os; print(os.path.join(os.path.dirname(skimage.__file__), "data"))' 2>/dev/null)
FMNIST=/usr/share/datasets/fashion-mnist
WORK=$(mktemp -d "${TMPDIR:-/tmp}/nk-cli-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1
export PATH="$NK_BIN:$PATH"
FAILED=0
PASSED=0

pass() { PASSED=$((PASSED + 1)); echo "ok   $*"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL $*"; }

# check NAME COMMAND...: the command must succeed.
# A check that takes a second or more says how long (which checks to trim
# when the suite grows).
check() {
  local name=$1 t0=$EPOCHREALTIME; shift
  if "$@" >"$WORK/.out" 2>"$WORK/.err"; then
    pass "$name$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { if (b - a >= 1) printf " (%.1f s)", b - a }')"
  else fail "$name (rc=$?)"; sed 's/^/     /' "$WORK/.err" | head -5; fi
}

# expect_fail NAME CODE PATTERN COMMAND...: exits CODE, stderr is one line
# "TOOL: error: ..." matching PATTERN (grep -E), stdout is empty.
expect_fail() {
  local name=$1 code=$2 pattern=$3; shift 3
  "$@" >"$WORK/.out" 2>"$WORK/.err"
  local rc=$?
  local lines
  lines=$(grep -c . "$WORK/.err")
  if [ "$rc" -ne "$code" ]; then
    fail "$name: exit $rc, expected $code"; sed 's/^/     /' "$WORK/.err" | head -3
  elif ! grep -Eq -- "$pattern" "$WORK/.err"; then
    fail "$name: stderr does not match '$pattern'"; sed 's/^/     /' "$WORK/.err" | head -3
  elif [ "$lines" -ne 1 ] || ! grep -q ': error: ' "$WORK/.err"; then
    fail "$name: expected one 'error:' line on stderr, got $lines"; sed 's/^/     /' "$WORK/.err" | head -3
  elif [ -s "$WORK/.out" ]; then
    fail "$name: wrote to stdout on failure"
  else
    pass "$name (exit $code: $(cat "$WORK/.err"))"
  fi
}

# same NAME FILE1 FILE2: byte-identical files.
same() {
  if cmp -s "$2" "$3"; then pass "$1"; else fail "$1 ($2 and $3 differ)"; fi
}

# no_temp_files NAME DIR: no .*.tmp.* left behind.
no_temp_files() {
  if ls -a "$2" | grep -q '\.tmp\.'; then fail "$1: temp file left in $2"; else pass "$1"; fi
}

finish() {
  echo "$PASSED passed, $FAILED failed"
  [ "$FAILED" -eq 0 ]
}
