# shred-unlearn.sh - tofu | finetune | select | run | eval on 10 authors: the
# file layout; selection and targets against numpy; 30 SHRED steps cut the
# gold probability at forget positions by >= 50% while retain prob falls <
# 10%; SHRED's result identical without the retain rows in the file; every
# baseline runs; eval's measures recomputed in numpy/scipy; JSON lines; bad
# input.
. "$(dirname "$0")/lib.sh"

SU="shred-unlearn -q"
BASE="$NK_SOURCE/data/lm/causal.h5"
# The sanitizer build (ASAN_OPTIONS set by `make sanitize`) is ~8x slower: the
# same checks on a model trained 4 epochs instead of 20, shorter runs; the
# checks that need a model that has learnt its facts are skipped there.
# Even that takes over 10 minutes there (nk-lm's training under ASan): the
# sanitizer build runs this tool's unit suite and fuzz recipes, and skips this
# script (exit 77, ctest's skip code).
if [ -n "${ASAN_OPTIONS:-}" ] && [ -z "${NK_CLI_FULL:-}" ]; then
  echo "skipped in the sanitizer build (set NK_CLI_FULL=1 to run it there)"
  exit 77
fi
if [ -n "${ASAN_OPTIONS:-}" ]; then
  LIGHT=1 FT="--epochs 4 --lr 2e-3 --replay-world 8 --replay-windows 0" STEPS=6 EVERY=3 SHORT=2 EVROWS="--max-rows 16 --ppl-docs 4"
else
  LIGHT=0 FT="--epochs 20 --lr 2e-3 --replay-world 32 --replay-windows 1" STEPS=30 EVERY=15 SHORT=4 EVROWS="--ppl-docs 16"
fi
export LIGHT STEPS EVERY SHORT
check "tofu: 20 authors x 4 questions" $SU tofu --authors 20 --questions 4 --world 24 --seed 3 -o t.h5
check "tofu: the same seed gives the same data" $SU tofu --authors 20 --questions 4 --world 24 --seed 3 -o t2.h5
check "finetune: the target model" $SU finetune -m "$BASE" -i t.h5 $FT --seed 1 -o target.h5
check "finetune: the retain model (without forget10)" $SU finetune -m "$BASE" -i t.h5 --epochs 30 --replay-world 48 --exclude forget10 --seed 1 -o retain.h5
check "eval: the retain model (the reference)" $SU eval -m retain.h5 -i t.h5 --split forget10 $EVROWS -o ev_retain.h5
check "eval: the target" $SU eval -m target.h5 -i t.h5 --split forget10 --reference ev_retain.h5 $EVROWS -o ev_target.h5
check "select: P = 20, K = 16" $SU select -m target.h5 -i t.h5 --split forget10 --percent 20 --topk 16 --skip-tokens 1 -o sel.h5
check "select: --demote zero" $SU select -m target.h5 -i t.h5 --split forget10 --percent 20 --topk 16 --demote zero -o sel_zero.h5
check "run: $STEPS SHRED steps" $SU run -m target.h5 -i t.h5 --split forget10 --method shred --steps $STEPS --batch 4 --lr 3e-5 --percent 10 --topk 16 --seed 2 \
  --eval-every $EVERY --curve curve.h5 --reference ev_retain.h5 $EVROWS -o shred.h5
check "select: P = 10 (the run's selection)" $SU select -m target.h5 -i t.h5 --split forget10 --percent 10 --topk 16 -o sel_run.h5
check "select on the unlearned model" $SU select -m shred.h5 -i t.h5 --split forget10 --percent 10 --topk 16 -o sel_after.h5
check "eval: the unlearned model" $SU eval -m shred.h5 -i t.h5 --split forget10 --reference ev_retain.h5 $EVROWS -o ev_shred.h5
for m in shred-all shred-random ga graddiff npo npo-retain kl-retain; do
  check "run: $m" $SU run -m target.h5 -i t.h5 --split forget10 --method $m --steps $SHORT --batch 4 --lr 1e-4 --seed 2 -o un_$m.h5
done

check "relearn: 20% of the forget rows" $SU relearn -m shred.h5 --target target.h5 -i t.h5 --split forget10 --fraction 0.25 --steps $SHORT -o relearn.h5
check "sequential: 2 requests of NPO + retain" $SU sequential -m target.h5 -i t.h5 --split forget10 --requests 2 --method npo-retain --steps 1 --batch 4 --max-rows 16 --ppl-docs 4 -o seq.h5
check "run: NPO with a curve" $SU run -m target.h5 -i t.h5 --split forget10 --method npo --steps $SHORT --batch 4 --eval-every 1 --curve curve_npo.h5 --reference ev_retain.h5 --max-rows 16 --ppl-docs 4 -o npo.h5
check "pareto: fronts, hypervolumes, SVG" $SU pareto curve.h5 curve_npo.h5 --target ev_target.h5 --retain ev_retain.h5 --plot pareto.svg -o pareto.h5
expect_fail "sequential: more requests than authors" 2 "requests 3 must be in 1..2" $SU sequential -m target.h5 -i t.h5 --split forget10 --requests 3 -o o.h5

# The same file without the retain authors' rows: SHRED must not notice.
"$PY" - <<'PYEOF'
import h5py, numpy as np
src = h5py.File("t.h5")
forget = src["/splits/forget10"][()]
hold = src["/splits/holdout"][()]
keep = np.concatenate([forget, hold])
keep.sort()
new_index = {int(r): i for i, r in enumerate(keep)}
authors = sorted(set(src["/qa/author"][()][keep].tolist()))
with h5py.File("t_noretain.h5", "w") as f:
    f["/authors/name"] = src["/authors/name"][()]
    f["/bios/text"] = src["/bios/text"][()]
    for k in ["question", "answer", "paraphrased_answer", "perturbed_answer", "author"]:
        f["/qa/" + k] = src["/qa/" + k][()][keep]
    for k in src["/world"]:
        f["/world/" + k] = src["/world/" + k][()]
    for s in src["/splits"]:
        rows = [new_index[int(r)] for r in src["/splits/" + s][()] if int(r) in new_index]
        f["/splits/" + s] = np.array(rows, dtype=np.int64)
PYEOF
check "run: SHRED on the file without retain rows" $SU run -m target.h5 -i t_noretain.h5 --split forget10 --method shred --steps $STEPS --batch 4 --lr 3e-5 --percent 10 --topk 16 --seed 2 -o shred_noretain.h5
check "graddiff --retain-weight 0: gradient ascent alone (was a 0/0 loss)" $SU run -m target.h5 -i t.h5 --split forget10 --method graddiff --retain-weight 0 --steps 1 --batch 2 -o rw0.h5
expect_fail "graddiff refuses a split that leaves no retain rows" 3 "t_noretain.h5.*/splits/forget10.*no retain rows" $SU run -m target.h5 -i t_noretain.h5 --split forget10 --method graddiff --steps 2 -o o.h5

"$PY" - <<'PYEOF'
import h5py, numpy as np, os, sys, json
from scipy.stats import ks_2samp
sys.path.insert(0, os.environ["NK_SOURCE"] + "/tests/cli")
from nk_check import report, finish

t = h5py.File("t.h5")
A = len(t["/authors/name"])
Q = len(t["/qa/question"])
report(t.attrs["nk_schema"] == "shred-unlearn.tofu/1" and A == 20 and Q == 80, "tofu: schema, 20 authors, 80 QA rows")
report(t["/qa/perturbed_answer"].shape == (80, 5) and t["/world/perturbed_answer"].shape == (24, 5), "tofu: perturbed answers [Q,5]")
author = t["/qa/author"][()]
sp = {k: set(t["/splits/" + k][()].tolist()) for k in t["/splits"]}
report(sp["forget01"] <= sp["forget05"] <= sp["forget10"] and not (sp["forget10"] & sp["holdout"]), "tofu: forget01 in forget05 in forget10; holdout apart")
whole = all(set(np.nonzero(np.isin(author, list({author[r] for r in rows})))[0].tolist()) == rows for rows in sp.values())
report(whole, "tofu: splits take whole authors")
para = [s.decode() for s in t["/qa/paraphrased_answer"][()]]
pert = [[s.decode() for s in row] for row in t["/qa/perturbed_answer"][()]]
ans = [s.decode() for s in t["/qa/answer"][()]]
names = [s.decode() for s in t["/authors/name"][()]]
form = all(all(p != para[i] and len(set(p.split()) & set(para[i].split())) >= 2 for p in pert[i]) and names[author[i]] in para[i] for i in range(Q))
report(form, "tofu: perturbed answers differ from the paraphrase but keep its form")
t2 = h5py.File("t2.h5")
report(all((t[k][()] == t2[k][()]).all() for k in ["/qa/answer", "/qa/perturbed_answer", "/world/answer", "/splits/forget10"]), "tofu: same seed, same data")

# Selection against numpy.
s = h5py.File("sel.h5")
tok, lp, mask, start = s["/tokens"][()], s["/logprob"][()], s["/forget_mask"][()], s["/answer_start"][()]
sup, supl, tgt = s["/support"][()], s["/support_logits"][()], s["/target"][()]
N, T, K = sup.shape
ok_mask, ok_tgt, ok_sup = True, True, True
for i in range(N):
    L = int((tok[i] >= 0).sum())
    cand = np.arange(start[i] + 1, L)  # --skip-tokens 1
    n = len(cand)
    count = max(1, int(np.floor(20 / 100 * n + 0.5)))
    order = cand[np.argsort(lp[i, cand], kind="stable")][:count]
    want = np.full(T, -1, np.int8)
    want[1:L] = 0
    want[order] = 1
    ok_mask &= bool((want == mask[i]).all())
    for t_ in range(1, L):
        g = np.nonzero(sup[i, t_] == tok[i, t_])[0]
        ok_sup &= len(g) == 1 and len(set(sup[i, t_].tolist())) == K
        z = supl[i, t_].astype(np.float64)
        if mask[i, t_] == 1:
            z = z.copy()
            others = np.delete(z, g[0])
            z[g[0]] = min(z[g[0]], others.min()) - 1.0
        q = np.exp(z - z.max()); q /= q.sum()
        ok_tgt &= bool(np.allclose(q, tgt[i, t_], atol=2e-6))
report(ok_mask, "select: forget mask = numpy's bottom-P (ties to the earlier position, skip 1)")
report(ok_sup, "select: every support holds the gold token once, K distinct ids")
report(ok_tgt, "select: targets = softmax of the (demoted) support logits")
report(bool(np.all(np.isnan(lp[:, 0]))) and bool(np.all(mask[:, 0] == -1)), "select: position 0 has no log-probability and mask -1")
sz = h5py.File("sel_zero.h5")
mz = sz["/forget_mask"][()]
gold_q = (sz["/target"][()] * (sz["/support"][()] == sz["/tokens"][()][:, :, None])).sum(2)
report(bool(np.all(gold_q[mz == 1] == 0)) and bool(np.all(gold_q[mz == 0] > 0)), "select --demote zero: gold gets 0 at forget positions only")

# The learning check of the issue.
run_sel = h5py.File("sel_run.h5")
rmask, rlp = run_sel["/forget_mask"][()], run_sel["/logprob"][()]
after = h5py.File("sel_after.h5")["/logprob"][()]
before_p, after_p = np.exp(rlp[rmask == 1]).mean(), np.exp(after[rmask == 1]).mean()
er, es = h5py.File("ev_target.h5"), h5py.File("ev_shred.h5")
r0, r1 = er["/eval/retain/prob"][()].mean(), es["/eval/retain/prob"][()].mean()
if os.environ["LIGHT"] == "0":
    report(after_p <= 0.5 * before_p, f"30 SHRED steps: gold prob at forget positions {before_p:.3f} -> {after_p:.3f} (cut >= 50%)")
    report(r1 >= 0.9 * r0, f"30 SHRED steps: retain prob {r0:.3f} -> {r1:.3f} (falls < 10%)")
else:
    report(after_p < before_p, f"{os.environ['STEPS']} SHRED steps (sanitizer build): gold prob at forget positions falls, {before_p:.3f} -> {after_p:.3f}")

# SHRED does not read retain rows.
a, b = h5py.File("shred.h5"), h5py.File("shred_noretain.h5")
report(all(np.array_equal(a["/params/" + k][()], b["/params/" + k][()]) for k in a["/params"]), "SHRED: the same weights with and without retain rows in the file")

# The curve.
c = h5py.File("curve.h5")
st, ev = int(os.environ["STEPS"]), int(os.environ["EVERY"])
report(list(c["/curve/step"][()]) == [0, ev, st] and c.attrs["method"] == "shred", f"run --eval-every {ev}: a curve at steps 0, {ev}, {st}")
report(abs(c["/curve/forget_quality"][-1] - es["/eval"].attrs["forget_quality"]) < 1e-9, "run's last curve point = eval's forget quality")

# eval's measures recomputed.
ref = h5py.File("ev_retain.h5")
for name, e in [("target", er), ("shred", es)]:
    f = e["/eval/forget"]
    tr = f["pert_prob"][()].mean(1) / f["para_prob"][()]
    report(np.allclose(tr, f["truth_ratio"][()], rtol=1e-9), f"{name}: truth ratio = mean perturbed prob / paraphrased prob")
    ks = ks_2samp(f["truth_ratio"][()], ref["/eval/forget/truth_ratio"][()])
    report(abs(e["/eval"].attrs["forget_quality"] - ks.pvalue) <= 1e-9 * max(1, ks.pvalue) and abs(e["/eval"].attrs["forget_ks_d"] - ks.statistic) < 1e-12,
           f"{name}: forget quality {e['/eval'].attrs['forget_quality']:.4g} = scipy ks_2samp {ks.pvalue:.4g}")
    def words(s):
        out, w = [], ""
        for ch in s:
            if ch.isascii() and ch.isalnum(): w += ch.lower()
            elif w: out.append(w); w = ""
        if w: out.append(w)
        return out
    def rouge(p, r):
        p, r = words(p), words(r)
        dp = [[0] * (len(p) + 1) for _ in range(len(r) + 1)]
        for i in range(1, len(r) + 1):
            for j in range(1, len(p) + 1):
                dp[i][j] = dp[i-1][j-1] + 1 if r[i-1] == p[j-1] else max(dp[i-1][j], dp[i][j-1])
        return dp[-1][-1] / len(r) if r else 0.0
    rows = f["rows"][()]
    rl = [rouge(f["prediction"][i].decode(), t["/qa/answer"][rows[i]].decode()) for i in range(len(rows))]
    report(np.allclose(rl, f["rouge_l"][()]), f"{name}: ROUGE-L recall from the predictions")
    h = e["/eval/holdout"]
    def auc(m, x):
        m, x = np.asarray(m)[:, None], np.asarray(x)[None, :]
        return ((m > x) + 0.5 * (m == x)).mean()
    report(abs(auc(-f["loss"][()], -h["loss"][()]) - e["/eval"].attrs["mia_auc_loss"]) < 1e-12 and
           abs(auc(f["mink"][()], h["mink"][()]) - e["/eval"].attrs["mia_auc_mink"]) < 1e-12, f"{name}: MIA AUCs (loss, Min-K%)")
    pl = (e["/eval"].attrs["mia_auc_mink"] - ref["/eval"].attrs["mia_auc_mink"]) / ref["/eval"].attrs["mia_auc_mink"]
    report(abs(pl - e["/eval"].attrs["privleak"]) < 1e-12, f"{name}: privleak {pl:.4f}")
    ret, w = e["/eval/retain"], e["/eval/world"]
    tscore = lambda g: np.maximum(0, 1 - g["truth_ratio"][()]).mean()
    wn = (w["prob"][()] / (w["prob"][()] + w["pert_prob"][()].sum(1))).mean()
    parts = [ret["prob"][()].mean(), tscore(ret), ret["rouge_l"][()].mean(), wn, tscore(w), w["rouge_l"][()].mean()]
    hm = 0 if min(parts) <= 0 else len(parts) / sum(1 / p for p in parts)
    report(abs(hm - e["/eval"].attrs["model_utility"]) < 1e-9, f"{name}: model utility {hm:.4f} = harmonic mean of 6 parts")
rl = h5py.File("relearn.h5")["/relearn"]
rt, rb, ra = (rl[k][()].mean() for k in ["rouge_target", "rouge_unlearned", "rouge_after"])
report(len(rl["rows_relearned"]) == 2 and len(rl["rows_held"]) == 6 and not set(rl["rows_relearned"][()]) & set(rl["rows_held"][()]),
       "relearn: 2 of the 8 forget rows relearned, 6 held, apart")
report(abs(rl.attrs["recovery"] - (ra - rb) / (rt - rb)) < 1e-12 if rt > rb else np.isnan(rl.attrs["recovery"]), f"relearn: recovery {rl.attrs['recovery']:.3f} = (after - unlearned) / (target - unlearned)")
sq = h5py.File("seq.h5")["/sequential"]
report(list(sq["request"][()]) == [0, 1, 2] and np.isnan(sq["forget_rouge_l_done"][0]), "sequential: a row before and after each request")
pa = h5py.File("pareto.h5")
pts = {m.decode(): [] for m in pa["/methods/name"][()]}
for m, x, y in zip(pa["/points/method"][()], pa["/points/log10_forget_quality"][()], pa["/points/model_utility"][()]):
    pts[m.decode()].append((x, y))
xref = np.log10(er["/eval"].attrs["forget_quality"])
def hv(p):
    p = sorted([q for q in p if q[0] > xref and q[1] > 0], key=lambda q: -q[0])
    area, top = 0.0, 0.0
    for x, y in p:
        if y > top: area += (x - xref) * (y - top); top = y
    return area
ok = all(abs(hv(pts[m.decode()]) - h) < 1e-12 for m, h in zip(pa["/methods/name"][()], pa["/methods/hypervolume"][()]))
report(ok and len(pts["shred"]) == 2 and len(pts["npo"]) == int(os.environ["SHORT"]), "pareto: the hypervolume of each method's checkpoints, recomputed")
report(open("pareto.svg").read().startswith("<svg") or "<svg" in open("pareto.svg").read()[:200], "pareto: an SVG")
report(os.environ["LIGHT"] == "1" or er["/eval/forget/rouge_l"][()].mean() >= 0.8, f"the target knows its forget set (ROUGE-L {er['/eval/forget/rouge_l'][()].mean():.3f})")
finish()
PYEOF

# JSON lines: a user's own forget set.
"$PY" - <<'PYEOF'
import json
rows = []
for a in range(3):
    for q in range(2):
        rows.append({"author": f"Author {a}", "question": f"What is fact {q} of author {a}?", "answer": f"Fact {q} is {a * 7 + q}.",
                     "perturbed_answer": [f"Fact {q} is {a * 7 + q + k}." for k in range(1, 6)], "split": ["forget", "holdout", "retain"][a]})
    rows.append({"author": f"Author {a}", "bio": f"Author {a} is a writer of facts."})
rows.append({"world": True, "question": "What is water?", "answer": "A liquid.", "perturbed_answer": ["A rock.", "A gas.", "A tree.", "A bird.", "A star."]})
open("own.jsonl", "w").write("\n".join(json.dumps(r) for r in rows) + "\n")
open("bad.jsonl", "w").write('{"author": "A", "question": "Q?", "answer": "A.", "split": "forget"}\n')
PYEOF
check "tofu --from-jsonl: a user's own forget set" $SU tofu --from-jsonl own.jsonl -o own.h5
check "eval on the user's file" $SU eval -m target.h5 -i own.h5 --split forget05 --ppl-docs 0 -o ev_own.h5
expect_fail "JSON lines without perturbed answers" 3 "bad.jsonl.*line 1.*perturbed_answer" $SU tofu --from-jsonl bad.jsonl -o o.h5

# Bad input.
"$PY" - <<'PYEOF'
import h5py, numpy as np, shutil
def variant(name, fn):
    shutil.copy("t.h5", name)
    with h5py.File(name, "a") as f:
        fn(f)
def set_split(f, name, rows):
    del f["/splits/" + name]
    f["/splits/" + name] = np.array(rows, dtype=np.int64)
variant("range.h5", lambda f: set_split(f, "forget05", list(f["/splits/forget05"][()][:-1]) + [999]))
variant("repeat.h5", lambda f: set_split(f, "forget05", list(f["/splits/forget05"][()]) + [int(f["/splits/forget05"][0])]))
variant("overlap.h5", lambda f: set_split(f, "forget05", list(f["/splits/forget05"][()]) + list(f["/splits/holdout"][()])))
def empty_answer(f):
    a = f["/qa/answer"][()]; a[0] = b""; del f["/qa/answer"]; f["/qa/answer"] = a
variant("empty.h5", empty_answer)
def long_answer(f):
    a = f["/qa/answer"][()]; a[f["/splits/forget05"][0]] = b"word " * 400; del f["/qa/answer"]; f["/qa/answer"] = a
variant("long.h5", long_answer)
variant("missing.h5", lambda f: f.__delitem__("/qa/paraphrased_answer"))
variant("shape.h5", lambda f: (f.__delitem__("/qa/perturbed_answer"), f.__setitem__("/qa/perturbed_answer", np.array([b"x"] * 50))))
shutil.copy("ev_retain.h5", "ev_nan.h5")
with h5py.File("ev_nan.h5", "a") as f:
    f["/eval/forget/truth_ratio"][1] = np.nan
data = open("t.h5", "rb").read()
open("trunc.h5", "wb").write(data[: len(data) // 2])
PYEOF
expect_fail "a split row out of range (split and index named)" 3 "range.h5.*/splits/forget05.*index.*999" $SU select -m target.h5 -i range.h5 --split forget05 -o o.h5
expect_fail "a split row repeated" 3 "repeat.h5.*/splits/forget05.*repeated" $SU select -m target.h5 -i repeat.h5 -o o.h5
expect_fail "forget and holdout overlapping" 3 "overlap.h5.*/splits/forget05.*holdout" $SU run -m target.h5 -i overlap.h5 -o o.h5
expect_fail "an empty answer" 3 "empty.h5.*/qa/answer.*row 0.*empty" $SU eval -m target.h5 -i empty.h5 -o o.h5
expect_fail "QA longer than the context" 3 "long.h5.*/qa/answer.*context" $SU select -m target.h5 -i long.h5 -o o.h5
expect_fail "a missing dataset" 3 "missing.h5.*/qa/paraphrased_answer" $SU eval -m target.h5 -i missing.h5 -o o.h5
expect_fail "perturbed answers of the wrong shape" 3 "shape.h5.*/qa/perturbed_answer.*80, 5" $SU eval -m target.h5 -i shape.h5 -o o.h5
expect_fail "a truncated file" 3 "trunc.h5" $SU eval -m target.h5 -i trunc.h5 -o o.h5
expect_fail "NaN in a reference" 3 "ev_nan.h5.*/eval/forget/truth_ratio" $SU eval -m target.h5 -i t.h5 --split forget10 --reference ev_nan.h5 -o o.h5
expect_fail "P outside (0, 100]" 3 "percent" $SU select -m target.h5 -i t.h5 --percent 0 -o o.h5
expect_fail "P = NaN (refused by the command line)" 2 "percent" $SU run -m target.h5 -i t.h5 --percent nan -o o.h5
expect_fail "K < 2" 3 "topk 1 must be in 2" $SU select -m target.h5 -i t.h5 --topk 1 -o o.h5
expect_fail "K above the vocabulary" 3 "topk 5000 must be in 2..2048" $SU select -m target.h5 -i t.h5 --topk 5000 -o o.h5
expect_fail "skip-tokens leaves nothing to select" 3 "instance 0.*skip-tokens" $SU select -m target.h5 -i t.h5 --skip-tokens 500 -o o.h5
expect_fail "a masked-diffusion checkpoint" 3 "diffusion.h5.*masked-diffusion" $SU select -m "$NK_SOURCE/data/lm/diffusion.h5" -i t.h5 -o o.h5
expect_fail "an unknown split" 3 "t.h5.*/splits/forget99" $SU select -m target.h5 -i t.h5 --split forget99 -o o.h5
expect_fail "an unknown demotion" 2 "demote" $SU select -m target.h5 -i t.h5 --demote lower -o o.h5
expect_fail "--eval-every without --curve" 2 "curve" $SU run -m target.h5 -i t.h5 --eval-every 2 -o o.h5
no_temp_files "no partial output left" .
[ ! -e o.h5 ] && pass "no o.h5 from any failed run" || fail "o.h5 exists after failures"
finish
