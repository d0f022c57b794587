# sagesched.testbed.sh - the testbed serves traces for real on the shipped
# nk-lm: with every request there at time 0 its iterations equal the
# simulator's one for one (the same scheduler, the real paged KV cache
# agreeing with the simulated one under pressure and preemption); a timed
# trace keeps the invariants; calibrate --from fits its iterations; the GPU
# probe (or its refusal without a GPU); bad input.
. "$(dirname "$0")/lib.sh"

LIN=linear:0.002,2e-5,1e-9,3e-7,1e-4
MODEL="$NK_SOURCE/data/lm/causal.h5"
# 40 requests, all at time 0: the schedule no longer depends on durations.
"$PY" - <<'PYEOF'
import random
random.seed(7)
with open("burst0.csv", "w") as f:
    f.write("arrival,prompt_tokens,output_tokens,prompt\n")
    for i in range(40):
        p = random.randint(1, 60); o = random.randint(1, 100)
        f.write(f'0,{p},{o},"request {i} about the weather, in detail with examples"\n')
PYEOF
check "trace --from-csv, every arrival at 0" sagesched -q trace --from-csv burst0.csv -o burst0.h5
for p in fcfs sagesched srpt-oracle; do
  check "testbed --policy $p under KV pressure" sagesched -q testbed -i burst0.h5 --policy $p -m "$MODEL" --iter-cost $LIN --kv-tokens 512 --max-batch 8 --max-tokens 128 --threads 1 -o "bed_$p.h5"
  check "simulate --policy $p, same server" sagesched -q simulate -i burst0.h5 --policy $p --iter-cost $LIN --kv-tokens 512 --max-batch 8 --max-tokens 128 -o "sim_$p.h5"
done
check "trace for the timed run (Debian prompts, the model's context)" sagesched -q trace --requests 40 --mix sharegpt --prompts debian --max-context 256 --load 0.7 --profile "$NK_SOURCE/data/sagesched/cpu-nklm.toml" --seed 4 -o timed.h5
check "testbed on the timed trace (time scale 0.2)" sagesched -q testbed -i timed.h5 --policy sagesched --time-scale 0.2 --threads 1 -o timed_bed.h5
check "calibrate --from the measured run" sagesched -q calibrate --from timed_bed.h5 -o fitted.toml
check "the fitted profile drives a simulation" sagesched -q simulate -i timed.h5 --profile fitted.toml -o timed_sim.h5

"$PY" - <<'PYEOF'
import h5py, numpy as np
ok = True
def need(cond, what):
    global ok
    print(("ok   " if cond else "FAIL ") + what)
    ok = ok and bool(cond)
cols = ["batch", "prefill_tokens", "context_tokens", "emitted", "kv_used", "attn_work"]
for p in ["fcfs", "sagesched", "srpt-oracle"]:
    b, s = h5py.File(f"bed_{p}.h5", "r"), h5py.File(f"sim_{p}.h5", "r")
    need(b.attrs["nk_schema"] == s.attrs["nk_schema"] == "sagesched.sim/1" and b.attrs["measured"] == 1, f"{p}: simulate's schema, marked measured")
    need(sorted(b["iterations"].keys()) == sorted(s["iterations"].keys()) and sorted(b["per_request"].keys()) == sorted(s["per_request"].keys()), f"{p}: the same datasets")
    same = all(np.array_equal(b["iterations"][c][:], s["iterations"][c][:]) for c in cols)
    need(same, f"{p}: every iteration's batch, prefill, context, emitted tokens and KV equal the simulator's ({len(b['iterations/batch'])} iterations)")
    need(np.array_equal(b["per_request/preemptions"][:], s["per_request/preemptions"][:]), f"{p}: the same preemptions per request")
    f, ft = b["per_request/finish"][:], b["per_request/first_token"][:]
    need(np.array_equal(np.argsort(f, kind="stable"), np.argsort(s["per_request/finish"][:], kind="stable")), f"{p}: requests finish in the simulator's order")
    need(np.all(ft > 0) and np.all(f >= ft), f"{p}: measured times positive, finish >= first token")
need(h5py.File("bed_fcfs.h5", "r")["per_request/preemptions"][:].sum() > 0, "the KV pressure preempts (recompute on the real cache)")
t = h5py.File("timed.h5", "r")["requests"]
a, o, p = t["arrival"][:], t["output_tokens"][:], t["prompt_tokens"][:]
need(np.all(p + o <= 256) and h5py.File("timed.h5", "r").attrs["max_context"] == 256, "--max-context: prompt + output <= 256")
b = h5py.File("timed_bed.h5", "r")
it = b["iterations"]
st, du = it["start"][:], it["duration"][:]
need(it["emitted"][:].sum() == o.sum(), "timed run: every output token emitted once")
need(np.all(st[1:] >= st[:-1] + du[:-1] - 1e-9) and np.all(du > 0), "timed run: iterations in order, never overlapping")
need(it["kv_used"][:].max() <= b.attrs["kv_tokens"], "timed run: KV within capacity")
r = b["per_request"]
need(np.all(r["first_token"][:] >= 0.2 * a) and np.allclose(r["ttlt"][:], r["finish"][:] - 0.2 * a), "timed run: times in wall seconds from the scaled arrivals")
need(b.attrs["time_scale"] == 0.2 and b.attrs["threads"] == 1 and "causal.h5" in b.attrs["model"], "timed run: provenance attributes")
txt = open("fitted.toml").read()
need("iterations measured by" in txt and "kind = \"linear\"" in txt, "calibrate --from names the run it fitted")
raise SystemExit(0 if ok else 1)
PYEOF
[ $? -eq 0 ] && pass "testbed checked in Python" || fail "testbed checked in Python"

# Bad input.
"$PY" - <<'PYEOF'
import h5py, shutil
shutil.copy("timed.h5", "too_long.h5")
with h5py.File("too_long.h5", "r+") as f:
    o = f["requests/output_tokens"][:]; o[5] = 300; f["requests/output_tokens"][...] = o
shutil.copy("timed.h5", "no_prompt.h5")
with h5py.File("no_prompt.h5", "r+") as f:
    p = f["requests/prompt_tokens"][:]; p[2] = 0; f["requests/prompt_tokens"][...] = p
PYEOF
expect_fail "prompt + output beyond the context" 3 "too_long.h5.*/requests/output_tokens.*request 5.*context of 256" sagesched testbed -i too_long.h5 -o x.h5
expect_fail "a request without a prompt token" 3 "no_prompt.h5.*/requests/prompt_tokens.*index 2 is 0" sagesched testbed -i no_prompt.h5 -o x.h5
expect_fail "testbed has no --swap (recompute only)" 2 "--swap" sagesched testbed -i timed.h5 --swap -o x.h5
expect_fail "testbed refuses a diffusion model" 3 "masked-diffusion" sagesched testbed -i timed.h5 -m "$NK_SOURCE/data/lm/diffusion.h5" -o x.h5
expect_fail "calibrate --from a simulation" 3 "timed_sim.h5.*not a testbed run" sagesched calibrate --from timed_sim.h5 -o x.toml
expect_fail "calibrate --from and --model" 2 "give one" sagesched calibrate --from timed_bed.h5 -m "$MODEL" -o x.toml
head -c 2000 timed_bed.h5 > truncated_bed.h5
expect_fail "calibrate --from a truncated run" 3 "truncated_bed.h5" sagesched calibrate --from truncated_bed.h5 -o x.toml
# The GPU probe: a roofline with measured derating where a GPU is, else exit 1 and nothing written.
if nvidia-smi -L >/dev/null 2>&1; then
  check "probe the GPU (3 s)" sagesched -q probe --seconds 3 -o probed.toml
  check "the probed roofline drives a simulation" sh -c 'grep -q "^kind = \"roofline\"" probed.toml && grep -q "^# sagesched probe on" probed.toml && sagesched -q simulate -i burst0.h5 --profile probed.toml -o probed.h5'
else
  expect_fail "probe without a GPU" 1 "sagesched probe.*--device cuda: " sagesched probe --seconds 1 -o x.toml
fi
check "no partial output after the failures" sh -c 'test ! -e x.h5 && test ! -e x.toml'
no_temp_files "no temp files left" .
finish
