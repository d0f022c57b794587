# speedscale-sim.sh - gen | solve | predict | eval through files and pipes;
# YDS against an exact rational reference (exhaustive critical intervals);
# every written schedule re-checked in Python; shards; bad input.
. "$(dirname "$0")/lib.sh"

check "gen | solve through a pipe" sh -c 'speedscale-sim gen --jobs 40 --instances 5 --seed 2 -o - | speedscale-sim -q solve -i - --algo yds,avr,oa,qoa,bkp -o piped.h5'
check "gen poisson" speedscale-sim -q gen --jobs 30 --instances 40 --arrivals poisson:2 --seed 1 -o inst.h5
check "gen bursty" speedscale-sim -q gen --jobs 30 --instances 5 --arrivals bursty:1,10,5 --seed 1 -o bursty.h5
check "gen diurnal" speedscale-sim -q gen --jobs 30 --instances 5 --arrivals diurnal:1,12 --work uniform:0.5,2 --slack fixed:3 -o diurnal.h5
check "gen uniform, pareto work" speedscale-sim -q gen --jobs 30 --instances 5 --arrivals uniform:1 --work pareto:1,2.5 -o uniform.h5
check "solve every classic algorithm" speedscale-sim -q solve -i inst.h5 --algo yds,yds-naive,avr,oa,qoa,bkp -o res.h5
check "solve bursty and diurnal" sh -c 'speedscale-sim -q solve -i bursty.h5 -o rb.h5 && speedscale-sim -q solve -i diurnal.h5 -o rd.h5 && speedscale-sim -q solve -i uniform.h5 -o ru.h5'
check "adversarial families" sh -c 'for n in 8 400; do speedscale-sim -q gen --adversarial oa --jobs $n -o oa$n.h5 && speedscale-sim -q solve -i oa$n.h5 --algo yds,oa -o roa$n.h5; done; speedscale-sim -q gen --adversarial avr --jobs 400 -o avr.h5 && speedscale-sim -q solve -i avr.h5 --algo yds,avr -o ravr.h5'
printf 'id,release,deadline,work\n1,0,4,4\n2,1,2,3\n3,5,9,1\n' > trace.csv
check "gen --from-csv" speedscale-sim -q gen --from-csv trace.csv -o csv.h5
check "solve the CSV trace" speedscale-sim -q solve -i csv.h5 --algo yds -o rcsv.h5
check "predict oracle (perfect)" speedscale-sim -q predict -i inst.h5 -o perfect.h5
check "predict oracle --noise 0.3" speedscale-sim -q predict -i inst.h5 --noise 0.3 --seed 4 -o noisy.h5
check "predict mean (learned from other instances)" sh -c 'speedscale-sim -q gen --jobs 30 --instances 40 --arrivals poisson:2 --seed 99 -o train.h5 && speedscale-sim -q predict -i train.h5 --method mean --grid 64 -o learned.h5'
check "predict quantile" speedscale-sim -q predict -i train.h5 --method quantile --quantile 0.75 -o learned75.h5
ALL=yds,oa,las,pred-dynamic,pred-offline,pred-jobspeed
check "solve with perfect predictions" speedscale-sim -q solve -i inst.h5 --predictions perfect.h5 --algo $ALL -o rperfect.h5
check "solve with noisy predictions" speedscale-sim -q solve -i inst.h5 --predictions noisy.h5 --algo $ALL -o rnoisy.h5
check "solve pred-offline with a learned profile" speedscale-sim -q solve -i inst.h5 --predictions learned.h5 --algo yds,oa,pred-offline -o rlearned.h5
for bad in zero x10 random; do
  check "solve with --adversarial $bad predictions" sh -c "speedscale-sim -q predict -i inst.h5 --adversarial $bad -o adv_$bad.h5 && speedscale-sim -q solve -i inst.h5 --predictions adv_$bad.h5 --algo $ALL -o radv_$bad.h5"
done
check "eval writes the table and both SVG plots" speedscale-sim -q eval -i inst.h5 --noise 0,0.2,1 --eps-list 0,0.1 --plot curve.svg --profile-plot profile.svg -o eval.h5
check "eval prints a TSV table when piped" sh -c 'speedscale-sim eval -i inst.h5 --noise 0,0.5 --algo oa,pred-dynamic -o eval2.h5 | head -1 | grep -q "^algorithm	eps	prediction"'
for i in 0 1 2; do speedscale-sim -q solve -i inst.h5 --algo yds,oa --shard $i/3 -o "shard$i.h5"; done
check "merge sharded solves" nk-data -q merge shard2.h5 shard0.h5 shard1.h5 -o merged.h5
check "merged summary equals the whole run" sh -c 'speedscale-sim -q solve -i inst.h5 --algo yds,oa -o whole.h5 && h5diff whole.h5 merged.h5 /summary/oa/energy /summary/oa/energy && h5diff whole.h5 merged.h5 /results/oa/000039/speed /results/oa/000039/speed'
for i in 0 1; do
  SLURM_ARRAY_TASK_ID=$i SLURM_ARRAY_TASK_COUNT=2 bash "$NK_SOURCE/data/batch/speedscale-sim.sbatch" inst.h5 yds,oa slurm >/dev/null 2>&1
done
check "the sbatch example's shards merge to the whole run" sh -c 'nk-data -q merge slurm.shard-1.h5 slurm.shard-0.h5 -o slurm.h5 && h5diff slurm.h5 whole.h5 /summary/yds/energy /summary/yds/energy'

# Tiny instances with integer times for the exact reference; one with all releases 0.
"$PY" - <<'PYEOF'
import h5py, numpy as np
rng = np.random.default_rng(5)
with h5py.File("tiny.h5", "w") as f:
    for k in range(300):
        n = int(rng.integers(1, 9))
        r = rng.integers(0, 8, n).astype(float)
        d = r + rng.integers(1, 6, n)
        w = rng.integers(1, 6, n).astype(float)
        g = f.create_group(f"instances/{k:06d}")
        g["release"], g["deadline"], g["work"] = r, d, w
with h5py.File("common.h5", "w") as f:
    for k in range(50):
        n = int(rng.integers(1, 30))
        g = f.create_group(f"instances/{k:06d}")
        g["release"] = np.zeros(n); g["deadline"] = rng.uniform(0.5, 10, n); g["work"] = rng.uniform(0.1, 3, n)
PYEOF
check "solve the tiny integer instances (a plain h5py file, no nk_schema)" speedscale-sim -q solve -i tiny.h5 --algo yds,yds-naive,avr,oa,qoa,bkp -o rtiny.h5
check "solve instances released at time 0" speedscale-sim -q solve -i common.h5 --algo yds,oa -o rcommon.h5

if "$PY" - <<'PYEOF'
import h5py, numpy as np, sys, xml.dom.minidom
from fractions import Fraction as F
fails = 0
def check(name, ok):
    global fails
    print(("ok   " if ok else "FAIL ") + name); fails += 0 if ok else 1

def yds_exact(r, d, w, alpha=3):
    """Exhaustive critical intervals in exact rationals: the densest [r_i, d_j], collapse, repeat."""
    jobs = [[F(a), F(b), F(c)] for a, b, c in zip(r, d, w)]
    energy = F(0)
    while jobs:
        best = None
        for s in {j[0] for j in jobs}:
            for e in {j[1] for j in jobs}:
                if e <= s: continue
                work = sum(j[2] for j in jobs if j[0] >= s and j[1] <= e)
                if work and (best is None or work / (e - s) > best[0]): best = (work / (e - s), s, e)
        density, s, e = best
        energy += density ** alpha * (e - s)
        rest = []
        for j in jobs:
            if j[0] >= s and j[1] <= e: continue
            for i in (0, 1):
                if j[i] >= e: j[i] -= e - s
                elif j[i] > s: j[i] = s
            rest.append(j)
        jobs = rest
    return energy

def replay(inst, res, algo, name):
    """Independent check of a written schedule: the assignment stays inside each
    job's window and inside the profile, pieces never overlap, and every job gets its work."""
    g = inst["instances"][name]; r, d, w = g["release"][...], g["deadline"][...], g["work"][...]
    o = res["results"][algo][name]; t, s = o["t"][...], o["speed"][...]
    job, start, end = o["assignment/job"][...], o["assignment/start"][...], o["assignment/end"][...]
    done = np.zeros(len(w)); ok = True
    order = np.argsort(start)
    if np.any(start[order][1:] < end[order][:-1] - 1e-9 * max(1, abs(t[-1]))): ok = False
    for j, a, b in zip(job, start, end):
        k = np.searchsorted(t, a, side="right") - 1
        if not (0 <= k < len(s)) or b > t[k + 1] + 1e-9 * max(1, abs(t[-1])): ok = False; continue
        if a < r[j] - 1e-9 * max(1, abs(r[j])) or b > d[j] + 1e-9 * max(1, abs(d[j])): ok = False
        done[j] += s[k] * (b - a)
    energy = float(np.sum(s ** 3 * np.diff(t)))
    return ok and np.all(np.abs(done - w) <= 1e-9 * w + 1e-12), energy

tiny, rt = h5py.File("tiny.h5"), h5py.File("rtiny.h5")
names = sorted(tiny["instances"])
worst = 0.0
for n in names:
    g = tiny["instances"][n]
    exact = float(yds_exact(g["release"][...], g["deadline"][...], g["work"][...]))
    for algo in ("yds", "yds-naive"):
        worst = max(worst, abs(rt["results"][algo][n].attrs["energy"] - exact) / exact)
check(f"YDS (fast and textbook) = exact rational optimum on {len(names)} instances (worst rel. error {worst:.1e})", worst < 1e-9)
bad = 0
for algo in ("yds", "avr", "oa", "qoa", "bkp"):
    for n in names:
        ok, e = replay(tiny, rt, algo, n)
        bad += (not ok) or abs(e - rt["results"][algo][n].attrs["energy"]) > 1e-9 * e
check("every written schedule replays: pieces inside windows and profile, all work done, energy as stated", bad == 0)
ratios = {a: rt["summary"][a]["ratio"][...] for a in ("avr", "oa")}
check(f"AVR/OPT <= 2^(a-1) a^a = 108 (max {ratios['avr'].max():.3f}) and OA/OPT <= a^a = 27 (max {ratios['oa'].max():.3f})",
      ratios["avr"].max() <= 108 and ratios["oa"].max() <= 27 and ratios["avr"].min() >= 1 - 1e-9)
rc = h5py.File("rcommon.h5")
check("OA = YDS when every release is 0", np.allclose(rc["summary/oa/energy"][...], rc["summary/yds/energy"][...], rtol=1e-9, atol=0))
oa_small, oa_big = [h5py.File(f"roa{n}.h5")["summary/oa/ratio"][0] for n in (8, 400)]
check(f"the adversarial family drives OA up with n ({oa_small:.2f} -> {oa_big:.2f}), below a^a", 1 < oa_small < oa_big <= 27)
avr_bad = h5py.File("ravr.h5")["summary/avr/ratio"][0]
check(f"the AVR family gives AVR/OPT = {avr_bad:.2f} (-> Gamma(a+1) = 6)", 4.5 < avr_bad < 6.01)
csv = h5py.File("rcsv.h5")["results/yds/000000"]
check("CSV trace: the hand-solved optimum (27 + 3 (4/3)^3 + 4 (1/4)^3)", abs(csv.attrs["energy"] - (27 + 3 * (4 / 3) ** 3 + 4 / 64)) < 1e-9)
p = h5py.File("rperfect.h5")["summary"]
for a in ("pred-dynamic", "pred-offline", "pred-jobspeed"):
    check(f"{a} with perfect predictions beats OA (mean {p[a]['ratio'][...].mean():.3f} vs {p['oa']['ratio'][...].mean():.3f})",
          p[a]["ratio"][...].mean() < p["oa"]["ratio"][...].mean())
check("LAS with exact work predictions is optimal", np.allclose(p["las/ratio"][...], 1, rtol=1e-8))
robust = 4 * (4 * (4 * 2 + 1) + 27)
for bad in ("zero", "x10", "random"):
    s = h5py.File(f"radv_{bad}.h5")["summary"]
    worst = max(s[a]["ratio"][...].max() for a in ("pred-dynamic", "pred-offline", "pred-jobspeed"))
    feas = all(s[a]["feasible"][...].all() for a in s if a != "instance" and a != "opt_energy")
    check(f"--adversarial {bad}: all feasible, worst pred-* ratio {worst:.2f} <= proven {robust}", feas and worst <= robust)
ev = h5py.File("eval.h5")["table"]
algos = [a.decode() for a in ev["algorithm"][...]]
check("eval table has every algorithm and eps", {"avr", "oa", "qoa", "bkp", "las", "pred-dynamic", "pred-jobspeed"} <= set(algos)
      and set(ev["eps"][...]) >= {0.0, 0.1})
for svg in ("curve.svg", "profile.svg"):
    try:
        doc = xml.dom.minidom.parse(svg)
        check(f"{svg} is well-formed SVG with lines", len(doc.getElementsByTagName("polyline")) >= 4)
    except Exception as e:
        check(f"{svg} parses ({e})", False)
m = h5py.File("merged.h5")
check("merged file keeps per-instance attributes", m["results/oa/000039"].attrs["energy"] == h5py.File("whole.h5")["results/oa/000039"].attrs["energy"])
sys.exit(1 if fails else 0)
PYEOF
then pass "python reference checks"; else fail "python reference checks"; fi

# Bad input: one error line naming file, instance and job; exit codes; no partial output.
"$PY" - <<'PYEOF'
import h5py, numpy as np
def write(name, r, d, w, drop=None):
    with h5py.File(name, "w") as f:
        g = f.create_group("instances/000000"); g["release"] = [0.0, 1.0]; g["deadline"] = [2.0, 3.0]; g["work"] = [1.0, 1.0]
        g = f.create_group("instances/000001")
        for k, v in (("release", r), ("deadline", d), ("work", w)):
            if k != drop: g[k] = np.array(v, dtype=float)
write("bad_window.h5", [0, 5], [1, 5], [1, 1])
write("bad_work.h5", [0, 1], [1, 2], [1, -2])
write("bad_nan.h5", [0, np.nan], [1, 2], [1, 1])
write("bad_missing.h5", [0, 1], [1, 2], [1, 1], drop="work")
write("bad_lengths.h5", [0, 1, 2], [1, 2], [1, 1])
PYEOF
expect_fail "deadline not after release" 3 "bad_window.h5.*instance 000001, job 1: deadline" speedscale-sim solve -i bad_window.h5 -o out.h5
expect_fail "work <= 0" 3 "instance 000001, job 1: work" speedscale-sim solve -i bad_work.h5 -o out.h5
expect_fail "NaN release" 3 "instance 000001, job 1: .*finite" speedscale-sim solve -i bad_nan.h5 -o out.h5
expect_fail "an instance without /work" 3 "/instances/000001/work.*missing" speedscale-sim solve -i bad_missing.h5 -o out.h5
expect_fail "datasets of different lengths" 3 "lengths 3, 2 and 2" speedscale-sim solve -i bad_lengths.h5 -o out.h5
expect_fail "alpha <= 1" 2 "alpha" speedscale-sim solve -i inst.h5 --alpha 1 -o out.h5
expect_fail "unknown algorithm" 2 "unknown algorithm 'opt'" speedscale-sim solve -i inst.h5 --algo yds,opt -o out.h5
expect_fail "pred-* without --predictions" 2 "needs --predictions" speedscale-sim solve -i inst.h5 --algo pred-dynamic -o out.h5
expect_fail "predictions for other instances" 3 "job_speed.*(missing|entries)" speedscale-sim solve -i tiny.h5 --predictions perfect.h5 --algo pred-jobspeed -o out.h5
head -c 3000 inst.h5 > truncated.h5
expect_fail "truncated HDF5" 3 "truncated.h5" speedscale-sim solve -i truncated.h5 -o out.h5
expect_fail "empty stdin" 3 "standard input" sh -c 'speedscale-sim solve -i - -o out.h5 < /dev/null'
printf 'id,release,deadline,work\n1,0,4,4\n1,1,2,3\n' > dup.csv
expect_fail "CSV with a duplicate id" 3 "row 3: id 1 is a duplicate" speedscale-sim gen --from-csv dup.csv -o out.h5
printf 'id,release,deadline,work\n2,0,4,4\n1,1,2,3\n' > unsorted.csv
expect_fail "CSV with ids out of order" 3 "row 3: id 1 is out of order" speedscale-sim gen --from-csv unsorted.csv -o out.h5
printf 'release,deadline,work\n0,4,x\n' > nan.csv
expect_fail "CSV with a non-number" 3 "row 2: work 'x' is not a number" speedscale-sim gen --from-csv nan.csv -o out.h5
expect_fail "bad --arrivals" 2 "arrivals" speedscale-sim gen --arrivals poisson:-1 -o out.h5
expect_fail "bad --work" 2 "work" speedscale-sim gen --work lognormal:1 -o out.h5
expect_fail "absurd --jobs x --instances" 2 "memory" speedscale-sim gen --jobs 4000000000 --instances 4000000000 -o out.h5
if [ -e out.h5 ]; then fail "a failed run left out.h5"; else pass "no output file after failures"; fi
no_temp_files "no temp files left" .
"$PY" -c "
import h5py, numpy as np
with h5py.File('far.h5', 'w') as f:
    g = f.create_group('/instances/000000')
    g['release'] = np.array([0.0, 1.0, 2.0]); g['deadline'] = np.array([1.0, 1e300, 3.0]); g['work'] = np.array([1.0, 1.0, 1.0])"
expect_fail "a deadline of 1e300 beside windows of 1 (was a missed deadline, exit 1)" 3 "far.h5.*/instances/000000.*below double precision at the instance's time scale" speedscale-sim -q solve -i far.h5 -o far_out.h5
expect_fail "a --dt that would re-evaluate qOA more than 2^26 times (refused before any work)" 2 "at most 2\^26" speedscale-sim -q solve -i bursty.h5 --algo yds,qoa --dt 1e-300 -o dt.h5
finish
