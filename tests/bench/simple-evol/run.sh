#!/bin/bash
# tests/bench/simple-evol/run.sh BIN: the benchmark of issue #30.
#   (A) evaluator throughput on the paper's training sets (TSP 64 x 50,
#       CVRP 10 x 50 with 30 ants x 100 iterations, flow shop 16 x 50 jobs
#       with GLS_ITER GLS iterations): the same heuristic files scored by
#       `simple-evol eval` (2 workers and 1) and by a straightforward Python
#       evaluator (a process per candidate, a Python loop, a numpy colony,
#       EoH's GLS with numba: py_evaluator.py); heuristic and harness time,
#       and the limit: the heuristic's own time / cores.
#   (B) references: Held-Karp against ils at n = 15; ils against elkai
#       (LKH-3) at n = 100 and 200; nearest neighbour's gap; cvrp ils against
#       PyVRP (HGS, PYVRP_SECONDS a instance) at 50 and 100 customers; NEH and
#       iterated greedy against Taillard's best known makespans (110
#       instances).
#   (C) ICE: `simple-evol llm --exam` and a `sweep` (preset small; PROBLEMS,
#       FRAMEWORKS, RUNGS, SEEDS, BUDGET shrink it), then `ice` per problem:
#       frameworks x (M, K, Q, AHI, ICE +- SE, top-rung test gap) and SVGs.
#   (D) the faithfulness row: llm4ad's own EoH and FunSearch (PyPI llm4ad
#       1.11) on TSP with the same surrogates, evaluator and data as C's
#       sweep, beside simple-evol's (llm4ad_row.py; D_RUNGS, D_SEEDS; needs
#       C's sweep and exam in OUT).
#   (E) SimpleEvol's ablations on C's TSP data: without the best-so-far
#       code in the prompt, without compression (E_RUNGS, E_SEEDS, E_BUDGET).
# PARTS=ABCDE picks parts; PYV is the venv's python (tests/bench/simple-evol/venv.sh),
# PYL llm4ad's (tests/bench/simple-evol/llm4ad_venv.sh).
set -eu
BIN=${1:-build/bin}
OUT=${OUT:-build/bench/simple-evol}
THREADS=${THREADS:-2}
PARTS=${PARTS:-ABCDE}
PYV=${PYV:-build/bench-venv-se/bin/python}
PYL=${PYL:-build/bench-venv-llm4ad/bin/python}
GLS_ITER=${GLS_ITER:-1000}
PYVRP_SECONDS=${PYVRP_SECONDS:-5}
here=$(cd "$(dirname "$0")" && pwd)
data=$(cd "$here/../../../data/simple-evol" && pwd)
mkdir -p "$OUT"
SE="$BIN/simple-evol -q"
attr() { /usr/bin/python3 -c 'import h5py, sys; print(h5py.File(sys.argv[1], "r").attrs[sys.argv[2]])' "$1" "$2"; }
mean() { /usr/bin/python3 -c 'import h5py, sys, numpy as np; print("%.6g" % np.mean(h5py.File(sys.argv[1], "r")[sys.argv[2]][()]))' "$1" "$2"; }
now() { date +%s.%N; }
# with_reference IN PEER.txt OUT: a copy of IN whose instances carry the peer's objectives as references.
with_reference() {
  /usr/bin/python3 - "$1" "$2" "$3" <<'PYEOF'
import h5py, sys, shutil
shutil.copy(sys.argv[1], sys.argv[3])
ref = [float(x) for x in open(sys.argv[2]) if x.strip()]
with h5py.File(sys.argv[3], "a") as f:
    for k, key in enumerate(sorted(f["instances"].keys())):
        f["instances"][key].attrs["reference"] = ref[k]
PYEOF
}

echo "# simple-evol benchmark ($(nproc) cores, $(date -u +%Y-%m-%d))"
if [[ $PARTS == *A* ]]; then
  echo
  echo "## (A) evaluator throughput: the same heuristic, simple-evol eval vs a Python evaluator"
  echo
  $SE gen --problem tsp --count 64 --nodes 50 --seed 101 -o "$OUT/a_tsp.h5"
  $SE gen --problem cvrp --count 10 --nodes 50 --seed 102 -o "$OUT/a_cvrp.h5"
  $SE gen --problem fssp --count 16 --jobs 50 --seed 103 -o "$OUT/a_fssp.h5"
  echo "| problem | heuristic | Python evaluator s | of which heuristic | numba compile | simple-evol eval s (process) | in a run: 2 workers s | 1 worker s | heuristic (sum) | harness (sum) | limit: heuristic/2 | in-run/limit | speed-up in a run | speed-up process to process | mean objective Python / ours |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  for spec in tsp:tsp_nearest tsp:tsp_lookahead cvrp:cvrp_inverse fssp:fssp_bottleneck; do
    p=${spec%%:*}; h=${spec#*:}
    t0=$(now); $PYV "$here/py_evaluator.py" "$p" "$OUT/a_$p.h5" "$data/$h.py" --gls "$GLS_ITER" > "$OUT/a_py_$h.txt"; t1=$(now)
    py_wall=$(echo "$t1 - $t0" | bc -l)
    py_h=$(awk '/heuristic_seconds/ {print $2}' "$OUT/a_py_$h.txt"); py_c=$(awk '/compile_seconds/ {print $2}' "$OUT/a_py_$h.txt")
    py_obj=$(awk '/mean_objective/ {print $2}' "$OUT/a_py_$h.txt")
    t0=$(now); $SE eval -i "$OUT/a_$p.h5" --heuristic "$data/$h.py" --gls-iterations "$GLS_ITER" --threads 2 -o "$OUT/a_se2_$h.h5"; t1=$(now)
    se2=$(echo "$t1 - $t0" | bc -l)
    t0=$(now); $SE eval -i "$OUT/a_$p.h5" --heuristic "$data/$h.py" --gls-iterations "$GLS_ITER" --threads 1 -o "$OUT/a_se1_$h.h5"; t1=$(now)
    se1=$(echo "$t1 - $t0" | bc -l)
    hs=$(attr "$OUT/a_se2_$h.h5" heuristic_total_seconds); hn=$(attr "$OUT/a_se2_$h.h5" harness_seconds)
    in2=$(attr "$OUT/a_se2_$h.h5" wall_seconds); in1=$(attr "$OUT/a_se1_$h.h5" wall_seconds)
    obj=$(attr "$OUT/a_se2_$h.h5" mean_objective)
    printf '| %s | %s | %.3f | %.3f | %.2f | %.3f | %.4f | %.4f | %.4f | %.4f | %.4f | %.2f | %.1fx | %.1fx | %.6g / %.6g |\n' "$p" "$h" "$py_wall" "$py_h" "$py_c" "$se2" "$in2" "$in1" "$hs" "$hn" \
      "$(echo "$hs / 2" | bc -l)" "$(echo "$in2 / ($hs / 2)" | bc -l)" "$(echo "$py_wall / $in2" | bc -l)" "$(echo "$py_wall / $se2" | bc -l)" "$py_obj" "$obj"
  done
  echo
  echo "The Python evaluator is a process per candidate, as the AHD codes run it; simple-evol eval is shown both as a"
  echo "process (starting the tool and its zygote) and as it runs inside evolve (wall_seconds: forked workers, no start-up)."
fi

if [[ $PARTS == *B* ]]; then
  echo
  echo "## (B) reference solvers against the peers"
  echo
  $SE gen --problem tsp --count 8 --nodes 15 --seed 201 -o "$OUT/b_t15.h5"
  $SE solve -i "$OUT/b_t15.h5" --method exact --store-reference --threads "$THREADS" -o "$OUT/b_t15x.h5"
  for m in ils nn; do $SE solve -i "$OUT/b_t15x.h5" --method $m --threads "$THREADS" -o "$OUT/b_t15_$m.h5"; done
  echo "| set | method | mean gap | mean s/instance |"
  echo "|---|---|---|---|"
  for m in ils nn; do echo "| TSP 8 x 15 vs Held-Karp | $m | $(mean "$OUT/b_t15_$m.h5" /gap) | $(mean "$OUT/b_t15_$m.h5" /runtime) |"; done
  for n in 100 200; do
    $SE gen --problem tsp --count 16 --nodes $n --seed 20$n -o "$OUT/b_t$n.h5"
    t0=$(now); $PYV "$here/peers.py" tsp "$OUT/b_t$n.h5" 10 > "$OUT/b_t${n}_elkai.txt" 2>/dev/null; t1=$(now)
    with_reference "$OUT/b_t$n.h5" "$OUT/b_t${n}_elkai.txt" "$OUT/b_t${n}r.h5"
    echo "| TSP 16 x $n vs elkai (LKH-3, 10 runs) | elkai | 0 | $(echo "($t1 - $t0) / 16" | bc -l | cut -c1-6) |"
    for m in ils nn fi; do
      $SE solve -i "$OUT/b_t${n}r.h5" --method $m --threads "$THREADS" --seed 1 -o "$OUT/b_t${n}_$m.h5"
      echo "| TSP 16 x $n vs elkai | $m | $(mean "$OUT/b_t${n}_$m.h5" /gap) | $(mean "$OUT/b_t${n}_$m.h5" /runtime) |"
    done
  done
  for n in 50 100; do
    $SE gen --problem cvrp --count 8 --nodes $n --seed 30$n -o "$OUT/b_c$n.h5"
    t0=$(now); $PYV "$here/peers.py" cvrp "$OUT/b_c$n.h5" "$PYVRP_SECONDS" > "$OUT/b_c${n}_pyvrp.txt" 2>/dev/null; t1=$(now)
    with_reference "$OUT/b_c$n.h5" "$OUT/b_c${n}_pyvrp.txt" "$OUT/b_c${n}r.h5"
    echo "| CVRP 8 x $n vs PyVRP (HGS, $PYVRP_SECONDS s) | PyVRP | 0 | $(echo "($t1 - $t0) / 8" | bc -l | cut -c1-6) |"
    for m in ils savings; do
      $SE solve -i "$OUT/b_c${n}r.h5" --method $m --threads "$THREADS" --seed 1 -o "$OUT/b_c${n}_$m.h5"
      echo "| CVRP 8 x $n vs PyVRP | $m | $(mean "$OUT/b_c${n}_$m.h5" /gap) | $(mean "$OUT/b_c${n}_$m.h5" /runtime) |"
    done
  done
  $SE gen --problem fssp --taillard all -o "$OUT/b_ta.h5"
  for m in neh ig; do
    $SE solve -i "$OUT/b_ta.h5" --method $m --threads "$THREADS" --seed 1 -o "$OUT/b_ta_$m.h5"
    echo "| Taillard 110 vs best known | $m | $(mean "$OUT/b_ta_$m.h5" /gap) | $(mean "$OUT/b_ta_$m.h5" /runtime) |"
  done
fi

if [[ $PARTS == *C* ]]; then
  PROBLEMS=${PROBLEMS:-tsp,cvrp,fssp}
  FRAMEWORKS=${FRAMEWORKS:-simpleevol,eoh,funsearch,reevo,mctsahd,random}
  RUNGS=${RUNGS:-0-9}
  SEEDS=${SEEDS:-3}
  BUDGET=${BUDGET:-0}
  echo
  echo "## (C) ICE: sweep (preset small) over $PROBLEMS x $FRAMEWORKS x rungs $RUNGS x $SEEDS seeds, budget $BUDGET (0: 60)"
  echo
  t0=$(now)
  [ -f "$OUT/exam.h5" ] || $SE llm --exam --threads "$THREADS" -o "$OUT/exam.h5"
  $SE sweep -o "$OUT/sweep" --problems "$PROBLEMS" --frameworks "$FRAMEWORKS" --rungs "$RUNGS" --seeds "$SEEDS" --budget "$BUDGET" --threads "$THREADS"
  t1=$(now)
  echo "exam + sweep: $(echo "$t1 - $t0" | bc -l | cut -d. -f1) s"
  echo
  for p in ${PROBLEMS//,/ }; do
    $SE ice -i "$OUT/sweep" --exam "$OUT/exam.h5" --problem "$p" -o "$OUT/ice-$p.h5" --plot "$OUT/ice-$p.svg"
    /usr/bin/python3 - "$OUT/ice-$p.h5" "$p" <<'PYEOF'
import h5py, sys, numpy as np
f = h5py.File(sys.argv[1], "r")
fw = [x.decode() for x in f["ice/framework"][()]]
slope, se, ahi, gap = f["ice/slope"][()], f["ice/slope_se"][()], f["ice/ahi"][()], f["ice/gap"][()]
shape = {"simpleevol": (1, 2), "eoh": (1, 5), "funsearch": (3, 1), "reevo": (1, 5), "mctsahd": (1, 6), "random": (0, 1)}
print("### %s (I from the exam, weakest rung = 1; eps %.2f)" % (sys.argv[2], f.attrs["eps"]))
print()
print("| framework | M | K | Q (mean) | AHI | ICE | SE | top-rung test gap |")
print("|---|---|---|---|---|---|---|---|")
order = np.argsort(-slope)
best_other = {}
for k in order:
    m, kk = shape[fw[k]]
    q = 10 ** (ahi[k] - m - kk) - 1
    print("| %s | %d | %d | %.0f | %.3f | %.4g | %.2g | %.4f |" % (fw[k], m, kk, q, ahi[k], slope[k], se[k], gap[k, -1]))
if "simpleevol" in fw:
    s = slope[fw.index("simpleevol")]
    others = [slope[i] for i in range(len(fw)) if fw[i] != "simpleevol"]
    if others:
        print()
        print("SimpleEvol's ICE / the best other: %.3f" % (s / max(others)))
print()
PYEOF
  done
fi

if [[ $PARTS == *D* ]]; then
  echo
  echo "## (D) llm4ad's EoH and FunSearch on the surrogates (TSP, rungs ${D_RUNGS:-0,3,6,9}, ${D_SEEDS:-3} seeds, 60 candidates)"
  echo
  "$PYL" "$here/llm4ad_row.py" --bin "$BIN" --sweep "$OUT/sweep" --exam "$OUT/exam.h5" --rungs "${D_RUNGS:-0,3,6,9}" --seeds "${D_SEEDS:-3}"
fi

if [[ $PARTS == *E* ]]; then
  E_RUNGS=${E_RUNGS:-8,9}
  E_SEEDS=${E_SEEDS:-3}
  E_BUDGET=${E_BUDGET:-200}
  echo
  echo "## (E) SimpleEvol's ablations on TSP (C's data; rungs $E_RUNGS, $E_SEEDS seeds, $E_BUDGET candidates)"
  echo
  mkdir -p "$OUT/ablation"
  t0=$(now)
  for r in ${E_RUNGS//,/ }; do
    for s in $(seq 1 "$E_SEEDS"); do
      for v in full no-best-so-far no-compression; do
        case $v in
          full) flags="" ;;
          no-best-so-far) flags="--no-best-so-far" ;;
          no-compression) flags="--compress-every 0" ;;
        esac
        f="$OUT/ablation/$v-r$r-s$s.h5"
        [ -f "$f" ] || $SE evolve -i "$OUT/sweep/data/tsp-train.h5" --test "$OUT/sweep/data/tsp-test50.h5" \
          --llm "surrogate:$r" --budget "$E_BUDGET" --seed "$s" $flags -o "$f"
      done
    done
  done
  t1=$(now)
  /usr/bin/python3 - "$OUT/ablation" "$E_RUNGS" "$E_SEEDS" <<'PYEOF'
import h5py, sys, numpy as np
d, rungs, seeds = sys.argv[1], [int(r) for r in sys.argv[2].split(",")], int(sys.argv[3])
print("| variant | " + " | ".join("rung %d test gap (mean of %d)" % (r, seeds) for r in rungs) + " | all |")
print("|---|" + "---|" * (len(rungs) + 1))
for v in ["full", "no-best-so-far", "no-compression"]:
    cells, everything = [], []
    for r in rungs:
        g = [h5py.File("%s/%s-r%d-s%d.h5" % (d, v, r, s), "r")["best/test_gap"][0] for s in range(1, seeds + 1)]
        everything += g
        cells.append("%.4f" % np.mean(g))
    print("| %s | %s | %.4f |" % (v, " | ".join(cells), np.mean(everything)))
PYEOF
  echo
  echo "ablation runs: $(echo "$t1 - $t0" | bc -l | cut -d. -f1) s"
fi
