#!/bin/bash
# tests/bench/swe-crafter/run.sh BIN: issue #31's benchmark, one run, on the
# real repositories this machine reaches offline or through Debian's archive
# and PyPI: the corpus files of tests/bench/swe-crafter/corpus (CORPUS: the
# languages, default all: python (PyPI release chains), go (golang-*-dev
# trees), rust (librust-*-dev crates), perl (lib*-perl source packages and
# their Debian patches), c and cpp (C and C++ source packages), javascript
# (node-* source packages), ruby (ruby-* source packages), php (php-* source
# packages)) and the three shipped fixture histories. The source packages' build and test
# dependencies are BENCH_PACKAGES (make -f Makefile.dist bench installs
# them); at the end `swe-crafter doctor -i --missing` says what any of them
# still lacks.
#
# 1. The corpus is split in two halves, line by line, alternating within each
#    language. Half A runs the whole pipeline (`swe-crafter run --fixed-too
#    --synthetic S --induce skills.d`): environments with the fixed method and
#    with skills, history and synthetic candidates, validation (--runs R),
#    the builtin agent's trajectories, and what worked written back as skills.
#    Half B runs the same with the shipped skills only. Then induce.sh, with
#    environments only: half A's successes written back as skills in corpus
#    order, and half B's environments without and with them (attempts per
#    success).
# 2. `swe-crafter stats` over both logs: per language, env success fixed vs
#    skills, attempts per success, candidates and instances by source, flaky
#    rejections, trajectories, validation time against the protocol's floor.
# 3. A second, independent validate (SWE-bench's re-check) of every admitted
#    instance, every state built from scratch (--fresh, where the pipeline's
#    validation reused a prepared workspace per repository): 0 must fail (no
#    flaky instance admitted, no instance admitted by a stale build).
# 4. The peer: SWE-bench's own grading (the swebench package, PyPI, in
#    build/bench-venv-swebench: tests/bench/swe-crafter/venv.sh) on the
#    status maps of every validated candidate, beside our verdicts.
# 5. Throughput: admitted instances per hour of the pipeline's seconds.
# 6. This project's own history (history.sh, HISTORY=0 skips it): its newest
#    candidates validated with the toolkit's Release build and its ctest suite.
# RESUME=1 keeps OUT and goes on where a stopped run left off (each
# repository's folder is resumed by `run`; its row keeps the seconds it took),
# so the run can span sessions; throughput counts the rows' seconds.
set -eu
BIN=$(cd "${1:-build/bin}" && pwd)
OUT=${OUT:-build/bench/swe-crafter}
RUNS=${RUNS:-2}
SYNTHETIC=${SYNTHETIC:-5}
TIMEOUT=${TIMEOUT:-300}
MAXSEC=${MAXSEC:-600}  # the builtin agent's budget per trajectory (a minute-long suite costs it a minute per edit)
CORPUS=${CORPUS:-python go rust perl c cpp javascript ruby php}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../.." && pwd)
VENV=${VENV:-$src/build/bench-venv-swebench}
export PATH="$BIN:/usr/bin:$PATH"
[ "${RESUME:-0}" = 1 ] || rm -rf "$OUT"
mkdir -p "$OUT" && cd "$OUT"
SANDBOX=""
[ -n "$(swe-crafter doctor | awk -F'\t' '$1 == "sandbox" && $2 == "namespace" && $3 == "no"')" ] && SANDBOX="--sandbox none"
now() { date +%s.%N; }
echo "# swe-crafter benchmark ($(nproc) cores, $(date +%F)); runs $RUNS, synthetic $SYNTHETIC, timeout $TIMEOUT s, agent budget $MAXSEC s"
swe-crafter doctor | awk -F'\t' '$1 == "sandbox" {print "# sandbox: " $2 ": " $3 " (" $4 ")"}'

# the corpus: the fixtures' histories (git), then each language's file; halves alternate within a language
for f in repo c perl; do
  script="$src/data/swe-crafter/fixture-$f.sh"
  [ "$f" = repo ] && script="$src/data/swe-crafter/fixture-repo.sh"
  [ -d "fixtures/fixture-$f" ] || bash "$script" "fixtures/fixture-$f" > /dev/null
done
{
  echo "git:$PWD/fixtures/fixture-repo fixture-python"
  echo "git:$PWD/fixtures/fixture-c fixture-c"
  echo "git:$PWD/fixtures/fixture-perl fixture-perl"
  for lang in $CORPUS; do grep -v '^#' "$here/corpus/$lang.txt" | grep .; done
} > corpus.txt
awk 'NR % 2 == 1' corpus.txt > corpus-A.txt
awk 'NR % 2 == 0' corpus.txt > corpus-B.txt
echo "# corpus: $(wc -l < corpus.txt) sources ($(wc -l < corpus-A.txt) in half A, $(wc -l < corpus-B.txt) in half B)"

COMMON="--store st --fixed-too --synthetic $SYNTHETIC --runs $RUNS --timeout $TIMEOUT --max-seconds $MAXSEC --seed 1 $SANDBOX"
t0=$(now)
swe-crafter -q run --corpus corpus-A.txt -o A --induce skills.d $COMMON > A.tsv
t1=$(now)
swe-crafter -q run --corpus corpus-B.txt -o B $COMMON > B.tsv
t2=$(now)
# induction, environments only (induce.sh): half A's written back as skills, half B's without and with them
OUT="$PWD" TIMEOUT="$TIMEOUT" bash "$here/induce.sh" "$BIN" > induction.txt
# the pipeline's seconds: the rows' (a resumed repository's row keeps the seconds it took when it ran)
awk -F'\t' 'NR > 1 {s += $8} END {print s + 0}' A.tsv > A.seconds
awk -F'\t' 'NR > 1 {s += $8} END {print s + 0}' B.tsv > B.seconds
echo "# half A: $(echo "$t1 - $t0" | bc -l | cut -d. -f1) s of wall clock in this invocation, half B: $(echo "$t2 - $t1" | bc -l | cut -d. -f1) s"

echo
echo "## Per language (swe-crafter stats -i A/run.h5 -i B/run.h5)"
echo
swe-crafter -q stats -i A/run.h5 -i B/run.h5 --svg stats.svg | tee stats.md

echo
echo "## Per repository"
echo
echo "| repository | half | language | env fixed | env skills (attempts) | candidates | instances | resolved | seconds |"
echo "|---|---|---|---|---|---|---|---|---|"
for half in A B; do
  tail -n +2 "$half.tsv" | while IFS=$'\t' read -r repo language env attempts cand inst traj secs; do
    fixed="-"
    [ -f "$half/repos/$repo/env-fixed.json" ] &&
      fixed=$(/usr/bin/python3 -c 'import json, sys; print("ok" if json.load(open(sys.argv[1]))["ok"] else "fails")' "$half/repos/$repo/env-fixed.json")
    printf '| %s | %s | %s | %s | %s (%s) | %s | %s | %s | %.0f |\n' "$repo" "$half" "$language" "$fixed" "${env:0:60}" "$attempts" "$cand" "$inst" "$traj" "$secs"
  done
done

# 3. the second, independent validation of every admitted instance
cat A/instances.jsonl B/instances.jsonl > all-instances.jsonl
t3=$(now)
recheck_rc=0
swe-crafter -q validate -i all-instances.jsonl --store st --runs 1 --fresh --timeout "$TIMEOUT" $SANDBOX > recheck.tsv || recheck_rc=$?
t4=$(now)

# 4. the peer: SWE-bench's grading on our status maps
peer="(no swebench venv: bash tests/bench/swe-crafter/venv.sh)"
if [ -x "$VENV/bin/python" ]; then
  "$VENV/bin/python" "$here/swebench_grade.py" A B > swebench.txt
  peer=$(head -n -1 swebench.txt)
fi

/usr/bin/python3 - "$RUNS" <<'PYEOF'
import glob, json, os, sys
runs = int(sys.argv[1])
def env(path):
    return json.load(open(path)) if os.path.exists(path) else None
print("\n## Skills induced on half A, used on half B (induce.sh)\n")
print(open("induction.txt").read().rstrip())
# the second validation
rc = [l.rstrip("\n").split("\t") for l in open("recheck.tsv")]
held = sum(1 for r in rc if len(r) > 1 and r[1] == "ok")
print("\n## Second, independent validation of the admitted instances\n")
print("%d of %d admitted instances hold on a second validate (the re-check); %d fail (flaky admitted)" % (held, len(rc), len(rc) - held))
for r in rc:
    if len(r) > 1 and r[1] != "ok":
        print("  " + " | ".join(r))
# throughput
secs = float(open("A.seconds").read()) + float(open("B.seconds").read())
inst = sum(1 for _ in open("all-instances.jsonl"))
print("\n## Throughput\n")
print("%d instances admitted in %.0f s of pipeline (both halves, every stage): %.1f instances per hour on %d cores" % (
    inst, secs, 3600 * inst / secs if secs > 0 else 0, os.cpu_count()))
PYEOF
echo
echo "## The peer: SWE-bench's grading (swebench $("$VENV/bin/python" -c 'import swebench; print(swebench.__version__)' 2>/dev/null || echo '-')) on our status maps"
echo
echo "$peer"
echo
echo "re-check exit status: $recheck_rc ($(echo "$t4 - $t3" | bc -l | cut -c1-6) s)"

# 6. this project's own history
if [ "${HISTORY:-1}" = 1 ]; then
  echo
  echo "## This project's history (tests/bench/swe-crafter/history.sh)"
  echo
  OUT="$PWD/history" RUNS="$RUNS" bash "$here/history.sh" "$BIN" > history.txt 2>&1 || echo "history.sh failed: $(tail -3 history.txt)"
  grep -E '^(# |history:)' history.txt || true
fi

# what the Debian source packages' build dependencies still lack here (installs run before, outside the sandbox)
deb=$(ls st/repos | grep '^debian-src\.' | sed 's/^/-i /' | tr '\n' ' ')
missing=""
[ -n "$deb" ] && missing=$(swe-crafter doctor $deb --store st --missing | tr '\n' ' ')
echo "Debian source packages' build dependencies not installed: ${missing:-none}"
