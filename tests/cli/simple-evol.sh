# simple-evol.sh - gen | solve through pipes; Taillard's instances against a
# Python LCG and his bound; objectives and gaps recomputed in numpy for every
# method; Held-Karp against brute force; NEH, the published GLS and the
# greedy-ant ACO equal a Python reimplementation step for step; eval on the
# three published interfaces (TSP construction equal to Python's loop); the
# sandbox stops writes outside scratch, loopback connections, forks and hangs;
# a TSPLIB import; h5py-written instances; bad input.
. "$(dirname "$0")/lib.sh"

SE="simple-evol -q"
REF="$PY $NK_SOURCE/tests/cli/simple_evol_reference.py"
ref() { check "$1" $REF "${@:2}"; }

check "gen tsp | solve exact through a pipe" sh -c "$SE gen --problem tsp --count 3 --nodes 8 --seed 3 -o - | $SE solve -i - --method exact --store-reference -o t8.h5"
ref "exact: Held-Karp equals brute force" exact t8.h5 t8.h5
for m in nn fi ils; do
  check "solve tsp --method $m" $SE solve -i t8.h5 --method $m -o t8_$m.h5 --seed 1
  ref "tsp $m: objectives and gaps recomputed" objectives t8.h5 t8_$m.h5
done
check "gen tsp n = 60" $SE gen --problem tsp --count 4 --nodes 60 --seed 5 -o t60.h5
check "solve ils with a reference" $SE solve -i t60.h5 --method ils --iterations 3000 --store-reference -o t60r.h5
check "solve nn against it" $SE solve -i t60r.h5 --method nn -o t60nn.h5
ref "nn gaps recomputed" objectives t60r.h5 t60nn.h5

check "gen cvrp" $SE gen --problem cvrp --count 3 --nodes 20 --seed 2 -o c20.h5
check "solve cvrp ils --store-reference" $SE solve -i c20.h5 --method ils --iterations 100 --store-reference -o c20r.h5
check "solve cvrp savings" $SE solve -i c20r.h5 --method savings -o c20s.h5
ref "cvrp ils: routes feasible, objectives recomputed" objectives c20.h5 c20r.h5
ref "cvrp savings: routes feasible, gaps recomputed" objectives c20r.h5 c20s.h5

check "gen fssp --taillard ta001,ta011,ta021" $SE gen --problem fssp --taillard ta001,ta011,ta021 -o ta.h5
ref "Taillard processing equals a Python LCG" taillard ta.h5
ref "Taillard lower bounds recomputed" lower_bound ta.h5
check "gen fssp random (Taillard's generator, drawn seeds)" $SE gen --problem fssp --count 3 --jobs 12 --seed 4 -o f12.h5
ref "random flow shops equal the LCG at their time seeds" taillard f12.h5
check "solve neh" $SE solve -i ta.h5 --method neh -o neh.h5
ref "NEH equals Python's" neh ta.h5 neh.h5
ref "NEH makespans and gaps to the upper bounds" objectives ta.h5 neh.h5
check "solve ig" $SE solve -i ta.h5 --method ig --iterations 200 -o ig.h5
ref "ig makespans recomputed" objectives ta.h5 ig.h5

# The published interfaces, run by the sandboxed evaluator.
SANDBOX="--sandbox namespace"
if ! $SE eval -i t8.h5 --heuristic /dev/null -o probe.h5 2>probe.err; then
  if grep -q "namespace sandbox cannot run here" probe.err; then
    echo "note: no namespace sandbox here ($(cat probe.err)); eval runs with --sandbox none"
    SANDBOX="--sandbox none"
  fi
fi
cat > nn.py <<'PYEOF'
import numpy as np

def select_next_node(current_node, destination_node, unvisited_nodes, distance_matrix):
    """Nearest neighbour, with a look at the way home as a tie-break."""
    d = distance_matrix[current_node][unvisited_nodes] + 1e-9 * distance_matrix[destination_node][unvisited_nodes]
    return unvisited_nodes[np.argmin(d)]
PYEOF
cat > inv.py <<'PYEOF'
import numpy as np

def heuristics(distance_matrix, coordinates, demands, capacity):
    return 1 / distance_matrix
PYEOF
cat > gls.py <<'PYEOF'
import numpy as np

def get_matrix_and_jobs(current_sequence, time_matrix, m, n):
    loads = time_matrix.sum(axis=0)
    k = int(np.argmax(loads))
    new = time_matrix.copy()
    new[:, k] *= 1.2
    return new, np.argsort(-time_matrix[:, k])[:4]
PYEOF
check "eval tsp" $SE eval -i t60r.h5 --heuristic nn.py $SANDBOX --threads 2 -o ev_tsp.h5
ref "eval tsp: the construction equals Python's loop" tsp t60r.h5 ev_tsp.h5 nn.py
ref "eval tsp: objectives and gaps recomputed" objectives t60r.h5 ev_tsp.h5
check "gen cvrp n = 10" $SE gen --problem cvrp --count 2 --nodes 10 --seed 6 -o c10.h5
check "eval cvrp --greedy-ants" $SE eval -i c10.h5 --heuristic inv.py $SANDBOX --greedy-ants --ants 4 --aco-iterations 6 -o ev_c.h5
ref "eval cvrp: the greedy-ant ACO equals Python's step for step" aco c10.h5 ev_c.h5 inv.py 4 6
check "eval cvrp sampled ants" $SE eval -i c20r.h5 --heuristic inv.py $SANDBOX --aco-iterations 20 --seed 3 -o ev_cs.h5
ref "eval cvrp: sampled routes feasible, objectives recomputed" objectives c20r.h5 ev_cs.h5
check "eval fssp" $SE eval -i ta.h5 --heuristic gls.py $SANDBOX --gls-iterations 12 -o ev_f.h5
ref "eval fssp: the GLS equals the published one step for step" gls ta.h5 ev_f.h5 gls.py 12

# Failing heuristics are results (exit 0) with a status per instance.
cat > raises.py <<'PYEOF'
def select_next_node(current_node, destination_node, unvisited_nodes, distance_matrix):
    raise RuntimeError("no idea")
PYEOF
cat > revisit.py <<'PYEOF'
def select_next_node(current_node, destination_node, unvisited_nodes, distance_matrix):
    return 0
PYEOF
cat > hang.py <<'PYEOF'
def select_next_node(current_node, destination_node, unvisited_nodes, distance_matrix):
    while True:
        pass
PYEOF
cat > escape.py <<PYEOF
def select_next_node(current_node, destination_node, unvisited_nodes, distance_matrix):
    open("$WORK/escaped.txt", "w").write("x")
    return int(unvisited_nodes[0])
PYEOF
cat > connect.py <<'PYEOF'
import socket

def select_next_node(current_node, destination_node, unvisited_nodes, distance_matrix):
    socket.create_connection(("127.0.0.1", 22), timeout=2)
    return int(unvisited_nodes[0])
PYEOF
cat > forks.py <<'PYEOF'
import os

def select_next_node(current_node, destination_node, unvisited_nodes, distance_matrix):
    os.fork()
    return int(unvisited_nodes[0])
PYEOF
check "eval: an exception" $SE eval -i t8.h5 --heuristic raises.py $SANDBOX -o ev_raises.h5
check "eval: an invalid answer" $SE eval -i t8.h5 --heuristic revisit.py $SANDBOX -o ev_revisit.h5
check "eval: a hang" $SE eval -i t8.h5 --heuristic hang.py $SANDBOX --timeout 0.5 --threads 2 -o ev_hang.h5
check "eval: the total timeout" $SE eval -i t60r.h5 --heuristic hang.py $SANDBOX --timeout 30 --total-timeout 0.5 --threads 1 -o ev_total.h5
check "eval: forks" $SE eval -i t8.h5 --heuristic forks.py $SANDBOX -o ev_forks.h5
if [ "$SANDBOX" = "--sandbox namespace" ]; then
  check "eval: writes outside scratch" $SE eval -i t8.h5 --heuristic escape.py -o ev_escape.h5
  check "eval: a loopback connection" $SE eval -i t8.h5 --heuristic connect.py -o ev_connect.h5
fi

"$PY" - "$SANDBOX" <<'PYEOF'
import h5py, numpy as np, os, sys
sys.path.insert(0, os.environ["NK_SOURCE"] + "/tests/cli")
from nk_check import report, finish
namespace = sys.argv[1] == "--sandbox namespace"
def st(name):
    f = h5py.File(name)
    return f["status"][()], [e.decode() if isinstance(e, bytes) else e for e in f["error"][()]], f
s, e, f = st("ev_raises.h5")
report((s == 1).all() and "RuntimeError: no idea" in e[0] and np.isnan(f["objective"][()]).all(), "an exception: status 1, the traceback in /error, objective NaN")
report(np.isnan(f.attrs["mean_objective"]), "a failing heuristic has no mean objective")
s, e, _ = st("ev_revisit.h5")
report((s == 3).all() and "not unvisited" in e[0], "returning a visited node: status 3")
s, e, _ = st("ev_hang.h5")
report((s == 2).all() and "timed out" in e[0], "a hang: status 2 after --timeout")
s, e, _ = st("ev_total.h5")
report(s[0] == 2 and (s[1:] == 4).all(), "the total timeout: the running instance 2, the rest 4 (not run)")
s, e, _ = st("ev_forks.h5")
report((s == 1).all() and "not permitted" in e[0], "fork is refused: status 1")
if namespace:
    s, e, _ = st("ev_escape.h5")
    report((s == 1).all() and "PermissionError" in e[0] and not os.path.exists("escaped.txt"), "a write outside scratch fails and leaves nothing")
    s, e, _ = st("ev_connect.h5")
    report((s == 1).all() and "unreachable" in e[0], "a loopback connection fails (no network in the namespace)")
t = h5py.File("ev_tsp.h5")
report(t.attrs["instances_ok"] == 4 and t.attrs["heuristic_total_seconds"] > 0 and (t["heuristic_seconds"][()] > 0).all(), "eval tsp: all ok, heuristic time measured")
finish()
PYEOF
[ $? -eq 0 ] && pass "eval results checked" || fail "eval results checked"

# Frameworks with the surrogates, and a model behind --llm-cmd.
check "gen a training set" $SE gen --problem tsp --count 6 --nodes 20 --seed 8 -o tr.h5
check "its reference tours" $SE solve -i tr.h5 --method ils --store-reference -o trr.h5
check "evolve simpleevol surrogate:5" $SE evolve -i trr.h5 --test t60r.h5 --llm surrogate:5 --budget 12 $SANDBOX --cache-dir cache --seed 3 -o run5.h5
check "the same run from the cache" $SE evolve -i trr.h5 --test t60r.h5 --llm surrogate:5 --budget 12 $SANDBOX --cache-dir cache --seed 3 -o run5b.h5
check "evolve through --llm-cmd (the surrogate as a command, chat-json)" $SE evolve -i trr.h5 --llm-cmd "simple-evol llm --rung 5 --seed 3" --llm-format chat-json --budget 12 $SANDBOX --seed 3 -o run5c.h5
check "evolve random surrogate:2" $SE evolve -i trr.h5 --framework random --llm surrogate:2 --budget 6 $SANDBOX -o runr.h5
for fw in eoh funsearch; do
  check "evolve --framework $fw" $SE evolve -i trr.h5 --framework $fw --llm surrogate:6 --budget 14 $SANDBOX --seed 2 -o run_$fw.h5
done
check "evolve --framework mctsahd" $SE evolve -i trr.h5 --framework mctsahd --llm surrogate:6 --budget 30 $SANDBOX --seed 2 -o run_mcts.h5
check "evolve --framework reevo" $SE evolve -i trr.h5 --framework reevo --llm surrogate:6 --budget 36 $SANDBOX --seed 2 -o run_reevo.h5
check "evolve --no-best-so-far --compress-every 0" $SE evolve -i trr.h5 --llm surrogate:7 --budget 8 --no-best-so-far --compress-every 0 $SANDBOX -o runa.h5
check "evolve cvrp" $SE evolve -i c10.h5 --llm surrogate:6 --budget 4 --ants 4 --aco-iterations 5 $SANDBOX -o runc.h5
check "evolve fssp" $SE evolve -i ta.h5 --llm surrogate:4 --budget 3 --gls-iterations 5 $SANDBOX -o runf.h5
check "llm --seed-heuristic fssp" sh -c "$SE llm --seed-heuristic fssp > seed_fssp.py && grep -q '^def get_matrix_and_jobs' seed_fssp.py"
check "the seed heuristic runs on every instance" sh -c "$SE eval -i ta.h5 --heuristic seed_fssp.py $SANDBOX --gls-iterations 3 -o ev_seed.h5 && \"$PY\" -c 'import h5py, sys; sys.exit(int((h5py.File(\"ev_seed.h5\")[\"status\"][()] != 0).any()))'"
check "llm --exam on two rungs" $SE llm --exam --rungs 0,9 --samples 2 -o exam.h5
echo "### user
## Interface
def select_next_node(current_node, destination_node, unvisited_nodes, distance_matrix)
## Request
Write a better heuristic." > prompt.txt
check "llm --rung 3 answers a prompt" sh -c "$SE llm --rung 3 --seed 1 < prompt.txt > reply1.txt && $SE llm --rung 3 --seed 1 < prompt.txt > reply2.txt && grep -q '^\`\`\`python' reply1.txt"
same "llm: the same prompt and seed give the same reply" reply1.txt reply2.txt
expect_fail "a failing --llm-cmd (retried, then exit 1)" 1 "LLM command failed 3 times" $SE evolve -i trr.h5 --llm-cmd false --budget 2 --llm-timeout 5 $SANDBOX -o x.h5
expect_fail "--llm that is no surrogate" 2 "surrogate:0" $SE evolve -i trr.h5 --llm gpt --budget 2 -o x.h5
expect_fail "an empty prompt" 3 "empty" sh -c "$SE llm --rung 1 < /dev/null"
"$PY" - <<'PYEOF'
import h5py, numpy as np, os, sys
sys.path.insert(0, os.environ["NK_SOURCE"] + "/tests/cli")
from nk_check import report, finish
r = h5py.File("run5.h5"); b = h5py.File("run5b.h5"); c = h5py.File("run5c.h5")
code = lambda f: [x.decode() for x in f["candidates/code"][()]]
report(len(r["candidates/score"]) == 12 and r.attrs["Q"] == 14, "budget 12: 12 candidates, 12 generate + 2 compress calls")
ops = [x.decode() for x in r["llm/operation"][()]]
report(ops.count("generate") == 12 and ops.count("compress") == 2, "the operations logged")
report(abs(r.attrs["AHI"] - (1 + 2 + np.log10(15))) < 1e-12, "AHI = M + K + log10(1 + Q) with M 1, K 2")
report(b.attrs["llm_invocations"] == 0 and b.attrs["Q"] == 14 and code(b) == code(r), "a cached rerun invokes the model 0 times and replays the run")
report(code(c) == code(r), "--llm-cmd with the surrogate as a command gives the surrogate's run")
s, curve = r["candidates/score"][()], r["curve/best_so_far"][()]
ok = ~np.isnan(s)
report(np.allclose(curve[ok], np.minimum.accumulate(np.where(ok, s, np.inf))[ok]), "the best-so-far curve is the running minimum")
report(abs(r["best/score"][0] - np.nanmin(s)) < 1e-12 and len(r["best/test_gap"]) == 1 and r["best/test_gap"][0] > -0.05, "the best score and its test gap")
rr = h5py.File("runr.h5")
report(rr.attrs["M"] == 0 and rr.attrs["K"] == 1 and rr.attrs["Q"] == 6, "random sampling: M 0, K 1, one call per candidate")
a = h5py.File("runa.h5")
report(a.attrs["Q"] == 8, "no compression: one call per candidate")
ops_of = lambda f: set(x.decode() for x in f["llm/operation"][()])
eoh, reevo, fs = h5py.File("run_eoh.h5"), h5py.File("run_reevo.h5"), h5py.File("run_funsearch.h5")
report(len(eoh["candidates/score"]) == 14 and ops_of(eoh) <= {"i1", "e1", "e2", "m1", "m2"} and "i1" in ops_of(eoh) and "e1" in ops_of(eoh), "EoH: 14 candidates from i1, then e1, e2, m1, m2")
report([x.decode() for x in eoh["candidates/operator"][10:14]] == ["e1", "e2", "m1", "m2"], "EoH (population 5 at this budget): 2N = 10 initial samples, then the operators in turn")
rops = [x.decode() for x in reevo["llm/operation"][()]]
report(len(reevo["candidates/score"]) == 36 and rops[:30] == ["init"] * 30 and "short-term reflection" in rops and "crossover" in rops and reevo.attrs["Q"] > 36, "ReEvo: 30 initial samples, then reflections (calls, not candidates) and crossovers")
report(len(fs["candidates/score"]) == 14 and fs.attrs["Q"] == 14 and fs.attrs["M"] == 3 and fs.attrs["K"] == 1, "FunSearch: one call per candidate; M 3, K 1")
m = h5py.File("run_mcts.h5")
mops = [x.decode() for x in m["llm/operation"][()]]
gen = [o for o in mops if o != "refine"]
report(len(m["candidates/score"]) == 30 and m.attrs["M"] == 1 and m.attrs["K"] == 6 and set(gen) <= {"i1", "e1", "e2", "m1", "m2", "s1"}, "MCTS-AHD: 30 candidates; M 1, K 6; operations i1 e1 e2 m1 m2 s1")
report(all(mops[i + 1] == "refine" for i, o in enumerate(mops) if o != "refine") and mops.count("refine") == len(gen) and m.attrs["Q"] == 2 * len(gen) and len(gen) >= 30, "MCTS-AHD: every reply is followed by its re-description (Q = 2 x replies)")
mcand = [x.decode() for x in m["candidates/operator"][()]]
report(mcand[0] == "i1" and "s1" in mcand and "m2" in mcand and "e2" in mcand, "MCTS-AHD: i1 first, then the tree's expansions (e2, m1, m2, s1)")
mdesc = [x.decode() for x in m["candidates/description"][()]]
report(sum("W_CURRENT=" in d for d in mdesc) >= 25, "MCTS-AHD: descriptions come from the re-description call")
e = h5py.File("exam.h5")
report(e["exam/intelligence"][0] == 1.0 and e["exam/gap"].shape == (2, 3), "the exam: I of the weakest rung is 1")
finish()
PYEOF
[ $? -eq 0 ] && pass "evolve results checked" || fail "evolve results checked"

# The ICE sweep: sharded runs, then ICE against numpy.
check "sweep --shard 0/2" $SE sweep -o sw --problems tsp --frameworks simpleevol,random --rungs 0,9 --seeds 2 --budget 4 $SANDBOX --shard 0/2
check "sweep --shard 1/2" $SE sweep -o sw --problems tsp --frameworks simpleevol,random --rungs 0,9 --seeds 2 --budget 4 $SANDBOX --shard 1/2
check "ice" $SE ice -i sw --exam exam.h5 -o ice.h5 --plot ice.svg
"$PY" - <<'PYEOF'
import h5py, numpy as np, os, sys, glob
sys.path.insert(0, os.environ["NK_SOURCE"] + "/tests/cli")
from nk_check import report, finish
runs = sorted(os.path.basename(p) for p in glob.glob("sw/runs/*.h5"))
want = sorted("tsp-%s-r%d-s%d.h5" % (f, r, s) for f in ["simpleevol", "random"] for r in [0, 9] for s in [1, 2])
report(runs == want, "the two shards made every run once")
e = h5py.File("exam.h5")
I = dict(zip(e["exam/rung"][()], e["exam/intelligence"][()]))
ice = h5py.File("ice.h5")
eps = ice.attrs["eps"]
fws = [x.decode() for x in ice["ice/framework"][()]]
for k, fw in enumerate(fws):
    xs, ys = [], []
    for r in [0, 9]:
        gaps = [h5py.File("sw/runs/tsp-%s-r%d-s%d.h5" % (fw, r, s))["best/test_gap"][()].mean() for s in [1, 2]]
        xs.append(I[r] / I[0]); ys.append(1 / (np.mean(gaps) + eps))
    slope = np.polyfit(xs, ys, 1)[0]
    report(abs(ice["ice/slope"][k] - slope) < 1e-9 * max(1, abs(slope)), "ICE of %s equals numpy's fit (%.4g)" % (fw, slope))
q = [h5py.File("sw/runs/tsp-simpleevol-r%d-s%d.h5" % (r, s)).attrs["Q"] for r in [0, 9] for s in [1, 2]]
report(abs(ice["ice/ahi"][fws.index("simpleevol")] - (1 + 2 + np.log10(1 + np.mean(q)))) < 1e-12, "AHI from the mean Q")
report(open("ice.svg").read().startswith("<svg") or "<svg" in open("ice.svg").read()[:200], "the SVG of P against I")
finish()
PYEOF
[ $? -eq 0 ] && pass "ice checked" || fail "ice checked"

# A TSPLIB file and h5py's own instance files.
printf 'NAME : tiny\nTYPE : TSP\nDIMENSION : 5\nEDGE_WEIGHT_TYPE : EUC_2D\nNODE_COORD_SECTION\n1 0 0\n2 3 0\n3 3 4\n4 0 4\n5 1 2\nEOF\n' > tiny.tsp
check "gen --from-tsplib" $SE gen --from-tsplib tiny.tsp -o tiny.h5
check "solve it exactly" $SE solve -i tiny.h5 --method exact -o tiny_ex.h5
"$PY" - <<'PYEOF'
import h5py, numpy as np
rng = np.random.default_rng(1)
with h5py.File("h5py_tsp.h5", "w") as f:
    f.attrs["problem"] = "tsp"
    f["instances/000000/coords"] = rng.random((7, 2))
    f["instances/000001/coords"] = rng.random((6, 2)).astype(np.float32)
def bad(name, problem, build):
    with h5py.File(name, "w") as f:
        if problem:
            f.attrs["problem"] = problem
        build(f)
bad("nan.h5", "tsp", lambda f: f.create_dataset("instances/000000/coords", data=np.array([[0, 0], [1, np.nan], [0, 1]])))
bad("two.h5", "tsp", lambda f: f.create_dataset("instances/000000/coords", data=np.zeros((2, 2))))
bad("shape.h5", "tsp", lambda f: f.create_dataset("instances/000000/coords", data=np.zeros((5, 3))))
def over(f):
    f["instances/000000/coords"] = np.random.rand(4, 2)
    f["instances/000000/demand"] = np.array([0, 3, 60, 2], dtype=np.int32)
    f["instances/000000"].attrs["capacity"] = 50
bad("overcap.h5", "cvrp", over)
bad("zero_p.h5", "fssp", lambda f: f.create_dataset("instances/000000/processing", data=np.array([[1, 0, 3], [2, 2, 2]], dtype=np.int32)))
bad("noproblem.h5", "", lambda f: f.create_dataset("instances/000000/coords", data=np.zeros((5, 2))))
bad("unknown.h5", "knapsack", lambda f: f.create_dataset("instances/000000/coords", data=np.zeros((5, 2))))
PYEOF
check "h5py instances without nk_schema" $SE solve -i h5py_tsp.h5 --method exact -o h5py_ex.h5
expect_fail "NaN coordinates" 3 "nan.h5.*/instances/000000/coords.*non-finite.*\[1,1\]" $SE solve -i nan.h5 --method nn -o x.h5
expect_fail "n < 3" 3 "two.h5.*coords.*2 nodes" $SE solve -i two.h5 --method nn -o x.h5
expect_fail "wrong shape" 3 "shape.h5.*coords.*\[n,2\]" $SE solve -i shape.h5 --method nn -o x.h5
expect_fail "demand above capacity" 3 "overcap.h5.*/instances/000000/demand.*entry 2 is 60" $SE solve -i overcap.h5 --method savings -o x.h5
expect_fail "processing <= 0" 3 "zero_p.h5.*processing.*\[0,1\] is 0" $SE solve -i zero_p.h5 --method neh -o x.h5
expect_fail "no problem attribute" 3 "noproblem.h5.*problem" $SE solve -i noproblem.h5 --method nn -o x.h5
expect_fail "an unknown problem" 3 "unknown.h5.*knapsack" $SE solve -i unknown.h5 --method nn -o x.h5
expect_fail "an unknown Taillard name" 3 "ta999" $SE gen --problem fssp --taillard ta001,ta999 -o x.h5
expect_fail "exact above 20 nodes" 3 "t60.h5.*000000/coords.*60 nodes" $SE solve -i t60.h5 --method exact -o x.h5
expect_fail "a method of another problem" 2 "--method.*neh.*tsp" $SE solve -i t8.h5 --method neh -o x.h5
printf 'garbage' > garbage.h5
expect_fail "not HDF5" 3 "garbage.h5" $SE solve -i garbage.h5 --method nn -o x.h5
expect_fail "empty stdin" 3 "standard input" sh -c "$SE solve -i - --method nn -o x.h5 </dev/null"
expect_fail "a missing heuristic file" 4 "nothere.py" $SE eval -i t8.h5 --heuristic nothere.py -o x.h5
[ ! -e x.h5 ] && pass "no output after a failure" || fail "x.h5 written by a failing run"
no_temp_files "no temp files left" .
finish
