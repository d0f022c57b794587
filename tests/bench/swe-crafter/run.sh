#!/bin/bash
# tests/bench/swe-crafter/run.sh BIN: the first, partial benchmark of issue
# #31 on the repositories this machine has: the three shipped fixture
# repositories (Python, C/CMake, Perl) and every installed Debian Go or Rust
# source package named in DEBIAN_PKGS (default: the golang-*-dev and
# librust-*-dev packages installed, at most MAX_PKGS). Per repository:
# environment success with the fixed method and with skills (attempts),
# candidates (history for the fixtures, SYNTHETIC bugs for Debian trees),
# validated instances, validation time against the protocol's floor
# (2 states x RUNS suite runs x instances x the suite's time), and the
# builtin agent's resolved trajectories. The issue's full benchmark (>= 48
# repositories in >= 8 languages, swebench's grading beside ours) is not
# this yet.
set -eu
BIN=$(cd "${1:-build/bin}" && pwd)
OUT=${OUT:-build/bench/swe-crafter}
RUNS=${RUNS:-2}
SYNTHETIC=${SYNTHETIC:-3}
MAX_PKGS=${MAX_PKGS:-6}
here=$(cd "$(dirname "$0")" && pwd)
data=$(cd "$here/../../../data/swe-crafter" && pwd)
export PATH="$BIN:/usr/bin:$PATH"
rm -rf "$OUT" && mkdir -p "$OUT" && cd "$OUT"
SANDBOX=""
[ -n "$(swe-crafter doctor | awk -F'\t' '$1 == "sandbox" && $2 == "namespace" && $3 == "no"')" ] && SANDBOX="--sandbox none"
now() { date +%s.%N; }
if [ -z "${DEBIAN_PKGS+x}" ]; then
  DEBIAN_PKGS=$(dpkg-query -W -f='${Package}\n' 'golang-*-dev' 'librust-*-dev' 2>/dev/null | head -n "$MAX_PKGS" | tr '\n' ' ')
fi
echo "# swe-crafter benchmark ($(nproc) cores, $(date +%F)); runs $RUNS, synthetic $SYNTHETIC"
echo
echo "| repository | language | fixed env | skills env (attempts) | candidates | instances | validate s | floor s | validate / floor | builtin resolved |"
echo "|---|---|---|---|---|---|---|---|---|---|"
row() {
  local name=$1 mode=$2
  swe-crafter -q env -i "$name" --store st --method fixed $SANDBOX -o "fixed-$name.json" || return 0
  swe-crafter -q env -i "$name" --store st --method skills $SANDBOX -o "skills-$name.json" || return 0
  local ok
  ok=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["ok"])' "skills-$name.json")
  if [ "$ok" = True ]; then
    if [ "$mode" = history ]; then
      swe-crafter -q mine -i "$name" --store st --env "skills-$name.json" -o "cand-$name.jsonl"
    else
      swe-crafter -q mine -i "$name" --store st --env "skills-$name.json" --synthetic "$SYNTHETIC" --seed 1 $SANDBOX -o "cand-$name.jsonl"
    fi
    local t0 t1
    t0=$(now)
    swe-crafter -q validate -i "cand-$name.jsonl" --store st --runs "$RUNS" $SANDBOX -o "inst-$name.jsonl" > "verdicts-$name.tsv"
    t1=$(now)
    echo "$t1 - $t0" | bc -l > "validate-$name.s"
    swe-crafter -q distill -i "inst-$name.jsonl" --store st $SANDBOX -o "traj-$name.jsonl" > "distill-$name.tsv"
  fi
  /usr/bin/python3 - "$name" "$RUNS" <<'PYEOF'
import json, os, sys
name, runs = sys.argv[1], int(sys.argv[2])
fixed, skills = json.load(open("fixed-%s.json" % name)), json.load(open("skills-%s.json" % name))
lines = lambda f: sum(1 for _ in open(f)) if os.path.exists(f) else 0
cand, inst, traj = lines("cand-%s.jsonl" % name), lines("inst-%s.jsonl" % name), lines("traj-%s.jsonl" % name)
seconds = float(open("validate-%s.s" % name).read()) if os.path.exists("validate-%s.s" % name) else float("nan")
floor = 2 * runs * cand * skills.get("test_seconds", 0.0)
ratio = seconds / floor if floor > 0 else float("nan")
print("| %s | %s | %s | %s (%d) | %d | %d | %.1f | %.1f | %.2f | %d |" % (
    name, skills["language"] or fixed["language"], "ok" if fixed["ok"] else "fails", "ok" if skills["ok"] else "fails",
    skills["attempts"], cand, inst, seconds, floor, ratio, traj))
PYEOF
}
for lang in repo c perl; do
  script="$data/fixture-$lang.sh"
  [ "$lang" = repo ] && script="$data/fixture-repo.sh"
  name="fixture-$lang"
  bash "$script" "$name" > /dev/null
  swe-crafter -q fetch "git:$PWD/$name" --store st > /dev/null
  row "$name" history
done
for pkg in $DEBIAN_PKGS; do
  swe-crafter -q fetch "debian-bin:$pkg" --store st > /dev/null 2>&1 || continue
  row "debian-bin.$pkg" synthetic
done
echo
echo "validate / floor: validation's wall clock over 2 states x $RUNS runs x candidates x the suite's time (env's test_seconds)."
