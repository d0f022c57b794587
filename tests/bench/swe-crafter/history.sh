#!/bin/bash
# tests/bench/swe-crafter/history.sh BIN: the benchmark's row for this
# project's own history (issue #31: >= 10 instances from it). The repository
# this script sits in is fetched into a store (read only, as fetch always
# does), its environment found by env with the skill of
# tests/bench/swe-crafter/skills (the toolkit's Release build without CUDA
# and its ctest suite: the shipped cmake-ctest skill would build Debug, whose
# suite takes several times as long), its first-parent history mined, and
# the newest MAX candidates validated (--runs RUNS); each state runs the ctest
# tests whose names hold a touched test file's stem (tests/cli/nk-data.sh:
# cli.nk-data and unit.nk-data). Candidates whose tests are swe-crafter's own
# are left out: its CLI test takes two minutes a run, and it runs swe-crafter
# inside swe-crafter's sandbox. A state builds incrementally from one
# prepared workspace (the first candidate's commit, fully built once); a
# changed CMakeLists.txt is regenerated there (install and build again),
# and a state whose build fails there is built from scratch (8 to 13
# minutes on 2 cores). About 5 minutes a candidate from the prepared
# workspace, 20 with a scratch build. Prints the verdicts, then a summary
# line; run.sh calls it with OUT=its folder/history. RESUME=1 keeps OUT:
# the store, env.json and mined.jsonl found there are reused, and only the
# candidates without a line in verdicts.tsv are validated.
set -eu
BIN=$(cd "${1:-build/bin}" && pwd)
OUT=${OUT:-build/bench/swe-crafter-history}
RUNS=${RUNS:-2}
MAX=${MAX:-12}
TIMEOUT=${TIMEOUT:-3600}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../.." && pwd)
export PATH="$BIN:/usr/bin:$PATH"
[ "${RESUME:-0}" = 1 ] || rm -rf "$OUT"
mkdir -p "$OUT" && cd "$OUT"
SANDBOX=""
[ -n "$(swe-crafter doctor | awk -F'\t' '$1 == "sandbox" && $2 == "namespace" && $3 == "no"')" ] && SANDBOX="--sandbox none"
t0=$(date +%s.%N)
[ -d st/repos/neurkit ] || swe-crafter -q fetch "git:$src" --name neurkit --store st > /dev/null
[ -s env.json ] || swe-crafter -q env -i neurkit --store st --skills "$here/skills" --timeout "$TIMEOUT" $SANDBOX --log env.h5 -o env.json
/usr/bin/python3 -c 'import json, sys; e = json.load(open("env.json")); print("# environment: %s, %s, %d attempts, %s tests found" % ("works" if e["ok"] else "fails", e["evidence"][0], e["attempts"], e.get("tests_found")))'
[ -s mined.jsonl ] || swe-crafter -q mine -i neurkit --store st --env env.json -o mined.jsonl
/usr/bin/python3 - "$MAX" <<'PYEOF'
import json, re, sys
limit = int(sys.argv[1])
kept, left, total = [], 0, 0
for line in open("mined.jsonl"):
    total += 1
    c = json.loads(line)
    tests = re.findall(r"^diff --git a/(\S+)", c["test_patch"], re.M)
    suites = [t for t in tests if t.startswith(("tests/cli/", "tests/unit/"))]
    if not suites or any("swe-crafter" in t for t in tests):
        left += 1
        continue
    if len(kept) < limit:
        kept.append(line)
open("candidates.jsonl", "w").writelines(kept)
print("# mined: %d candidates; %d touch no CLI or unit test, or swe-crafter's own; the newest %d of the others validated"
      % (total, left, len(kept)))
PYEOF
# RESUME=1 validates only the candidates verdicts.tsv has no line for (validate
# prints each verdict as it is reached) and appends to it.
touch verdicts.tsv
/usr/bin/python3 - <<'PYEOF'
import json
done = {l.split("\t")[0] for l in open("verdicts.tsv") if l.strip()}
pending = [l for l in open("candidates.jsonl") if json.loads(l)["instance_id"] not in done]
open("pending.jsonl", "w").writelines(pending)
print("# %d candidates have a verdict already; %d to validate" % (len(done), len(pending)))
PYEOF
log=validate.h5
[ -s verdicts.tsv ] && log=validate-from-$(wc -l < verdicts.tsv).h5
if [ -s pending.jsonl ]; then
  swe-crafter -q validate -i pending.jsonl --store st --runs "$RUNS" --timeout "$TIMEOUT" $SANDBOX --log "$log" \
    -o instances-new.jsonl | tee -a verdicts.tsv
  cat instances-new.jsonl >> instances.jsonl && rm -f instances-new.jsonl
fi
t1=$(date +%s.%N)
/usr/bin/python3 - "$t0" "$t1" <<'PYEOF'
import json, sys
secs = float(sys.argv[2]) - float(sys.argv[1])
verdicts = [l.rstrip("\n").split("\t") for l in open("verdicts.tsv") if l.strip()]
admitted = [v for v in verdicts if len(v) > 2 and v[1] == "admitted"]
f2p = sum(int(v[2].split()[0]) for v in admitted)
print("history: %d candidates validated, %d instances admitted (%d fail-to-pass tests), %.0f s this run (env, mine, validate)"
      % (len(verdicts), len(admitted), f2p, secs))
PYEOF
