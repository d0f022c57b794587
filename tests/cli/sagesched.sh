# sagesched.sh - trace | simulate through pipes; the file layout; batch-1
# FCFS and SRPT against a direct Python single-server simulation; the
# predictor never sees the future; gittins against a brute-force search;
# CSV import (BurstGPT and Azure headers); profiles from TOML; bad input.
. "$(dirname "$0")/lib.sh"

LIN=linear:0.002,2e-5,1e-9,3e-7,1e-4
check "trace | simulate through a pipe" sh -c 'sagesched -q trace --requests 200 --seed 1 -o - | sagesched -q simulate -i - --iter-cost '$LIN' --kv-tokens 4096 -o piped.h5'
check "trace sharegpt, poisson" sagesched -q trace --requests 300 --load 0.8 --seed 2 -o share.h5
check "trace mixed, bursty" sagesched -q trace --requests 300 --mix mixed --arrivals gamma:3 --seed 2 -o mixed.h5
check "trace with Debian prompts" sagesched -q trace --requests 100 --mix conv --prompts debian --seed 3 -o debian.h5
for p in fcfs sjf-pred ltr mlfq srpt-oracle sagesched sagesched-nomem sagesched-point; do
  check "simulate --policy $p under KV pressure" sagesched -q simulate -i share.h5 --policy $p --kv-tokens 8192 --max-batch 32 -o "sim_$p.h5"
done
check "simulate --swap" sagesched -q simulate -i mixed.h5 --swap --kv-tokens 65536 -o swap.h5
check "simulate --no-iterations" sagesched -q simulate -i share.h5 --no-iterations -o noit.h5

"$PY" - <<'PYEOF'
import h5py, numpy as np
ok = True
def need(cond, what):
    global ok
    print(("ok   " if cond else "FAIL ") + what)
    ok = ok and bool(cond)
t = h5py.File("share.h5", "r")
need(t.attrs["nk_schema"] == "sagesched.trace/1", "trace schema")
r = t["requests"]
a = r["arrival"][:]
need(np.all(np.diff(a) >= 0) and a[0] == 0, "arrivals sorted from 0")
need(r["arrival"].attrs["units"] == "s" and r["prompt_tokens"].dtype == np.int64 and r["category"].dtype == np.int32, "dtypes and units")
need(len(r["prompt"]) == 300 and len(t["categories/name"]) == 6, "prompts and category names")
need(abs(t.attrs["rate"] - 0.8 * t.attrs["saturated_rate"]) < 1e-9, "rate = load x saturated rate")
o = r["output_tokens"][:]
words = [s.decode() if isinstance(s, bytes) else s for s in r["prompt"][:]]
short = np.array(["one word" in w or "briefly" in w or "yes or no" in w or "one line" in w or "in a sentence" in w or "short answer" in w for w in words])
need(np.median(o[short]) < np.median(o[~short]), "cue words carry the length signal")
d = h5py.File("debian.h5", "r")["requests/prompt"][:]
need(all(len(s.split()) > 5 for s in d), "Debian prompts carry real text")
for p in ["fcfs", "sagesched", "srpt-oracle"]:
    s = h5py.File(f"sim_{p}.h5", "r")
    need(s.attrs["nk_schema"] == "sagesched.sim/1" and s.attrs["policy"] == p, f"{p}: schema and policy")
    it = s["iterations"]
    need(it["emitted"][:].sum() == o.sum(), f"{p}: every output token emitted once")
    need(np.all(it["kv_used"][:] <= s.attrs["kv_tokens"]) and s.attrs["kv_tokens"] == 8192, f"{p}: KV within capacity")
    need(np.all(it["batch"][:] <= 32), f"{p}: batch within --max-batch")
    pr = s["per_request"]
    need(np.allclose(pr["ttlt"][:], pr["finish"][:] - a) and np.all(pr["ttft"][:] <= pr["ttlt"][:]), f"{p}: ttlt and ttft")
    ttlt = np.sort(pr["ttlt"][:])
    need(abs(s.attrs["mean_ttlt"] - ttlt.mean()) < 1e-9 and s.attrs["p99_ttlt"] == ttlt[int(np.ceil(0.99 * len(ttlt))) - 1], f"{p}: mean and nearest-rank P99")
need("iterations" not in h5py.File("noit.h5", "r"), "--no-iterations writes no /iterations")
need(h5py.File("swap.h5", "r").attrs["preemption"] == "swap", "--swap recorded")
raise SystemExit(0 if ok else 1)
PYEOF
[ $? -eq 0 ] && pass "trace and simulate outputs checked in Python" || fail "trace and simulate outputs checked in Python"

# Batch 1, unbounded KV, linear iteration cost: the simulator is a single
# server that picks a request at every iteration boundary.
check "trace for the single-server reference" sagesched -q trace --requests 120 --load 0.9 --iter-cost $LIN --max-batch 1 --seed 5 -o one.h5
for p in fcfs srpt-oracle; do
  check "simulate $p at --max-batch 1" sagesched -q simulate -i one.h5 --policy $p --iter-cost $LIN --max-batch 1 --max-tokens 64 --walk keyed -o one_$p.h5
done
check "simulate srpt-oracle at --max-batch 1, running first" sagesched -q simulate -i one.h5 --policy srpt-oracle --iter-cost $LIN --max-batch 1 --max-tokens 64 -o one_srpt-np.h5
"$PY" - <<'PYEOF'
import h5py, numpy as np
t0, cp, ca, cc, cs = 0.002, 2e-5, 1e-9, 3e-7, 1e-4
chunk = 64
r = h5py.File("one.h5", "r")["requests"]
arr, P, O = r["arrival"][:], r["prompt_tokens"][:], r["output_tokens"][:]
def remaining(p, pre, g, o):
    """Seconds left for a request alone: prefill chunks, then decode steps."""
    total = 0.0
    while pre < p:
        c = min(chunk, p - pre)
        total += t0 + cp * c + ca * c * (pre + c) + cs
        pre += c
        if pre == p:
            g += 1
    k = o - g  # decode steps at context p + g .. p + o - 1
    return total + k * (t0 + cs) + cc * (k * p + (g + o - 1) * k / 2)
ok = True
for policy in ["fcfs", "srpt-oracle", "srpt-np"]:
    n = len(arr)
    pre = np.zeros(n, int); gen = np.zeros(n, int); fin = np.full(n, np.nan)
    now, nxt, active = 0.0, 0, []
    while np.isnan(fin).any():
        while nxt < n and arr[nxt] <= now:
            active.append(nxt); nxt += 1
        if not active:
            now = arr[nxt]; continue
        started = [j for j in active if pre[j] > 0]
        if policy == "fcfs":
            i = min(active)
        elif policy == "srpt-np" and started:
            i = started[0]  # the one holding KV runs first: once started, a request runs to its end
        else:
            i = min(active, key=lambda j: (remaining(P[j], pre[j], gen[j], O[j]), j))
        if pre[i] < P[i]:
            c = min(chunk, P[i] - pre[i]); dt = t0 + cp * c + ca * c * (pre[i] + c) + cs; pre[i] += c
            if pre[i] == P[i]: gen[i] += 1
        else:
            dt = t0 + cc * (P[i] + gen[i]) + cs; gen[i] += 1
        now += dt
        if gen[i] == O[i]:
            fin[i] = now; active.remove(i)
    sim = h5py.File(f"one_{policy}.h5", "r")["per_request/finish"][:]
    good = np.allclose(sim, fin, rtol=1e-9, atol=1e-9)
    print(("ok   " if good else "FAIL ") + f"{policy}: every finish time equals the Python single server (max diff {np.abs(sim - fin).max():.2e} s)")
    if policy == "srpt-oracle":
        preemptive = fin.copy()
    if policy == "srpt-np":
        differs = not np.allclose(fin, preemptive)
        print(("ok   " if differs else "FAIL ") + "running first at batch 1 is non-preemptive SRPT, not SRPT")
        ok = ok and differs
    ok = ok and good
raise SystemExit(0 if ok else 1)
PYEOF
[ $? -eq 0 ] && pass "batch-1 schedules equal the Python reference" || fail "batch-1 schedules equal the Python reference"

# The predictor sees a result only once it is known: change the outputs of
# the later half and no earlier prediction may move.
check "predict" sagesched -q predict -i share.h5 -o pred.h5
"$PY" - <<'PYEOF'
import h5py, numpy as np, shutil
shutil.copy("share.h5", "later.h5")
with h5py.File("later.h5", "r+") as f:
    o = f["requests/output_tokens"]
    v = o[:]; v[150:] = v[150:][::-1] * 3 + 7; o[...] = v
PYEOF
check "predict on the changed trace" sagesched -q predict -i later.h5 -o pred_later.h5
"$PY" - <<'PYEOF'
import h5py, numpy as np
a = h5py.File("pred.h5", "r"); b = h5py.File("pred_later.h5", "r")
same = np.array_equal(a["pred/pmf"][:151], b["pred/pmf"][:151])
moved = not np.array_equal(a["pred/pmf"][151:], b["pred/pmf"][151:])
pmf = a["pred/pmf"][:]
sums = np.allclose(pmf.sum(axis=1), 1, atol=1e-5)
better = a.attrs["crps"] < a.attrs["global_histogram_crps"]
print(("ok   " if same and moved else "FAIL ") + "predictions up to the first changed request are unchanged, later ones move")
print(("ok   " if sums else "FAIL ") + "every pmf sums to 1")
print(("ok   " if better else "FAIL ") + f"predictor CRPS {a.attrs['crps']:.3f} below the global histogram's {a.attrs['global_histogram_crps']:.3f}")
raise SystemExit(0 if same and moved and sums and better else 1)
PYEOF
[ $? -eq 0 ] && pass "the predictor never sees the future" || fail "the predictor never sees the future"
check "predict prints a TSV table when piped" sh -c 'sagesched predict -i share.h5 -o p2.h5 | head -1 | grep -q "^model	crps_log2"'

# gittins against a brute-force search over D.
"$PY" - <<'PYEOF'
import h5py, numpy as np
rng = np.random.default_rng(3)
M, n = 40, 6
s = np.cumsum(rng.uniform(0.1, 3, (M, n)), axis=1)
p = rng.uniform(0, 1, (M, n)); p /= p.sum(axis=1, keepdims=True)
a = s[:, -1] * rng.uniform(0, 0.9, M)
with h5py.File("dist.h5", "w") as f:
    f["support"] = s; f["prob"] = p; f["attained"] = a
PYEOF
check "gittins" sagesched -q gittins -i dist.h5 -o g.h5
"$PY" - <<'PYEOF'
import h5py, numpy as np
f = h5py.File("dist.h5", "r"); g = h5py.File("g.h5", "r")
s, p, a = f["support"][:], f["prob"][:], f["attained"][:]
ok = True
for m in range(len(a)):
    keep = s[m] > a[m]
    rem, q = s[m][keep] - a[m], p[m][keep]
    ds = np.concatenate([np.linspace(1e-6, rem.max(), 20001), rem])
    ratio = ((rem[None, :] <= ds[:, None]) @ q) / (np.minimum(rem[None, :], ds[:, None]) @ q)
    ok = ok and abs(ratio.max() - g["index"][m]) <= 1e-9 * ratio.max()
print(("ok   " if ok else "FAIL ") + "every index equals the brute-force maximum over D")
raise SystemExit(0 if ok else 1)
PYEOF
[ $? -eq 0 ] && pass "gittins vs brute force" || fail "gittins vs brute force"

# Real traces from CSV: BurstGPT (seconds, failures with 0 response tokens) and Azure (datetimes).
printf 'Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,ChatGPT,100,20,120,Conversation log\n3,ChatGPT,50,0,50,Conversation log\n4,GPT-4,80,300,380,API log\n' > burst.csv
check "trace --from-csv (BurstGPT header)" sagesched -q trace --from-csv burst.csv -o burst.h5
printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109\n' > azure.csv
check "trace --from-csv (Azure header, datetimes)" sagesched -q trace --from-csv azure.csv -o azure.h5
printf 'arrival,prompt_tokens,output_tokens,category,prompt\n0,10,5,1,"hello, world"\n1.5,20,7,2,"say ""hi"""\n' > own.csv
check "trace --from-csv (own columns, quoted prompts)" sagesched -q trace --from-csv own.csv -o own.h5
"$PY" - <<'PYEOF'
import h5py, numpy as np
b = h5py.File("burst.h5", "r")["requests"]
z = h5py.File("azure.h5", "r")["requests"]
w = h5py.File("own.h5", "r")["requests"]
ok = (list(b["arrival"][:]) == [0, 1] and list(b["output_tokens"][:]) == [300, 20]
      and abs(z["arrival"][1] - 4.314579) < 1e-6 and list(z["prompt_tokens"][:]) == [374, 396]
      and [s.decode() for s in w["prompt"][:]] == ["hello, world", 'say "hi"'] and list(w["category"][:]) == [1, 2])
print(("ok   " if ok else "FAIL ") + "CSV rows: failures skipped, sorted from 0, datetimes, quoted text")
raise SystemExit(0 if ok else 1)
PYEOF
[ $? -eq 0 ] && pass "CSV imports read correctly" || fail "CSV imports read correctly"

# Profiles from TOML files.
printf '# calibrated\nkind = "linear"\nname = "mine"\nt0 = 0.002\ncp = 2e-5\nca = 1e-9\ncc = 3e-7\ncs = 1e-4\n' > lin.toml
check "simulate --profile FILE equals --iter-cost" sh -c 'sagesched -q simulate -i one.h5 --policy fcfs --profile lin.toml --max-batch 1 --max-tokens 64 --walk keyed -o toml.h5 && h5diff toml.h5 one_fcfs.h5 /per_request/finish /per_request/finish'
printf 'kind = "roofline"\nt0 = 0.001\npeak_flops = 989e12\nbandwidth = 4.8e12\nweight_bytes = 16.06e9\nflops_per_token = 16.06e9\nattn_flops = 524288\nkv_bytes_per_token = 131072\ncompute_efficiency = 0.5\nbandwidth_efficiency = 0.8\nmemory_bytes = 141e9\n' > roof.toml
check "a roofline TOML equal to the h200 preset gives the same run" sh -c 'sagesched -q simulate -i share.h5 --profile roof.toml -o r1.h5 && sagesched -q simulate -i share.h5 -o r2.h5 && h5diff r1.h5 r2.h5 /per_request/finish /per_request/finish'

# Figures.
check "plot TTLT CDFs" sagesched -q plot -i sim_fcfs.h5 sim_sagesched.h5 -o cdf.svg
check "plot mean TTLT against load" sh -c 'sagesched -q trace --requests 200 --load 1.0 --seed 2 -o share10.h5 && sagesched -q simulate -i share10.h5 --policy fcfs -o f10.h5 && sagesched -q simulate -i share10.h5 -o s10.h5 && sagesched -q simulate -i share.h5 --policy fcfs -o f08.h5 && sagesched -q plot --kind load -i f08.h5 f10.h5 s10.h5 -o load.svg'
check "the SVGs parse, one line per file or policy" "$PY" -c '
import xml.etree.ElementTree as ET
for name, lines in [("cdf.svg", 2), ("load.svg", 2)]:
    root = ET.parse(name).getroot()
    paths = [e for e in root.iter() if e.tag.endswith("polyline") or e.tag.endswith("path")]
    assert len(paths) >= lines, (name, len(paths))
'
expect_fail "plot --kind load needs the trace's load" 3 "burst_sim.h5.*trace_load" sh -c 'sagesched -q simulate -i burst.h5 -o burst_sim.h5 && sagesched plot --kind load -i burst_sim.h5 -o x.svg'

# calibrate: time nk-lm steps, fit the linear profile, simulate with it.
check "calibrate the shipped model (small grid)" sagesched -q calibrate -m "$NK_SOURCE/data/lm/causal.h5" --grid-batch 4 --repeats 1 --threads 1 -o cal.toml
check "the calibrated profile fits and drives a simulation" sh -c 'grep -q "^kind = \"linear\"" cal.toml && grep -q "^# fit: R^2" cal.toml && sagesched -q simulate -i share.h5 --profile cal.toml --kv-tokens 16384 -o calsim.h5'
check "the shipped cpu-nklm profile loads" sagesched -q simulate -i share.h5 --profile "$NK_SOURCE/data/sagesched/cpu-nklm.toml" -o shipsim.h5
check "shipped profiles by name: h200-probed is faster than the h200 preset it derates" sh -c 'sagesched -q simulate -i share.h5 --profile h200-probed -o probed.h5 && sagesched -q simulate -i share.h5 --profile cpu-nklm -o shipname.h5 && h5diff shipname.h5 shipsim.h5 /per_request/finish /per_request/finish && nk-data info probed.h5 --format tsv | grep -q "h200-llama3-8b-probed" && /usr/bin/python3 -c "
import h5py, sys
a, b = h5py.File(\"probed.h5\").attrs[\"mean_ttlt\"], h5py.File(\"r2.h5\").attrs[\"mean_ttlt\"]
sys.exit(0 if a < b else 1)"'

# Bad input.
"$PY" - <<'PYEOF'
import h5py, numpy as np, shutil
def variant(name, edit):
    shutil.copy("share.h5", name)
    with h5py.File(name, "r+") as f:
        edit(f["requests"])
def unsorted(r):
    a = r["arrival"][:]; a[7], a[8] = a[8] + 1, a[7]; r["arrival"][...] = a
def negative(r):
    a = r["arrival"][:]; a[0] = -1; r["arrival"][...] = a
def zero_out(r):
    o = r["output_tokens"][:]; o[3] = 0; r["output_tokens"][...] = o
def nan(r):
    a = r["arrival"][:]; a[5] = np.nan; r["arrival"][...] = a
def short(r):
    del r["prompt_tokens"]; r["prompt_tokens"] = np.ones(10, np.int64)
def huge(r):
    o = r["output_tokens"][:]; o[2] = 100000; r["output_tokens"][...] = o
variant("bad_unsorted.h5", unsorted); variant("bad_negative.h5", negative); variant("bad_zero.h5", zero_out)
variant("bad_nan.h5", nan); variant("bad_short.h5", short); variant("bad_huge.h5", huge)
with h5py.File("bad_pmf.h5", "w") as f:
    f["support"] = [[1.0, 2.0]]; f["prob"] = [[0.5, 0.4]]; f["attained"] = [0.0]
with h5py.File("bad_support.h5", "w") as f:
    f["support"] = [[2.0, 1.0]]; f["prob"] = [[0.5, 0.5]]; f["attained"] = [0.0]
PYEOF
expect_fail "unsorted arrivals name the index" 3 "/requests/arrival.*index 8" sagesched simulate -i bad_unsorted.h5 -o x.h5
expect_fail "negative arrival" 3 "/requests/arrival.*index 0 is negative" sagesched simulate -i bad_negative.h5 -o x.h5
expect_fail "output_tokens < 1" 3 "/requests/output_tokens.*index 3 is 0" sagesched simulate -i bad_zero.h5 -o x.h5
expect_fail "NaN arrival" 3 "/requests/arrival.*(NaN|not finite)" sagesched simulate -i bad_nan.h5 -o x.h5
expect_fail "lengths that disagree" 3 "/requests/prompt_tokens.*has 10 entries" sagesched simulate -i bad_short.h5 -o x.h5
expect_fail "a request larger than the cache" 3 "bad_huge.h5.*request 2 needs .* KV tokens" sagesched simulate -i bad_huge.h5 --kv-tokens 50000 -o x.h5
expect_fail "a pmf that does not sum to 1" 3 "/prob.*row 0 sums to" sagesched gittins -i bad_pmf.h5 -o x.h5
expect_fail "support not increasing" 3 "/support.*not increasing" sagesched gittins -i bad_support.h5 -o x.h5
printf 'kind = "linear"\nt0 = 0.001\ncp = 1e-5\n' > missing.toml
expect_fail "a profile missing a key" 3 "missing.toml.*key 'ca' missing" sagesched simulate -i share.h5 --profile missing.toml -o x.h5
expect_fail "an unknown preset" 2 "not a preset" sagesched simulate -i share.h5 --profile a100 -o x.h5
expect_fail "--swap without a swap cost" 2 "--swap needs" sagesched simulate -i share.h5 --iter-cost $LIN --swap -o x.h5
expect_fail "an unknown policy" 2 "--policy 'lifo'" sagesched simulate -i share.h5 --policy lifo -o x.h5
head -c 3000 share.h5 > truncated.h5
expect_fail "a truncated trace" 3 "truncated.h5" sagesched simulate -i truncated.h5 -o x.h5
expect_fail "empty stdin" 3 "standard input" sh -c 'sagesched simulate -i - -o x.h5 < /dev/null'
expect_fail "calibrate refuses a diffusion model" 3 "masked-diffusion" sagesched calibrate -m "$NK_SOURCE/data/lm/diffusion.h5" -o x.toml
printf 'arrival,prompt_tokens\n0,5\n' > nocol.csv
expect_fail "a CSV without an output column" 3 "nocol.csv.*header must name" sagesched trace --from-csv nocol.csv -o x.h5
check "no partial output after the failures" sh -c 'test ! -e x.h5 && test ! -e x.svg && test ! -e x.toml'
no_temp_files "no temp files left" .
finish
