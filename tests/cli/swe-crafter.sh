# swe-crafter.sh - fixture repositories with labelled commits (Python:
# good, doc-only, code-only, passes-before, breaks-a-test, flaky; C with
# CMake and ctest; Perl with prove) through fetch, env, mine and validate:
# exactly the good commits are admitted, with their FAIL_TO_PASS and
# PASS_TO_PASS; the re-check holds and catches a tampered instance;
# synthetic bugs restore byte for byte; trajectories of the builtin agent
# and of scripted agents; the user's repository is never written; bad input.
. "$(dirname "$0")/lib.sh"

# Debian's python3 (with its pytest) before any other on PATH
export PATH="$NK_BIN:/usr/bin:$PATH"
SC="swe-crafter -q"
SANDBOX=""
[ -n "$(swe-crafter doctor | awk -F'\t' '$1 == "sandbox" && $2 == "namespace" && $3 == "no"')" ] && SANDBOX="--sandbox none"

check "the fixture repository" bash "$NK_SOURCE/data/swe-crafter/fixture-repo.sh" repo
before=$(cd repo && git status --porcelain && git rev-parse HEAD && ls -a)
check "fetch git:PATH" sh -c "$SC fetch git:$WORK/repo --store st > fetched.txt"
check "fetch prints the store's repository" grep -q "st/repos/repo$" fetched.txt
check "fetch again: already in the store" $SC fetch git:$WORK/repo --store st
after=$(cd repo && git status --porcelain && git rev-parse HEAD && ls -a)
[ "$before" = "$after" ] && pass "the user's repository is untouched" || fail "the user's repository is untouched"
check "env (skills)" $SC env -i repo --store st -o env.json $SANDBOX
check "mine --env" $SC mine -i repo --store st --env env.json -o cand.jsonl
check "validate --runs 2" sh -c "$SC validate -i cand.jsonl --store st -o inst.jsonl --runs 2 $SANDBOX > verdicts.tsv"
check "validate --shard 0/2 and 1/2" sh -c "$SC validate -i cand.jsonl --store st -o part0.jsonl --runs 2 --shard 0/2 $SANDBOX > v0.tsv && $SC validate -i cand.jsonl --store st -o part1.jsonl --runs 2 --shard 1/2 $SANDBOX > v1.tsv"
cat part0.jsonl part1.jsonl > parts.jsonl
same "the shards' instances concatenate to the whole run's" parts.jsonl inst.jsonl
cat v0.tsv v1.tsv > vparts.tsv
same "the shards' verdicts concatenate to the whole run's" vparts.tsv verdicts.tsv
check "validate re-checks the instances (exit 0)" sh -c "$SC validate -i inst.jsonl --store st -o held.jsonl $SANDBOX > recheck.tsv"
# a tampered instance: the gold patch no longer fixes add()
"$PY" - <<'PYEOF'
import json
line = json.loads(open("inst.jsonl").readline())
line["patch"] = line["patch"].replace("+    return a + b", "+    return a + b + 0 * 1 - 1")
open("tampered.jsonl", "w").write(json.dumps(line) + "\n")
PYEOF
swe-crafter -q validate -i tampered.jsonl --store st -o held2.jsonl $SANDBOX > tampered.tsv 2>/dev/null
rc=$?
[ "$rc" -eq 1 ] && pass "a tampered instance fails the re-check (exit 1)" || fail "a tampered instance fails the re-check (exit $rc)"
"$PY" - <<'PYEOF'
import json, os, sys
sys.path.insert(0, os.environ["NK_SOURCE"] + "/tests/cli")
from nk_check import report, finish
env = json.load(open("env.json"))
report(env["ok"] and env["build_system"] == "pytest" and env["log_parser"] == "pytest" and env["tests_found"] == 5, "env: pytest found 5 tests and its summary")
cand = [json.loads(l) for l in open("cand.jsonl")]
labels = [c["problem_statement"].split("(label: ")[1].split(")")[0].split(":")[0] for c in cand]
report(sorted(labels) == ["breaks-a-test", "flaky", "good", "passes-before"], "mine: the commits touching code and tests (not doc-only, not code-only): %s" % labels)
good = [c for c in cand if "label: good" in c["problem_statement"]][0]
report("calc.py" in good["patch"] and "tests/" not in good["patch"] and "tests/test_calc.py" in good["test_patch"] and "calc.py" not in good["test_patch"].replace("tests/test_calc.py", ""), "mine: patch and test_patch split by the test-file rule")
report(good["base_commit"] != "" and good["test_files"] == ["tests/test_calc.py"] and good["test_cmd"] == env["test_cmd"], "mine: base commit, test files, the environment's commands")
verdicts = {l.split("\t")[0]: l.rstrip("\n").split("\t")[1:] for l in open("verdicts.tsv")}
admitted = [k for k, v in verdicts.items() if v[0] == "admitted"]
report(admitted == [good["instance_id"]], "validate: exactly the good commit admitted")
why = {c["problem_statement"].split("(label: ")[1].split(")")[0].split(":")[0]: verdicts[c["instance_id"]][1] for c in cand}
report("pass-to-fail" in why["breaks-a-test"] and "no fail-to-pass" in why["passes-before"] and "flaky" in why["flaky"], "validate: the rejections say why (%s)" % why)
inst = [json.loads(l) for l in open("inst.jsonl")]
report(len(inst) == 1 and json.loads(inst[0]["FAIL_TO_PASS"]) == ["tests/test_calc.py::test_add"] and json.loads(inst[0]["PASS_TO_PASS"]) == ["tests/test_calc.py::test_mul"], "validate: FAIL_TO_PASS and PASS_TO_PASS as SWE-bench lists")
keys = ["instance_id", "repo", "base_commit", "patch", "test_patch", "problem_statement", "hints_text", "created_at", "version", "FAIL_TO_PASS", "PASS_TO_PASS", "environment_setup_commit"]
report(all(k in inst[0] for k in keys) and inst[0]["created_at"].startswith("2026-01-02"), "the instance has SWE-bench's fields")
report(open("recheck.tsv").read().split("\t")[1] == "ok" and len(open("held.jsonl").readlines()) == 1, "re-check: the instance holds")
t = open("tampered.tsv").read()
report("\tfail\t" in t and "test_add" in t and open("held2.jsonl").read() == "", "re-check: the tampered instance fails, naming the test, and is not kept")
finish()
PYEOF
[ $? -eq 0 ] && pass "instances checked" || fail "instances checked"

# Synthetic bugs: one mutated line of a function, committed in the store; validated like mined ones.
check "mine --synthetic 2" $SC mine -i repo --store st --env env.json --synthetic 2 --seed 4 $SANDBOX -o syn.jsonl
check "validate the synthetic bugs" sh -c "$SC validate -i syn.jsonl --store st -o syn_inst.jsonl --runs 2 $SANDBOX > syn.tsv"
check "mine --synthetic is reproducible" $SC mine -i repo --store st --env env.json --synthetic 2 --seed 4 $SANDBOX -o syn2.jsonl
"$PY" - <<'PYEOF' && pass "the same seed, the same bugs (the statements differ only in the test run's output)" || fail "the same seed, the same bugs"
import json, sys
strip = lambda f: [dict(d, problem_statement=d["problem_statement"].split("\n\n")[0]) for d in map(json.loads, open(f))]
sys.exit(0 if strip("syn.jsonl") == strip("syn2.jsonl") else 1)
PYEOF
"$PY" - <<'PYEOF'
import json, os, subprocess, sys
sys.path.insert(0, os.environ["NK_SOURCE"] + "/tests/cli")
from nk_check import report, finish
syn = [json.loads(l) for l in open("syn.jsonl")]
report(len(syn) == 2 and all(s["source"] == "synthetic" and s["test_patch"] == "" for s in syn), "two synthetic candidates, no test patch")
report(all("tests/" not in s["patch"] and s["patch"].count("\n+") >= 0 for s in syn), "the bug is never in a test file")
repo = os.path.abspath("st/repos/repo")
head = subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
restored = True
for s in syn:
    parent = subprocess.run(["git", "-C", repo, "rev-parse", s["base_commit"] + "^"], capture_output=True, text=True).stdout.strip()
    ws = "ws_" + s["instance_id"]
    subprocess.run(["git", "clone", "-q", "--shared", repo, ws], check=True)
    subprocess.run(["git", "-C", ws, "checkout", "-q", s["base_commit"]], check=True)
    open("fix.diff", "w").write(s["patch"])
    subprocess.run(["git", "-C", ws, "apply", os.path.abspath("fix.diff")], check=True)
    diff = subprocess.run(["git", "-C", ws, "diff", "--exit-code", parent], capture_output=True, text=True)
    restored = restored and parent == head and diff.returncode == 0
report(restored, "the gold patch restores the source byte for byte (no diff to --rev)")
report(all("fail" in s["problem_statement"] and "```" in s["problem_statement"] for s in syn), "the statement names the failing tests and shows the output")
v = [l.split("\t") for l in open("syn.tsv")]
inst = [json.loads(l) for l in open("syn_inst.jsonl")]
report(len(v) == 2 and all(x[1] == "admitted" for x in v) and len(inst) == 2 and all(json.loads(i["FAIL_TO_PASS"]) for i in inst), "validate admits both, each with its fail-to-pass tests")
finish()
PYEOF
[ $? -eq 0 ] && pass "synthetic bugs checked" || fail "synthetic bugs checked"

# Statements written by an agent (an LLM in real use): one JSON line in, one out; a broken agent keeps the output.
cat > writer.py <<'PYEOF'
import json, sys
ask = json.loads(sys.stdin.readline())
assert ask["type"] == "statement" and ask["bug"].startswith("diff --git")
print(json.dumps({"problem_statement": "After the last change, %s fails. Please fix it." % ", ".join(ask["failing_tests"])}))
PYEOF
check "mine --synthetic --agent-cmd (a statement writer)" $SC mine -i repo --store st --env env.json --synthetic 2 --seed 4 --agent-cmd "$PY writer.py" $SANDBOX -o syn_w.jsonl
check "mine --synthetic --agent-cmd (an agent that answers garbage)" $SC mine -i repo --store st --env env.json --synthetic 2 --seed 4 --agent-cmd "echo not-json" $SANDBOX -o syn_g.jsonl
expect_fail "mine --agent-cmd without --synthetic" 2 "needs --synthetic" $SC mine -i repo --store st --agent-cmd "$PY writer.py" -o x.jsonl
"$PY" - <<'PYEOF'
import json, os, sys
sys.path.insert(0, os.environ["NK_SOURCE"] + "/tests/cli")
from nk_check import report, finish
syn, w, g = [[json.loads(l) for l in open(f)] for f in ("syn.jsonl", "syn_w.jsonl", "syn_g.jsonl")]
report([x["instance_id"] for x in w] == [x["instance_id"] for x in syn] and all(x["problem_statement"].startswith("After the last change, ") and x["hints_text"] == "statement written by --agent-cmd" for x in w), "the agent's statements replace the failing output, the same bugs")
report([x["problem_statement"].split("The end of")[0] for x in g] == [x["problem_statement"].split("The end of")[0] for x in syn] and all("The end of the test run's output" in x["problem_statement"] and x["hints_text"] == "" for x in g), "a garbage answer: the failing output stays the statement")
finish()
PYEOF
[ $? -eq 0 ] && pass "written statements checked" || fail "written statements checked"

# Trajectories: the builtin repair baseline on the synthetic bugs; agents as commands on the mined instance.
check "distill --agent builtin" sh -c "$SC distill -i syn_inst.jsonl --store st -o traj.jsonl $SANDBOX > distill.tsv"
cat > fixer.py <<'PYEOF'
import json, sys
task = json.loads(sys.stdin.readline())
print(json.dumps({"action": "bash", "command": "grep -n 'return a' calc.py"}), flush=True)
obs = json.loads(sys.stdin.readline())
line = [l for l in obs["output"].splitlines() if "return a - b" in l][0].split(":")[0]
print(json.dumps({"action": "bash", "command": "sed -i '%ss/return a - b/return a + b/' calc.py" % line}), flush=True)
sys.stdin.readline()
print(json.dumps({"action": "submit"}), flush=True)
PYEOF
cat > cheater.py <<'PYEOF'
import json, sys
sys.stdin.readline()
print(json.dumps({"action": "bash", "command": "rm -f tests/test_calc.py"}), flush=True)
sys.stdin.readline()
print(json.dumps({"action": "submit"}), flush=True)
PYEOF
check "distill --agent-cmd (a scripted fixer)" sh -c "$SC distill -i inst.jsonl --store st --agent-cmd '$PY fixer.py' -o traj_fix.jsonl $SANDBOX > fix.tsv"
check "distill --agent-cmd (an agent deleting the failing test)" sh -c "$SC distill -i inst.jsonl --store st --agent-cmd '$PY cheater.py' -o traj_cheat.jsonl $SANDBOX > cheat.tsv"
check "distill --agent-cmd (an agent answering garbage)" sh -c "$SC distill -i inst.jsonl --store st --agent-cmd 'echo garbage' -o traj_junk.jsonl $SANDBOX > junk.tsv"
check "distill --agent-cmd (an agent that dies)" sh -c "$SC distill -i inst.jsonl --store st --agent-cmd 'exit 3' -o traj_dead.jsonl $SANDBOX > dead.tsv"
"$PY" - <<'PYEOF'
import json, os, sys
sys.path.insert(0, os.environ["NK_SOURCE"] + "/tests/cli")
from nk_check import report, finish
traj = [json.loads(l) for l in open("traj.jsonl")]
syn = {json.loads(l)["instance_id"]: json.loads(l) for l in open("syn_inst.jsonl")}
report(len(traj) == 2 and all(t["resolved"] and t["agent"] == "builtin" for t in traj), "builtin: both synthetic bugs resolved (%s)" % open("distill.tsv").read().strip().replace("\n", " | "))
report(all(t["steps"][0]["command"].startswith("(" + syn[t["instance_id"]]["build"] + ")") and t["steps"][0]["command"].endswith(syn[t["instance_id"]]["test_cmd"]) and any("cat > " in s["command"] for s in t["steps"]) and t["steps"][-1]["command"] == "git clean -fdxq" for t in traj), "builtin: builds and runs the tests first, then edits through bash actions; cleans the build's files before it submits")
report(all(any(l.startswith("+") and not l.startswith("+++") and l[1:] in syn[t["instance_id"]]["patch"] for l in t["patch"].splitlines()) for t in traj), "builtin: its edit is the gold patch's line")
fix = [json.loads(l) for l in open("traj_fix.jsonl")]
report(len(fix) == 1 and fix[0]["resolved"] and len(fix[0]["steps"]) == 2 and "return a + b" in fix[0]["patch"], "--agent-cmd: a scripted fixer's trajectory kept, its two bash steps recorded")
report(open("traj_cheat.jsonl").read() == "" and "unresolved" in open("cheat.tsv").read(), "an agent deleting the failing test is not credited")
report(open("traj_junk.jsonl").read() == "" and "not JSON" in open("junk.tsv").read(), "an agent's bad JSON ends its trajectory, not the run")
report(open("traj_dead.jsonl").read() == "" and "the agent failed" in open("dead.tsv").read(), "an agent that exits ends its trajectory, not the run")
finish()
PYEOF
[ $? -eq 0 ] && pass "trajectories checked" || fail "trajectories checked"
expect_fail "distill of candidates that were not validated" 3 "no FAIL_TO_PASS" $SC distill -i cand.jsonl --store st -o x.jsonl

# Other languages: a C library under CMake and ctest, a Perl module under prove (TAP); a JavaScript module under
# tape, a Ruby library under minitest and a PHP library under PHPUnit where those are installed (Makefile.dist deps
# installs them).
LANGS="c perl"
command -v tape > /dev/null && LANGS="$LANGS js"
command -v ruby > /dev/null && ruby -e 'require "minitest"' 2> /dev/null && LANGS="$LANGS ruby"
command -v php > /dev/null && command -v phpunit > /dev/null && command -v phpab > /dev/null && LANGS="$LANGS php"
export LANGS
for lang in $LANGS; do
  check "the $lang fixture" bash "$NK_SOURCE/data/swe-crafter/fixture-$lang.sh" repo_$lang
  check "$lang: fetch, env, mine" sh -c "$SC fetch git:$WORK/repo_$lang --store st > /dev/null && $SC env -i repo_$lang --store st -o env_$lang.json $SANDBOX && $SC mine -i repo_$lang --store st --env env_$lang.json -o cand_$lang.jsonl"
  check "$lang: validate" sh -c "$SC validate -i cand_$lang.jsonl --store st -o inst_$lang.jsonl --log vlog_$lang.h5 $SANDBOX > verdicts_$lang.tsv"
  check "$lang: validate --fresh" sh -c "$SC validate -i cand_$lang.jsonl --store st --fresh --log vlogf_$lang.h5 $SANDBOX > verdicts_fresh_$lang.tsv"
done
"$PY" - <<'PYEOF'
import json, os, sys
sys.path.insert(0, os.environ["NK_SOURCE"] + "/tests/cli")
from nk_check import report, finish
import h5py
want = {"c": ("cmake", "ctest", ["add"]), "perl": ("prove", "tap", ["t/add.t::add"]), "js": ("tape", "tape", ["add"]),
        "ruby": ("minitest", "minitest", ["TestAdd#test_add"]), "php": ("phpunit", "phpunit", ["Calc\\Tests\\AddTest::testAdd"])}
for lang in os.environ["LANGS"].split():
    system, parser, f2p = want[lang]
    env = json.load(open("env_%s.json" % lang))
    report(env["ok"] and env["build_system"] == system and env["log_parser"] == parser, "%s: the fixed method finds %s and its %s log" % (lang, system, parser))
    verdicts = [l.rstrip("\n").split("\t") for l in open("verdicts_%s.tsv" % lang)]
    cand = {json.loads(l)["instance_id"]: json.loads(l)["problem_statement"] for l in open("cand_%s.jsonl" % lang)}
    admitted = [cand[v[0]] for v in verdicts if v[1] == "admitted"]
    inst = [json.loads(l) for l in open("inst_%s.jsonl" % lang)]
    report(len(admitted) == 1 and "label: good" in admitted[0] and json.loads(inst[0]["FAIL_TO_PASS"]) == f2p, "%s: exactly the good commit admitted, FAIL_TO_PASS %s (%s)" % (lang, f2p, [v[1:] for v in verdicts]))
    # the states from one prepared workspace give the verdicts of states built from scratch
    fresh = [l.rstrip("\n").split("\t") for l in open("verdicts_fresh_%s.tsv" % lang)]
    report(fresh == verdicts, "%s: validate and validate --fresh agree (%s)" % (lang, [v[1:] for v in fresh]))
    with h5py.File("vlog_%s.h5" % lang, "r") as f, h5py.File("vlogf_%s.h5" % lang, "r") as g:
        notes = [v.decode() for v in f["attempts/verdict"][:]]
        prepared = [n for n in notes if "from the workspace prepared at" in n]
        report(len(prepared) == 4 and any("build only" in n for n in prepared) and not any("prepared" in v.decode() for v in g["attempts/verdict"][:]), "%s: states from the prepared workspace (%d, e.g. %s); none with --fresh" % (lang, len(prepared), prepared[:1]))
finish()
PYEOF
[ $? -eq 0 ] && pass "instances in $LANGS checked" || fail "instances in $LANGS checked"
# C: synthetic bugs in the fixture, validated, and repaired by the builtin agent from the prepared workspace: ctest
# names only the failing test, whose name is the function's; a division undone into the multiplication
check "c: mine --synthetic 2, validate" sh -c "$SC mine -i repo_c --store st --env env_c.json --synthetic 2 --seed 1 -o syn_c.jsonl $SANDBOX && $SC validate -i syn_c.jsonl --store st -o syn_inst_c.jsonl $SANDBOX > syn_c.tsv"
# an --agent-cmd that edits without building or cleaning: its diff holds its edit, not the prepared build tree
cat > sed_agent.py <<'PYEOF'
import json, sys
sys.stdin.readline()
print(json.dumps({"action": "bash", "command": "sed -i 's|a / b|a * b|' calc.c"}), flush=True)
sys.stdin.readline()
print(json.dumps({"action": "submit"}), flush=True)
PYEOF
check "c: distill --agent-cmd (an edit by sed)" sh -c "$SC distill -i syn_inst_c.jsonl --store st --agent-cmd '$PY sed_agent.py' -o traj_sed_c.jsonl $SANDBOX > dist_sed_c.tsv"
check "c: distill --max-seconds (a spent budget)" sh -c "$SC distill -i syn_inst_c.jsonl --store st --max-seconds 0.001 -o traj_budget_c.jsonl $SANDBOX > dist_budget_c.tsv"
if [ "$(grep -c '	unresolved	1 steps, time budget; tests fail' dist_budget_c.tsv)" -eq 2 ]; then pass "c: --max-seconds ends each trajectory after its first action"; else fail "c: --max-seconds ends each trajectory after its first action ($(cat dist_budget_c.tsv))"; fi
check "c: distill, and distill --fresh" sh -c "$SC distill -i syn_inst_c.jsonl --store st -o traj_c.jsonl --log dlog_c.h5 $SANDBOX > dist_c.tsv && $SC distill -i syn_inst_c.jsonl --store st --fresh -o trajf_c.jsonl $SANDBOX > distf_c.tsv"
"$PY" - <<'PYEOF'
import json, os, sys
import h5py
sys.path.insert(0, os.environ["NK_SOURCE"] + "/tests/cli")
from nk_check import report, finish
inst = [json.loads(l) for l in open("syn_inst_c.jsonl")]
rows = [l.rstrip("\n").split("\t") for l in open("dist_c.tsv")]
fresh = [l.rstrip("\n").split("\t") for l in open("distf_c.tsv")]
report(len(inst) == 2 and [r[1] for r in rows] == ["resolved", "resolved"], "c: both synthetic bugs resolved by the builtin agent (%s)" % rows)
report([r[:2] for r in fresh] == [r[:2] for r in rows], "c: distill --fresh resolves the same (%s)" % fresh)
traj = [json.loads(l) for l in open("traj_c.jsonl")]
report(all(t["patch"].count("diff --git") == 1 and "calc.c" in t["patch"] for t in traj), "c: each patch is the one edit of calc.c")
# each edit runs the target tests alone (ctest -R), the whole suite runs once after they pass
tests = [[x["command"] for x in t["steps"] if "ctest" in x["command"]] for t in traj]
report(all(any(" -R '^(" in c for c in cs[1:]) and " -R " not in cs[0] and " -R " not in cs[-1] for cs in tests),
       "c: the agent's edits run the target tests alone, the whole suite before and after (%s)" % [len(cs) for cs in tests])
sed = [json.loads(l) for l in open("traj_sed_c.jsonl")]
report(len(sed) == 1 and sed[0]["patch"].count("diff --git") == 1 and "+  return a * b;" in sed[0]["patch"], "c: --agent-cmd's patch is its edit alone, none of the prepared workspace's build outputs (%s)" % [l.split("\t")[1] for l in open("dist_sed_c.tsv")])
with h5py.File("dlog_c.h5", "r") as f:
    stages = [s.decode() for s in f["attempts/stage"][:]]
    notes = [v.decode() for v in f["attempts/verdict"][:]]
    report("grade" in stages and not any("graded from scratch" in n for n in notes), "c: graded from the prepared workspace")
finish()
PYEOF
[ $? -eq 0 ] && pass "C synthetic bugs repaired" || fail "C synthetic bugs repaired"
# A synthetic bug that hangs the suite (n = n + 1 in a countdown loop) is dropped at the time limit, not kept
mkdir -p hangrepo/tests
printf 'def countdown(n):\n    while n > 0:\n        n = n - 1\n    return n\n' > hangrepo/countdown.py
printf 'from countdown import countdown\n\n\ndef test_countdown():\n    assert countdown(3) == 0\n' > hangrepo/tests/test_countdown.py
(cd hangrepo && git init -q . && git add -A && git -c user.name=f -c user.email=f@l commit -q -m initial)
check "a hanging bug: fetch, env, mine --synthetic 5 --timeout 5" sh -c "$SC fetch git:$WORK/hangrepo --store st > /dev/null && $SC env -i hangrepo --store st -o env_hang.json $SANDBOX && $SC mine -i hangrepo --store st --env env_hang.json --synthetic 5 --timeout 5 --log hanglog.h5 -o syn_hang.jsonl $SANDBOX"
"$PY" - <<'PYEOF'
import json, os, sys
import h5py
sys.path.insert(0, os.environ["NK_SOURCE"] + "/tests/cli")
from nk_check import report, finish
kept = [json.loads(l) for l in open("syn_hang.jsonl")]
with h5py.File("hanglog.h5", "r") as f:
    verdicts = [v.decode() for v in f["attempts/verdict"][:]]
report(any("hangs the suite: dropped" in v for v in verdicts), "the hanging bug is dropped (%s)" % [v for v in verdicts if "hang" in v or "timed out" in v])
report(kept and not any("-        n = n + 1" in k["patch"] for k in kept), "the bugs kept do not hang (%d kept)" % len(kept))
finish()
PYEOF
[ $? -eq 0 ] && pass "a hanging synthetic bug dropped" || fail "a hanging synthetic bug dropped"
for lang in ruby php; do
  [[ " $LANGS " == *" $lang "* ]] || continue
  # a synthetic bug inside a Ruby def block or a PHP method, admitted by validate and undone by its gold patch
  check "$lang: mine --synthetic 1" sh -c "$SC mine -i repo_$lang --store st --env env_$lang.json --synthetic 1 --seed 2 -o syn_$lang.jsonl $SANDBOX && $SC validate -i syn_$lang.jsonl --store st -o syn_inst_$lang.jsonl $SANDBOX > syn_$lang.tsv"
  if grep -q "	admitted	" syn_$lang.tsv && [ "$(wc -l < syn_inst_$lang.jsonl)" -eq 1 ]; then pass "$lang: the synthetic bug admitted"; else fail "$lang: the synthetic bug admitted ($(cat syn_$lang.tsv))"; fi
done
if [[ " $LANGS " == *" php "* ]]; then
  # PHPUnit names the test's line; the agent finds the method it calls (brace on the next line, a return type)
  check "php: the builtin agent resolves the synthetic bug" sh -c "$SC distill -i syn_inst_php.jsonl --store st --agent builtin -o syn_traj_php.jsonl $SANDBOX | grep -q '	resolved	' && [ \$(wc -l < syn_traj_php.jsonl) -eq 1 ]"
fi

# Skills against the fixed method: a src layout (a skill of its own), a lib layout (the pytest skill's fix and retry).
for layout in src lib; do
  mkdir -p ${layout}repo/$layout/calc ${layout}repo/tests
  printf 'def add(a, b):\n    return a + b\n' > ${layout}repo/$layout/calc/__init__.py
  printf 'from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n' > ${layout}repo/tests/test_calc.py
  (cd ${layout}repo && git init -q . && git add -A && git -c user.name=f -c user.email=f@l commit -q -m initial)
  check "$layout layout: fetch" sh -c "$SC fetch git:$WORK/${layout}repo --store st > /dev/null"
  check "$layout layout: env --method fixed" $SC env -i ${layout}repo --store st --method fixed -o fixed_$layout.json $SANDBOX
  check "$layout layout: env --method skills" $SC env -i ${layout}repo --store st --method skills -o skills_$layout.json $SANDBOX
done
"$PY" - <<'PYEOF'
import json, os, sys
sys.path.insert(0, os.environ["NK_SOURCE"] + "/tests/cli")
from nk_check import report, finish
for layout in ["src", "lib"]:
    fixed, skills = json.load(open("fixed_%s.json" % layout)), json.load(open("skills_%s.json" % layout))
    report(not fixed["ok"] and fixed["tests_found"] == 0 and fixed["attempts"] == 1, "%s layout: the fixed method fails (the package is not importable)" % layout)
    report(skills["ok"] and skills["tests_found"] == 1 and skills["method"] == "skills", "%s layout: skills make it work" % layout)
s, l = json.load(open("skills_src.json")), json.load(open("skills_lib.json"))
report(s["evidence"][0] == "skill: python-src-layout" and s["attempts"] == 1, "src layout: its own skill, first attempt (%s)" % s["evidence"])
report(l["evidence"][0] == "skill: python-pytest" and l["attempts"] == 2 and any(e.startswith("fix: ModuleNotFoundError") for e in l["evidence"]) and "PYTHONPATH" in l["test_cmd"], "lib layout: the pytest skill recognises the failure, fixes PYTHONPATH and retries (%s)" % l["evidence"])
finish()
PYEOF
[ $? -eq 0 ] && pass "skills checked" || fail "skills checked"
# CMake's tests behind an option: the cmake-ctest skill's fix turns the *TEST* options on, not one that turns tests
# off (CALC_WITHOUT_TESTS); a skill tried after another starts from the checked-out tree (a more specific skill
# that fails leaves a file behind that would break the CMake configure).
if command -v cmake > /dev/null; then
  mkdir -p optrepo && (cd optrepo && printf 'int add(int a, int b) { return a + b; }\nint main(void) { return add(2, 3) == 5 ? 0 : 1; }\n' > t_add.c &&
    printf 'cmake_minimum_required(VERSION 3.13)\nproject(calc C)\nif(EXISTS ${CMAKE_SOURCE_DIR}/poison)\n  message(FATAL_ERROR "poisoned")\nendif()\noption(CALC_BUILD_TESTS "tests" OFF)\noption(CALC_WITHOUT_TESTS "no tests" OFF)\nif(CALC_BUILD_TESTS AND NOT CALC_WITHOUT_TESTS)\n  enable_testing()\n  add_executable(t_add t_add.c)\n  add_test(NAME add COMMAND t_add)\nendif()\n' > CMakeLists.txt &&
    git init -q . && git add -A && git -c user.name=f -c user.email=f@l commit -q -m initial)
  mkdir -p poisonskills && printf 'name poison-first\nlanguage c\nbuild_system make\nlog_parser automake\nevidence file CMakeLists.txt\nevidence file t_add.c\nbuild touch poison && false\ntest true\n' > poisonskills/poison.skill
  check "cmake option: fetch, env" sh -c "$SC fetch git:$WORK/optrepo --store st > /dev/null && $SC env -i optrepo --store st -o env_opt.json $SANDBOX && $SC env -i optrepo --store st --skills poisonskills -o env_poison.json $SANDBOX"
  "$PY" - <<'PYEOF'
import json, os, sys
sys.path.insert(0, os.environ["NK_SOURCE"] + "/tests/cli")
from nk_check import report, finish
o, p = json.load(open("env_opt.json")), json.load(open("env_poison.json"))
report(o["ok"] and o["attempts"] == 2 and o["tests_found"] == 1 and any("No tests were found" in e for e in o["evidence"]), "cmake option: the fix turns CALC_BUILD_TESTS on, not CALC_WITHOUT_TESTS (%s, %d attempts)" % (o["evidence"], o["attempts"]))
report(p["ok"] and p["attempts"] == 3 and p["evidence"][0] == "skill: cmake-ctest", "a skill tried after a failing one starts from the checked-out tree (%s, %d attempts)" % (p["evidence"], p["attempts"]))
finish()
PYEOF
  [ $? -eq 0 ] && pass "cmake options and clean trees checked" || fail "cmake options and clean trees checked"
fi
# A re-check runs every test an instance lists: ctest's selection by the test patch's files (tests/add.c: -R add)
# leaves out mul, which PASS_TO_PASS names (lists made over the whole suite), so the state runs the whole suite.
if command -v cmake > /dev/null; then
  mkdir -p nrwrepo/tests && (cd nrwrepo &&
    printf 'int add(int a, int b) { return a - b; }\nint mul(int a, int b) { return a * b; }\n' > calc.c &&
    printf 'int add(int, int);\nint main(void) { return add(2, 3) == 5 ? 0 : 1; }\n' > tests/add.c &&
    printf 'int mul(int, int);\nint main(void) { return mul(2, 3) == 6 ? 0 : 1; }\n' > tests/mul.c &&
    printf 'cmake_minimum_required(VERSION 3.13)\nproject(calc C)\nenable_testing()\nadd_executable(t_add tests/add.c calc.c)\nadd_executable(t_mul tests/mul.c calc.c)\nadd_test(NAME add COMMAND t_add)\nadd_test(NAME mul COMMAND t_mul)\n' > CMakeLists.txt &&
    git init -q . && git add -A && git -c user.name=f -c user.email=f@l commit -q -m broken &&
    sed -i 's/a - b/a + b/' calc.c && git -c user.name=f -c user.email=f@l commit -qam fixed)
  "$PY" - <<'PYEOF'
import json, subprocess
base = subprocess.check_output(["git", "-C", "nrwrepo", "rev-parse", "HEAD~1"], text=True).strip()
patch = subprocess.check_output(["git", "-C", "nrwrepo", "diff", "HEAD~1", "HEAD"], text=True)
inst = {"instance_id": "nrwrepo-1", "repo": "nrwrepo", "base_commit": base, "patch": patch, "test_patch": "",
        "problem_statement": "add() subtracts", "hints_text": "", "created_at": "", "version": "",
        "FAIL_TO_PASS": json.dumps(["add"]), "PASS_TO_PASS": json.dumps(["mul"]), "environment_setup_commit": base,
        "language": "c", "build_system": "cmake", "install": "", "build": "cmake -S . -B _b > /dev/null && cmake --build _b",
        "test_cmd": "ctest --test-dir _b", "log_parser": "ctest", "source": "git", "test_files": ["tests/add.c"]}
open("nrw.jsonl", "w").write(json.dumps(inst) + "\n")
PYEOF
  check "re-check: a listed test outside the test files' selection" sh -c "$SC fetch git:$WORK/nrwrepo --store st > /dev/null && $SC validate -i nrw.jsonl --store st --log nrwlog.h5 $SANDBOX > nrw.tsv && grep -q '	ok	' nrw.tsv"
  "$PY" -c 'import h5py, sys; v = [x.decode() for x in h5py.File("nrwlog.h5", "r")["attempts/verdict"][:]]; sys.exit(0 if any("mul, a listed test, did not run" in x for x in v) else 1)' &&
    pass "re-check: the whole suite ran for mul (the run log says why)" || fail "re-check: the whole suite ran for mul (the run log says why)"
fi
# A state that changes CMakeLists.txt takes the prepared workspace (CMake regenerates its build; install and build
# again), with the verdicts of states built from scratch (--fresh): the fix also sets a compile definition.
if command -v cmake > /dev/null; then
  mkdir -p cmrepo/tests && (cd cmrepo &&
    printf 'int add(int a, int b) { return a - b; }\nint mul(int a, int b) { return a * b; }\n' > calc.c &&
    printf 'int add(int, int);\nint main(void) { return add(2, 3) == 5 ? 0 : 1; }\n' > tests/add.c &&
    printf 'int mul(int, int);\nint main(void) { return mul(2, 3) == 6 ? 0 : 1; }\n' > tests/mul.c &&
    printf 'cmake_minimum_required(VERSION 3.13)\nproject(calc C)\nenable_testing()\nadd_executable(t_add tests/add.c calc.c)\nadd_executable(t_mul tests/mul.c calc.c)\nadd_test(NAME add COMMAND t_add)\nadd_test(NAME mul COMMAND t_mul)\n' > CMakeLists.txt &&
    git init -q . && git add -A && git -c user.name=f -c user.email=f@l commit -q -m "add() subtracts" &&
    sed -i 's/a - b/a + b/' calc.c && printf 'int add(int, int);\nint main(void) { return add(2, 3) == 5 && add(1, 1) == 2 ? 0 : 1; }\n' > tests/add.c &&
    printf 'target_compile_definitions(t_add PRIVATE CALC_CHECKED=1)\n' >> CMakeLists.txt &&
    git -c user.name=f -c user.email=f@l commit -qam "add() adds")
  check "cmake description change: validate, and validate --fresh" sh -c "$SC fetch git:$WORK/cmrepo --store st > /dev/null && $SC env -i cmrepo --store st -o cmenv.json $SANDBOX && $SC mine -i cmrepo --store st --env cmenv.json -o cmcand.jsonl && $SC validate -i cmcand.jsonl --store st --log cmlog.h5 $SANDBOX > cm.tsv && $SC validate -i cmcand.jsonl --store st --fresh $SANDBOX > cmf.tsv"
  "$PY" - <<'PYEOF'
import os, sys
import h5py
sys.path.insert(0, os.environ["NK_SOURCE"] + "/tests/cli")
from nk_check import report, finish
v = [l.rstrip("\n").split("\t") for l in open("cm.tsv")]
f = [l.rstrip("\n").split("\t") for l in open("cmf.tsv")]
notes = [x.decode() for x in h5py.File("cmlog.h5", "r")["attempts/verdict"][:]]
report(len(v) == 1 and v[0][1] == "admitted" and v == f, "cmake description change: admitted, as from scratch (%s, %s)" % (v, f))
report(any("the build regenerated (CMakeLists.txt)" in n for n in notes) and not any("built from scratch" in n for n in notes),
       "cmake description change: the after state from the prepared workspace, regenerated (%s)" % [n for n in notes if "prepared" in n or "scratch" in n])
finish()
PYEOF
  [ $? -eq 0 ] && pass "a regenerating build description takes the prepared workspace" || fail "a regenerating build description takes the prepared workspace"
fi
# Induction: the lib layout needed the pytest skill's fix and a retry; induced, a similar repository with other names
# works at the first attempt (a success more for the skill); a third that lacks part of the evidence (test/ for tests/) takes the induced skill in its
# base skill's place (3 of its 4 evidence lines hold) and works at the first attempt too; its success merges into the
# same skill, keeping the evidence both share.
check "induce from the lib layout" $SC env -i librepo --store st --induce induced -o ind1.json $SANDBOX
for r in lib2 lib3; do
  tdir=tests; [ $r = lib3 ] && tdir=test
  mkdir -p ${r}repo/lib/strutil ${r}repo/$tdir
  printf 'def shout(s):\n    return s.upper()\n' > ${r}repo/lib/strutil/__init__.py
  printf 'from strutil import shout\n\n\ndef test_shout():\n    assert shout("a") == "A"\n' > ${r}repo/$tdir/test_strutil.py
  (cd ${r}repo && git init -q . && git add -A && git -c user.name=f -c user.email=f@l commit -q -m initial)
  check "$r: fetch" sh -c "$SC fetch git:$WORK/${r}repo --store st > /dev/null"
done
check "lib2 without induced skills" $SC env -i lib2repo --store st -o ind0.json $SANDBOX
check "lib2 with the induced skill" $SC env -i lib2repo --store st --skills induced --induce induced -o ind2.json $SANDBOX
cp induced/*.skill one.skill.txt
check "lib3 (test/, not tests/) with the induced skill" $SC env -i lib3repo --store st --skills induced --induce induced -o ind3.json $SANDBOX
check "src layout with the induced skill" $SC env -i srcrepo --store st --skills induced -o ind4.json $SANDBOX
expect_fail "--induce with the fixed method" 2 "induce needs --method skills" $SC env -i lib2repo --store st --method fixed --induce induced -o x.json
"$PY" - <<'PYEOF'
import glob, json, os, sys
sys.path.insert(0, os.environ["NK_SOURCE"] + "/tests/cli")
from nk_check import report, finish
j = [json.load(open("ind%d.json" % i)) for i in range(5)]
files = glob.glob("induced/*.skill")
report(j[1]["ok"] and j[1]["attempts"] == 2 and j[1]["induced"] in [os.path.abspath(f) for f in files] + files and len(files) == 1, "the lib layout's success is induced as one skill (%s, %s)" % (j[1]["induced"], files))
one = open("one.skill.txt").read()
ev = [l[9:] for l in one.splitlines() if l.startswith("evidence ")]
report(ev == ["file *.py", "file tests/*", "file test_*.py", "file lib/*.py"], "its evidence: the base's and the layout, abstracted (%s)" % ev)
report("calc" not in "\n".join(ev) and "PYTHONPATH" in [l for l in one.splitlines() if l.startswith("test ")][0] and "ModuleNotFoundError" not in one and "successes 2" in one and "base python-pytest" in one, "no names of the repository; the fix baked into the commands, not left as a fix")
report(j[0]["ok"] and j[0]["attempts"] == 2, "lib2 without the induced skill: 2 attempts (%d)" % j[0]["attempts"])
report(j[2]["ok"] and j[2]["attempts"] == 1 and j[2]["evidence"][0].startswith("skill: induced-python-pytest-") and j[2]["induced"] == j[1]["induced"], "lib2 with it: the induced skill, first attempt, and its success merged in (%s)" % j[2]["evidence"][:2])
merged = open(files[0]).read()
mev = [l[9:] for l in merged.splitlines() if l.startswith("evidence ")]
report(j[3]["ok"] and j[3]["attempts"] == 1 and j[3]["evidence"][0].startswith("skill: induced-python-pytest-") and "induced from python-pytest: 3 of 4 evidence lines hold" in j[3]["evidence"], "lib3 lacks tests/: the induced skill in the shipped one's place, first attempt (%s, %d)" % (j[3]["evidence"], j[3]["attempts"]))
report(len(glob.glob("induced/*.skill")) == 1 and "successes 3" in merged and mev == ["file *.py", "file test_*.py", "file lib/*.py"], "lib3's success merged: successes 3, the evidence both share (%s)" % mev)
report(j[4]["ok"] and j[4]["evidence"][0] == "skill: python-src-layout", "the src layout does not take the lib skill (%s)" % j[4]["evidence"][0])
finish()
PYEOF
[ $? -eq 0 ] && pass "induced skills checked" || fail "induced skills checked"
# An induced skill that matches in full and fails: its base skill's fixes ran from the induced one's (its remaining fix
# lines), so the base skill is not tried from scratch (1 attempt; 2 without the induced skill).
mkdir -p lib4repo/lib/strutil lib4repo/tests
printf 'def shout(s):\n    return s.upper()\n' > lib4repo/lib/strutil/__init__.py
printf 'import nk_module_nobody_has\nfrom strutil import shout\n\n\ndef test_shout():\n    assert shout("a") == "A"\n' > lib4repo/tests/test_strutil.py
(cd lib4repo && git init -q . && git add -A && git -c user.name=f -c user.email=f@l commit -q -m initial)
check "lib4 (a module nobody has): fetch" sh -c "$SC fetch git:$WORK/lib4repo --store st > /dev/null"
check "lib4 without induced skills" $SC env -i lib4repo --store st -o ind5.json $SANDBOX
check "lib4 with the induced skill" $SC env -i lib4repo --store st --skills induced -o ind6.json $SANDBOX
"$PY" - <<'PYEOF'
import json, os, sys
sys.path.insert(0, os.environ["NK_SOURCE"] + "/tests/cli")
from nk_check import report, finish
a, b = json.load(open("ind5.json")), json.load(open("ind6.json"))
report(not a["ok"] and a["attempts"] == 2, "lib4 without it: fails in 2 attempts (no fix, PYTHONPATH; %d)" % a["attempts"])
report(not b["ok"] and b["attempts"] == 1 and b["evidence"][0].startswith("skill: induced-python-pytest-"), "lib4 with it: the induced skill fails, the shipped one is not tried from scratch: 1 attempt (%d, %s)" % (b["attempts"], b["evidence"]))
finish()
PYEOF
[ $? -eq 0 ] && pass "a failed induced skill ends its base skill" || fail "a failed induced skill ends its base skill"
# An ini file whose addopts need a plugin that is not installed (pytest-cov): the skill sets them aside and retries.
mkdir -p covrepo/tests
printf 'def test_one():\n    assert 1 + 1 == 2\n' > covrepo/tests/test_one.py
printf '[pytest]\naddopts = --cov=nothing --cov-report=html\n' > covrepo/tox.ini
(cd covrepo && git init -q . && git add -A && git -c user.name=f -c user.email=f@l commit -q -m initial)
check "covrepo: fetch" sh -c "$SC fetch git:$WORK/covrepo --store st > /dev/null"
check "env: addopts of a missing plugin" $SC env -i covrepo --store st -o env_cov.json $SANDBOX
"$PY" - <<'PYEOF'
import json, os, sys
sys.path.insert(0, os.environ["NK_SOURCE"] + "/tests/cli")
from nk_check import report, finish
e = json.load(open("env_cov.json"))
report(e["ok"] and e["attempts"] == 2 and e["tests_found"] == 1 and "PYTEST_ADDOPTS" in e["test_cmd"], "the ini's addopts set aside, the suite runs (%s, %d attempts)" % (e["evidence"][-1], e["attempts"]))
finish()
PYEOF
[ $? -eq 0 ] && pass "missing plugins checked" || fail "missing plugins checked"
# A fix that runs a command: the environment's install carries it, so a fresh workspace (validate, mine) runs it too.
mkdir -p runfix && cat > runfix/needs-marker.skill <<'EOF2'
name needs-marker
language python
build_system marker
log_parser tap
evidence file tests/test_calc.py
evidence file calc.py
test if [ -f .marker ]; then printf 't/marker.t ..\n1..1\nok 1 - marker\nok\nAll tests successful.\nResult: PASS\n'; else echo 'no marker here'; exit 1; fi
fix no marker here => run touch .marker
EOF2
check "env with a run fix" $SC env -i repo --store st --skills runfix -o env_runfix.json $SANDBOX
"$PY" - <<'PYEOF'
import json, os, sys
sys.path.insert(0, os.environ["NK_SOURCE"] + "/tests/cli")
from nk_check import report, finish
e = json.load(open("env_runfix.json"))
report(e["ok"] and e["attempts"] == 2 and e["evidence"][0] == "skill: needs-marker" and e["install"] == "{ touch .marker; }", "the run fix is in the environment's install (%s)" % e["install"])
finish()
PYEOF
[ $? -eq 0 ] && pass "run fixes checked" || fail "run fixes checked"
mkdir badskills && printf 'name broken\ntest true\nlog_parser tap\nevidence maybe x\n' > badskills/broken.skill
expect_fail "a malformed skill (file, line)" 3 "broken.skill.*line 4" $SC env -i srcrepo --store st --skills badskills -o x.json

# The memory limit: a test that takes 256 MiB under --memory 64 is killed where a memory cgroup can be made, and the
# log says which limits held.
mkdir -p memrepo/tests
printf 'def test_small():\n    assert bytearray(1 << 20)\n\n\ndef test_big():\n    assert bytearray(256 << 20)\n' > memrepo/tests/test_mem.py
(cd memrepo && git init -q . && git add -A && git -c user.name=f -c user.email=f@l commit -q -m initial)
check "memrepo: fetch" sh -c "$SC fetch git:$WORK/memrepo --store st > /dev/null"
check "env --memory 64" $SC env -i memrepo --store st --memory 64 --log memlog.h5 -o env_mem.json $SANDBOX
check "env --memory 0 (no limit)" $SC env -i memrepo --store st --memory 0 --log memlog0.h5 -o env_mem0.json $SANDBOX
swe-crafter doctor | awk -F'\t' '$2 == "memory cgroup" {print $3}' > cgroup.txt
"$PY" - <<'PYEOF'
import json, os, sys
import h5py
sys.path.insert(0, os.environ["NK_SOURCE"] + "/tests/cli")
from nk_check import report, finish
held = open("cgroup.txt").read().strip() == "yes"
with h5py.File("memlog.h5", "r") as f:
    limits = [l.decode() for l in f["attempts/limits"][:]]
    verdicts = [v.decode() for v in f["attempts/verdict"][:]]
with h5py.File("memlog0.h5", "r") as f:
    limits0 = [l.decode() for l in f["attempts/limits"][:]]
e, e0 = json.load(open("env_mem.json")), json.load(open("env_mem0.json"))
report(e0["ok"] and all("no memory limit asked" in l for l in limits0), "--memory 0: no limit, both tests run (%s)" % limits0[:1])
if held:
    report(all("64 MiB by cgroup v" in l for l in limits), "the log says the limit held (%s)" % limits[:1])
    report(any(v.startswith("killed: out of memory") for v in verdicts) and not e["ok"], "256 MiB under 64: killed, and the log says so (%s)" % verdicts)
else:
    report(all("no memory limit: " in l for l in limits), "no memory cgroup here: the log says the limit did not hold (%s)" % limits[:1])
finish()
PYEOF
[ $? -eq 0 ] && pass "the memory limit checked" || fail "the memory limit checked"

# Sources that are chains of commits: a Debian source package (its DEP-3 patches, a commit each) and PyPI releases
# (a commit per release; a file:// folder laid out as PyPI's JSON API stands in for pypi.org).
check "a Debian source package (fixture)" bash "$NK_SOURCE/data/swe-crafter/fixture-debian-src.sh" debsrc
check "fetch debian-src:FILE.dsc" sh -c "$SC fetch debian-src:$WORK/debsrc/calc_1.0-1.dsc --store st > /dev/null"
check "env, mine and validate on it" sh -c "$SC env -i debian-src.calc --store st -o env_deb.json $SANDBOX && $SC mine -i debian-src.calc --store st --env env_deb.json -o cand_deb.jsonl && $SC validate -i cand_deb.jsonl --store st -o inst_deb.jsonl $SANDBOX > verdicts_deb.tsv"
# its build dependencies: installed or not (alternatives, profiles), and the list for apt-get install
check "doctor -i: the build dependencies" sh -c "$SC doctor -i debian-src.calc --store st > deps.tsv"
if grep -q "^debian-src.calc	python3-pytest	yes$" deps.tsv && grep -q "^debian-src.calc	nk-fixture-alternative | python3-pytest	yes$" deps.tsv &&
  grep -q "^debian-src.calc	nk-fixture-absent	no$" deps.tsv && ! grep -q "stage1-only\|debhelper" deps.tsv &&
  [ "$($SC doctor -i debian-src.calc --store st --missing)" = "nk-fixture-absent" ]; then
  pass "doctor -i: installed, missing and --missing's list"
else
  fail "doctor -i: installed, missing and --missing's list ($(cat deps.tsv))"
fi
expect_fail "doctor -i on a repository without debian/control" 3 "no debian/control" $SC doctor -i repo --store st
expect_fail "doctor --missing without -i" 2 "needs -i" $SC doctor --missing
git -C st/repos/debian-src.calc log --format='%B%x00' > deblog.txt
check "PyPI's layout (fixture)" "$PY" "$NK_SOURCE/data/swe-crafter/fixture-pypi.py" pypi
check "fetch pypi: (3 releases)" sh -c "$SC fetch pypi:calc --pypi-index file://$WORK/pypi --store st > /dev/null"
check "fetch pypi:NAME==VERSION" sh -c "$SC fetch pypi:calc==1.1 --versions 5 --name calc11 --pypi-index file://$WORK/pypi --store st > /dev/null"
check "env, mine and validate on the releases" sh -c "$SC env -i pypi.calc --store st -o env_pypi.json $SANDBOX && $SC mine -i pypi.calc --store st --env env_pypi.json -o cand_pypi.jsonl && $SC validate -i cand_pypi.jsonl --store st -o inst_pypi.jsonl $SANDBOX > verdicts_pypi.tsv"
git -C st/repos/pypi.calc log --format='%s' > pypilog.txt
git -C st/repos/calc11 log --format='%s' > calc11log.txt
expect_fail "an sdist with a member outside its folder" 3 "outside its folder" $SC fetch pypi:evil --pypi-index file://$WORK/pypi --store st
expect_fail "an sdist whose sha256 does not match" 3 "sha256 mismatch" $SC fetch pypi:badsum --pypi-index file://$WORK/pypi --store st
expect_fail "an unknown PyPI project" 3 "nothere" $SC fetch pypi:nothere --pypi-index file://$WORK/pypi --store st
expect_fail "an unknown PyPI release" 3 "no final release 9.9" $SC fetch pypi:calc==9.9 --name c99 --pypi-index file://$WORK/pypi --store st
[ ! -e st/repos/pypi.evil ] && [ ! -e st/repos/pypi.evil.partial ] && [ ! -e "$WORK/../outside.txt" ] && pass "nothing of a failed fetch stays (in the store or outside)" || fail "nothing of a failed fetch stays"
"$PY" - <<'PYEOF'
import json, os, sys
sys.path.insert(0, os.environ["NK_SOURCE"] + "/tests/cli")
from nk_check import report, finish
if True:
    msgs = [m.strip() for m in open("deblog.txt").read().split("\0") if m.strip()][::-1]
    report(len(msgs) == 3 and msgs[0].startswith("debian-src calc 1.0-1") and msgs[1].startswith("clamp() ignores the upper bound\n\nclamp(5, 0, 3) returns 0") and "Bug-Debian: https://bugs.debian.org/1000001" in msgs[1] and msgs[2].startswith("README: say what it computes"), "debian-src: the upstream tree, then a commit per patch, its DEP-3 header the message (%s)" % [m.splitlines()[0] for m in msgs])
    cand = [json.loads(l) for l in open("cand_deb.jsonl")]
    inst = [json.loads(l) for l in open("inst_deb.jsonl")]
    report(len(cand) == 1 and cand[0]["source"] == "debian-patch" and cand[0]["problem_statement"].startswith("clamp() ignores the upper bound") and "Swe-Crafter" not in cand[0]["problem_statement"], "debian-src: the code-and-test patch is the one candidate, source debian-patch, its description the statement")
    report(len(inst) == 1 and json.loads(inst[0]["FAIL_TO_PASS"]) == ["tests/test_calc.py::test_clamp"], "debian-src: admitted, FAIL_TO_PASS test_clamp")
report(open("pypilog.txt").read().split() == ["calc", "1.2", "calc", "1.1", "calc", "1.0"], "pypi: the last 3 final releases, oldest first (no pre-release, nothing yanked)")
report(open("calc11log.txt").read().split() == ["calc", "1.1", "calc", "1.0"], "pypi:calc==1.1: the chain ends at 1.1")
cand = [json.loads(l) for l in open("cand_pypi.jsonl")]
inst = [json.loads(l) for l in open("inst_pypi.jsonl")]
report(len(cand) == 1 and cand[0]["source"] == "release" and "clamp() respects its upper bound" in cand[0]["problem_statement"], "pypi: the release diff 1.0 -> 1.1 is the candidate, the changelog's new lines its statement (%s)" % [c["problem_statement"][:80] for c in cand])
report(len(inst) == 1 and json.loads(inst[0]["FAIL_TO_PASS"]) == ["tests/test_calc.py::test_clamp"], "pypi: admitted, FAIL_TO_PASS test_clamp")
finish()
PYEOF
[ $? -eq 0 ] && pass "debian-src and pypi sources checked" || fail "debian-src and pypi sources checked"

# The whole pipeline over a corpus: the fixture, the lib layout (no history to mine), a package that is not installed
# (its row says why; the corpus goes on); resumed, nothing runs again; the log's tables; shards merge.
printf '# a corpus\ngit:%s/repo\ngit:%s/librepo lib\n\ndebian-bin:nk-no-such-package-xyz\n' "$WORK" "$WORK" > corpus.txt
check "run --corpus (--fixed-too)" sh -c "$SC run --corpus corpus.txt --store st -o out --fixed-too --runs 2 --log runlog.h5 $SANDBOX > run.tsv"
check "run again: resumed" sh -c "swe-crafter run --corpus corpus.txt --store st -o out --fixed-too --runs 2 $SANDBOX > run2.tsv 2> run2.err"
check "stats of the run log" sh -c "$SC stats -i out/run.h5 --svg stats.svg > stats.md"
check "validate --log" sh -c "$SC validate -i cand.jsonl --store st --runs 1 --log vlog.h5 $SANDBOX > /dev/null"
check "run --shard 0/2 and 1/2" sh -c "$SC run --corpus corpus.txt --store st -o s0 --shard 0/2 --agent none --runs 1 $SANDBOX > /dev/null && $SC run --corpus corpus.txt --store st -o s1 --shard 1/2 --agent none --runs 1 $SANDBOX > /dev/null"
check "nk-data merge of the shards' logs" nk-data -q merge s0/run.h5 s1/run.h5 -o merged.h5
check "stats of the merged log" sh -c "$SC stats -i merged.h5 > merged.md"
"$PY" - <<'PYEOF'
import json, os, sys
import h5py
import xml.etree.ElementTree as ET
sys.path.insert(0, os.environ["NK_SOURCE"] + "/tests/cli")
from nk_check import report, finish
rows = [l.rstrip("\n").split("\t") for l in open("run.tsv")][1:]
byname = {r[0]: r for r in rows}
report(len(rows) == 3 and byname["repo"][2:6] == ["ok", "1", "4", "1"] and byname["lib"][2] == "ok" and byname["lib"][4] == "0", "run: a row per source: the fixture's 4 candidates and 1 instance, the lib layout's environment (%s)" % rows)
bad = [r for r in rows if r[0].startswith("debian-bin:")]
report(len(bad) == 1 and bad[0][2].startswith("error:") and "nk-no-such-package-xyz" in bad[0][2], "run: the missing package's row says why, and the corpus went on")
inst = [json.loads(l) for l in open("out/instances.jsonl")]
ref = [json.loads(l) for l in open("inst.jsonl")]
report([i["instance_id"] for i in inst] == [i["instance_id"] for i in ref] and inst[0]["FAIL_TO_PASS"] == ref[0]["FAIL_TO_PASS"], "run: the same instance as the verbs one by one")
maps = [json.loads(l) for l in open("out/repos/repo/status-maps.jsonl")]
f2p = json.loads(inst[0]["FAIL_TO_PASS"])[0]
mine = [m for m in maps if m["instance_id"] == inst[0]["instance_id"]]
report(len(mine) == 4 and all(m["status"][f2p] == ("FAILED" if m["state"] == "before" else "PASSED") for m in mine) and sorted((m["state"], m["run"]) for m in mine) == [("after", 1), ("after", 2), ("before", 1), ("before", 2)], "status maps: each state's runs, the fail-to-pass test FAILED before and PASSED after (SWE-bench's names)")
rows2 = [l.rstrip("\n").split("\t") for l in open("run2.tsv")][1:]
report([r[:7] for r in rows2] == [r[:7] for r in rows] and "earlier run" in open("run2.err").read(), "resumed: the finished repositories are not run again, the rows are the same")
ran = [r for r in rows if r[2] == "ok"]
report(ran and all(a[7] == b[7] for a, b in zip(rows, rows2) if a[2] == "ok"), "resumed: a finished repository's row gives the seconds it took when it ran (%s)" % [(a[7], b[7]) for a, b in zip(rows, rows2)])
with h5py.File("out/run.h5", "r") as f:
    report(f.attrs["nk_schema"] == "swe-crafter.log/1", "the run log's schema")
    repos = [(r.decode(), m.decode(), int(ok)) for r, m, ok in zip(f["repos/repo"][:], f["repos/method"][:], f["repos/env_ok"][:])]
    report(sorted(repos) == [("lib", "fixed", 0), ("lib", "skills", 1), ("repo", "fixed", 1), ("repo", "skills", 1)], "/repos: both methods on both repositories (%s)" % repos)
    verdicts = [v.decode() for v in f["candidates/verdict"][:]]
    report(len(verdicts) == 4 and verdicts.count("admitted") == 1 and list(f["candidates/runs"][:]) == [2] * 4, "/candidates: 4 verdicts, 1 admitted, 2 runs each")
    stages = set(s.decode() for s in f["attempts/stage"][:])
    report({"env:skills", "env:fixed", "validate", "distill", "grade"} <= stages and len(f["attempts/command"]) == len(f["attempts/exit_code"]) == len(f["attempts/seconds"]), "/attempts: every stage's commands (%s)" % sorted(stages))
    tv = [v.decode() for v in f["attempts/verdict"][:]]
    report(any(v.startswith("works: 5 tests ran") for v in tv) and any(v.startswith("before run 2:") for v in tv), "/attempts: verdicts of environments and test runs")
    report(len(f["trajectories/resolved"]) == 1, "/trajectories: the one instance was tried")
with h5py.File("runlog.h5", "r") as f, h5py.File("out/run.h5", "r") as g:
    report(list(f["candidates/instance_id"][:]) == list(g["candidates/instance_id"][:]), "--log is the run's log")
with h5py.File("vlog.h5", "r") as f:
    report(len(f["candidates/verdict"]) == 4 and len(f["repos/repo"]) == 0, "validate --log: its 4 verdicts")
table = open("stats.md").read().splitlines()
py = [l for l in table if l.startswith("| python |")]
cells = [c.strip() for c in py[0].split("|")[1:-1]] if py else []
report(len(py) == 1 and cells[1:6] == ["2", "1/2", "2/2", "2.00", "1.50"] and cells[6].startswith("4 (git 4)") and cells[7] == "1 (git 1)", "stats: repos, env fixed 1/2, skills 2/2, ratio, attempts per success, candidates and instances by source (%s)" % cells)
ET.parse("stats.svg")
report(True, "stats --svg is XML")
merged = [l.split("|")[1:7] for l in open("merged.md").read().splitlines() if l.startswith("| python |")]
report(merged and [c.strip() for c in merged[0]] == ["python", "2", "-", "2/2", "-", "1.50"], "the shards' logs merged: the same repositories and environments (%s)" % merged)
finish()
PYEOF
[ $? -eq 0 ] && pass "run, stats and the log checked" || fail "run, stats and the log checked"
printf 'ftp:nowhere\n' > badcorpus.txt
expect_fail "a corpus with an unknown source (file, line)" 3 "badcorpus.txt.*line 1.*unknown source" $SC run --corpus badcorpus.txt --store st -o bad
printf '# nothing\n' > emptycorpus.txt
expect_fail "an empty corpus" 3 "no source" $SC run --corpus emptycorpus.txt --store st -o bad
expect_fail "stats of a file that is not HDF5" 3 "cand.jsonl.*not an HDF5 file" $SC stats -i cand.jsonl
"$PY" -c 'import h5py; h5py.File("other.h5", "w")["x"] = [1.0]'
expect_fail "stats of an HDF5 file that is no run log" 3 "other.h5.*schema" $SC stats -i other.h5

# Bad input: one line naming file and what, exit 3; nothing written.
mkdir notgit
expect_fail "not a git repository" 3 "not a git repository" $SC mine -i notgit --store st -o x.jsonl
expect_fail "an unknown source" 3 "unknown source" $SC fetch svn:foo --store st
expect_fail "fetch of a folder that is no repository" 3 "not a git repository" $SC fetch git:$WORK/notgit --store st
echo '{"instance_id": "a", "repo": "repo"' > bad.jsonl
expect_fail "malformed JSONL (file, line)" 3 "bad.jsonl.*line 1" $SC validate -i bad.jsonl --store st
head -1 inst.jsonl > dup.jsonl; head -1 inst.jsonl >> dup.jsonl
expect_fail "a duplicate instance_id" 3 "line 2.*duplicate instance_id" $SC validate -i dup.jsonl --store st
"$PY" -c 'import json; d = json.loads(open("inst.jsonl").readline()); d.pop("base_commit"); print(json.dumps(d))' > nobase.jsonl
expect_fail "a missing base_commit" 3 "base_commit" $SC validate -i nobase.jsonl --store st
"$PY" -c 'import json; d = json.loads(open("inst.jsonl").readline()); d["patch"] = d["patch"].replace("-    return a - b", "-    return a - c"); print(json.dumps(d))' > noapply.jsonl
expect_fail "a patch that does not apply" 3 "patch does not apply" $SC validate -i noapply.jsonl --store st -o x.jsonl
[ ! -e x.jsonl ] && pass "no output after a failure" || fail "no output after a failure"
expect_fail "mine --synthetic on a folder outside the store" 2 "commits its bugs in the store" $SC mine -i "$WORK/repo" --store st --synthetic 1 -o x.jsonl
[ -z "$(git -C repo for-each-ref refs/swe-crafter)" ] && pass "no synthetic commit in the user's repository" || fail "no synthetic commit in the user's repository"
check "empty standard input: no instances, no error" sh -c "$SC validate -i - --store st -o none.jsonl < /dev/null"
[ -f none.jsonl ] && [ ! -s none.jsonl ] && pass "an empty instance file written" || fail "an empty instance file written"
finish
