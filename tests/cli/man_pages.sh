# man_pages.sh - every man page lints clean, every binary has one, and every
# option that a binary's --help shows (for each verb too) is in its page.
. "$(dirname "$0")/lib.sh"

for page in "$NK_SOURCE"/man/man1/*.1 "$NK_SOURCE"/man/man7/*.7; do
  name=$(basename "$page")
  out=$(groff -man -ww -z "$page" 2>&1)
  [ -z "$out" ] && pass "groff lint $name" || { fail "groff lint $name"; echo "$out" | head -5; }
  if command -v mandoc >/dev/null; then
    out=$(mandoc -Tlint -Wwarning "$page" 2>&1)
    [ -z "$out" ] && pass "mandoc lint $name" || { fail "mandoc lint $name"; echo "$out" | head -5; }
  fi
done

# Options shown in CLI11 help: "  -x,--long TYPE  text" or "  --long ...".
options_of() { grep -Eo '^ +(-[A-Za-z],)?--[a-z0-9-]+|^ +-[A-Za-z]\b' | tr ',' '\n' | tr -d ' ' | sort -u; }
verbs_of() { awk '/^Subcommands:/{on=1;next} on&&/^  [a-z]/{print $1} on&&/^$/{on=0}'; }

for tool in $(ls "$NK_BIN" | grep -v '\.so$' | grep -v '^nk_unit_tests$'); do
  page="$NK_SOURCE/man/man1/$tool.1"
  if [ ! -f "$page" ]; then fail "$tool has no man page"; continue; fi
  pass "$tool has a man page"
  help=$("$tool" --help)
  missing=""
  for verb in "" $(echo "$help" | verbs_of); do
    for opt in $( { if [ -z "$verb" ]; then echo "$help"; else "$tool" "$verb" --help; fi; } | options_of); do
      escaped=$(printf '%s' "$opt" | sed 's/-/\\\\-/g')
      grep -q -- "$escaped" "$page" || missing="$missing ${verb:+$verb:}$opt"
    done
  done
  [ -z "$missing" ] && pass "$tool.1 names every option of --help" || fail "$tool.1 lacks:$missing"
  grep -q '^\.SH EXIT STATUS' "$page" && pass "$tool.1 has EXIT STATUS" || fail "$tool.1 has no EXIT STATUS"
  grep -q '^\.SH EXAMPLES' "$page" && pass "$tool.1 has EXAMPLES" || fail "$tool.1 has no EXAMPLES"
done
finish
