#!/bin/bash
# tests/bench/swe-crafter/induce.sh BIN: the benchmark's induction row (issue
# #31: skills induced on half the corpus cut attempts per success on the
# other half by >= 30%), environments only, all with the one binary BIN.
# Run in the benchmark's folder (OUT, default build/bench/swe-crafter), after
# run.sh's pipeline: its store (st) and the repositories of halves A and B
# (A.tsv, B.tsv, in corpus order). Writes OUT/induction:
#   skills.d/       what `env --induce` wrote back over half A, in corpus order
#                   (a success that took a retry, or that an induced skill
#                   gave: merged into it)
#   B-shipped/      half B's environments with the shipped skills
#   B-induced/      half B's environments with the shipped and induced skills
# and prints attempts per success both ways, and every repository whose
# result or attempts differ. run.sh calls it (step 1).
set -eu
BIN=$(cd "${1:-build/bin}" && pwd)
OUT=${OUT:-build/bench/swe-crafter}
TIMEOUT=${TIMEOUT:-300}
export PATH="$BIN:/usr/bin:$PATH"
cd "$OUT"
SANDBOX=""
[ -n "$(swe-crafter doctor | awk -F'\t' '$1 == "sandbox" && $2 == "namespace" && $3 == "no"')" ] && SANDBOX="--sandbox none"
rm -rf induction && mkdir -p induction/A induction/B-shipped induction/B-induced
t0=$(date +%s)
tail -n +2 A.tsv | cut -f1 | while read -r name; do
  swe-crafter -q env -i "$name" --store st --induce induction/skills.d --timeout "$TIMEOUT" $SANDBOX \
    -o "induction/A/$name.json" || true
done
mkdir -p induction/skills.d
tail -n +2 B.tsv | cut -f1 | while read -r name; do
  swe-crafter -q env -i "$name" --store st --timeout "$TIMEOUT" $SANDBOX -o "induction/B-shipped/$name.json" || true
  swe-crafter -q env -i "$name" --store st --skills induction/skills.d --timeout "$TIMEOUT" $SANDBOX \
    -o "induction/B-induced/$name.json" || true
done
t1=$(date +%s)
/usr/bin/python3 - "$((t1 - t0))" <<'PYEOF'
import glob, json, os, sys
def load(folder):
    out = {}
    for p in sorted(glob.glob("induction/%s/*.json" % folder)):
        out[os.path.basename(p)[:-5]] = json.load(open(p))
    return out
a, b, i = load("A"), load("B-shipped"), load("B-induced")
induced = sorted(os.path.basename(p) for p in glob.glob("induction/skills.d/*.skill"))
print("induced on half A (%d repositories, %d work): %d skill files (%s)" % (
    len(a), sum(e["ok"] for e in a.values()), len(induced), ", ".join(induced) or "none"))
rows = []
for label, envs in (("shipped skills", b), ("with the induced skills", i)):
    names = [n for n in b if n in i]
    ok = sum(envs[n]["ok"] for n in names)
    att = sum(envs[n]["attempts"] for n in names)
    att_ok = sum(envs[n]["attempts"] for n in names if envs[n]["ok"])
    rows.append((label, ok, att, att_ok, len(names)))
for label, ok, att, att_ok, n in rows:
    print("half B (%d repositories), %s: %d work, %d attempts: %.2f attempts per success (%.2f over the successes alone)"
          % (n, label, ok, att, att / ok if ok else float("nan"), att_ok / ok if ok else float("nan")))
(_, ok0, att0, _, _), (_, ok1, att1, _, _) = rows
if ok0 and ok1:
    print("change in attempts per success: %+.0f%% (goal -30%%)" % (100 * ((att1 / ok1) / (att0 / ok0) - 1)))
for n in b:
    if n in i and (b[n]["attempts"] != i[n]["attempts"] or b[n]["ok"] != i[n]["ok"]):
        print("  %s: %s in %d attempts (%s) -> %s in %d (%s)" % (
            n, "ok" if b[n]["ok"] else "fails", b[n]["attempts"], b[n]["evidence"][0] if b[n]["evidence"] else "",
            "ok" if i[n]["ok"] else "fails", i[n]["attempts"], i[n]["evidence"][0] if i[n]["evidence"] else ""))
print("(%s s: half A's environments with --induce, half B's twice)" % sys.argv[1])
PYEOF
