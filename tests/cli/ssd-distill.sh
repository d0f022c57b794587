# ssd-distill.sh - tasks (memo, update, skill, --from-jsonl, a user's h5py
# file) and divergence against numpy in float64 (identical rows, near-disjoint
# supports, logits of +-80; every loss and its gradient); bad input.
. "$(dirname "$0")/lib.sh"

SD="ssd-distill -q"
M="$NK_SOURCE/data/lm/causal.h5"
# The sanitizer build (ASAN_OPTIONS set by `make sanitize`) runs nk-lm about
# 10x slower: shorter training runs there, prepare without the replay stream
# (tokenising every fortune), and no learning check (2 x 60 steps: 5 minutes
# there); NK_CLI_FULL=1 runs everything. Even the light run took 192 s there,
# the second longest test of the sanitizer's ctest: by default the sanitizer
# build runs this tool's unit suite (rollouts batched and one at a time,
# speculative rounds, the losses) and fuzz recipes, and skips this script
# (exit 77, ctest's skip code); NK_CLI_LIGHT=1 runs the light version there.
if [ -n "${ASAN_OPTIONS:-}" ] && [ -z "${NK_CLI_FULL:-}" ] && [ -z "${NK_CLI_LIGHT:-}" ]; then
  echo "skipped in the sanitizer build (NK_CLI_LIGHT=1: a light run, NK_CLI_FULL=1: all of it)"
  exit 77
fi
if [ -n "${ASAN_OPTIONS:-}" ] && [ -z "${NK_CLI_FULL:-}" ]; then
  LIGHT=1 STEPS=4 EVERY=2 REPLAY=0
else
  LIGHT=0 STEPS=12 EVERY=6 REPLAY=1
fi
export LIGHT STEPS EVERY
check "tasks memo (3 documents)" $SD tasks --task memo --docs 3 --seed 2 -o memo.h5
check "tasks memo again: the same seed, the same file contents" $SD tasks --task memo --docs 3 --seed 2 -o memo2.h5
check "tasks update (3 documents)" $SD tasks --task update --docs 3 --seed 2 -o update.h5
check "tasks skill (3 documents) through a pipe" sh -c "$SD tasks --task skill --docs 3 --seed 2 -o - > skill.h5"
printf '%s\n' '{"doc": "The vault code is 4471.", "question": "What is the vault code?", "answer": "4471", "split": "train"}' \
  '{"doc": "The vault code is 4471.", "question": "Which code opens the vault?", "answer": "4471", "split": "test"}' \
  '{"doc": "Mira leads the choir.", "question": "Who leads the choir?", "answer": "Mira"}' > own.jsonl
check "tasks --from-jsonl" $SD tasks --from-jsonl own.jsonl -o own.h5

$PY - <<'EOF'
import h5py, numpy as np
f = h5py.File("l.h5", "w")
rng = np.random.default_rng(3)
s = rng.normal(0, 2, (6, 11)).astype("f4"); t = s.copy()
t[1:] = rng.normal(0, 2, (5, 11))
s[2] = -80; s[2, 0] = 80; t[2] = -80; t[2, 1] = 80          # near-disjoint supports
s[3] = np.where(np.arange(11) % 2, 80, -80); t[3] = np.where(np.arange(11) % 3, -80, 79)
f["student_logits"] = s; f["teacher_logits"] = t
g = h5py.File("user_tasks.h5", "w")                          # a user's file: no nk_schema
g["docs/text"] = np.array([b"Ola keeps bees."], dtype=object)
for sp in ["train", "test"]:
    g[f"{sp}/question"] = np.array([b"Who keeps bees?"], dtype=object)
    g[f"{sp}/answer"] = np.array([b"Ola"], dtype=object)
    g[f"{sp}/doc"] = np.array([0], dtype="i8")
EOF
for loss in fkl rkl jsd; do
  check "divergence --loss $loss (--tau 0.3)" $SD divergence -i l.h5 --tau 0.3 --loss $loss -o d_$loss.h5
done
check "eval closed-book on the test split, with --ppl" $SD eval -m "$NK_SOURCE/data/lm/causal.h5" -i memo.h5 --ppl --ppl-docs 8 -o ev_closed.h5
check "eval --open-book on the training split" $SD eval -m "$NK_SOURCE/data/lm/causal.h5" -i memo.h5 --split train --open-book --max-new 12 -o ev_open.h5
check "eval a user's h5py task file (no nk_schema)" $SD eval -m "$NK_SOURCE/data/lm/causal.h5" -i user_tasks.h5 --max-new 4 -o ev_user.h5
# rollout: every method; speculative ssd against token by token; tau 0 and ln 2 against the teacher's
# and the student's rollouts; the distributions against an independent torch forward of the export.
RO="$SD rollout -m $M -i memo.h5 --limit 4 --max-new 10 --seed 4"
for meth in off-sft off-fkl on-policy skd; do check "rollout --method $meth" $RO --method $meth -o ro_$meth.h5; done
check "rollout ssd token by token (--chunk 0, tau 0.005), with --dump-dists" $RO --tau 0.005 --chunk 0 --dump-dists -o ro_ssd0.h5
check "rollout ssd speculative (--chunk 3)" $RO --tau 0.005 --chunk 3 -o ro_ssd3.h5
check "rollout ssd --tau 0" $RO --tau 0 -o ro_t0.h5
check "rollout ssd --tau ln 2" $RO --tau 0.6931471805599453 -o ro_ln2.h5
check "nk-lm export of the model (the reference's weights)" nk-lm -q export -m "$M" -o hf
check "the route of a real model: nk-lm import of the export, eval with it and with the original" sh -c "nk-lm -q import hf -o imported.h5 && $SD eval -m imported.h5 -i memo.h5 --max-new 8 -o ev_imp.h5 && $SD eval -m $M -i memo.h5 --max-new 8 -o ev_orig.h5"
check "prepare: a tiny reader (1 warm-up document of each kind, 1 epoch)" $SD prepare -m "$M" --docs 1 --epochs 1 --batch 8 --replay-windows $REPLAY -o reader_t.h5
check "eval --open-book with the reader" $SD eval -m reader_t.h5 -i memo.h5 --open-book --max-new 8 -o ev_reader.h5
TR="$SD train -m $M -i memo.h5 --steps $STEPS --batch 3 --lr 3e-4 --eval-every $EVERY --max-new 8 --seed 2"
for meth in off-sft off-fkl on-policy skd ssd; do check "train --method $meth ($STEPS steps)" $TR --method $meth --tau 0.005 -o st_$meth.h5; done
check "train ssd --loss jsd --chunk 0" $TR --method ssd --tau 0.005 --loss jsd --chunk 0 -o st_jsd.h5
check "train on-policy --loss rkl" $TR --method on-policy --loss rkl -o st_rkl.h5
check "eval the trained student (an nk-lm checkpoint)" $SD eval -m st_ssd.h5 -i memo.h5 --max-new 8 -o ev_st.h5
# sweep: on-policy and ssd at two taus (3 runs), whole and as two shards merged by nk-data; report.
SW="$SD sweep -m $M -i memo.h5 --methods on-policy,ssd --taus 0.005,0.3 --steps 2 --batch 2 --eval-every 1 --max-new 6 --ppl-docs 4 --seed 3"
check "sweep: 3 runs, the table and the SVGs" sh -c "$SW -o sw.h5 --svg sw > sw.txt"
check "sweep --shard 0/2, then 1/2" sh -c "$SW --shard 0/2 -o sw0.h5 && $SW --shard 1/2 -o sw1.h5"
check "nk-data merge of the two shards" nk-data -q merge -o swm.h5 sw0.h5 sw1.h5
check "report of the merged shards (table, /report, SVGs)" sh -c "$SD report -i swm.h5 -o rep.h5 --svg swm > swm.txt"
# The learning check: the shipped reader (the default -m) on 2 memos, 60 steps of on-policy and ssd.
if [ "$LIGHT" = 0 ]; then
check "learning: tasks memo (2 documents)" $SD tasks --task memo --docs 2 --seed 3 -o learn.h5
check "learning: the reader closed-book and open-book on the training questions" sh -c "$SD eval -i learn.h5 --split train -o lb_closed.h5 && $SD eval -i learn.h5 --split train --open-book -o lb_open.h5"
for meth in on-policy ssd; do
  check "learning: train --method $meth, 60 steps" $SD train -i learn.h5 --method $meth --steps 60 --batch 8 --lr 3e-4 --eval-every 30 --seed 1 -o learn_$meth.h5
  check "learning: eval the $meth student closed-book" $SD eval -m learn_$meth.h5 -i learn.h5 --split train -o la_$meth.h5
done
else
  echo "skipped in the sanitizer build: the learning check (set NK_CLI_FULL=1 to run it there)"
fi
check "divergence --switch fkl --tau 0" $SD divergence -i l.h5 --switch fkl --tau 0 -o d_sw.h5
check "divergence --tau ln 2: the student everywhere" $SD divergence -i l.h5 --tau 0.6931471805599453 -o d_ln2.h5

M="$M" $PY - <<'EOF'
import os, sys, h5py, numpy as np
M = os.environ["M"]
sys.path.insert(0, __import__("os").environ["NK_SOURCE"] + "/tests/cli")
from nk_check import report, finish

def texts(f, d): return [x.decode() for x in f[d][()]]
m, m2 = h5py.File("memo.h5"), h5py.File("memo2.h5")
report(m.attrs["nk_schema"] == "ssd-distill.tasks/1" and m.attrs["task"] == "memo", "tasks: schema and task attribute")
report(texts(m, "/docs/text") == texts(m2, "/docs/text") and texts(m, "/train/question") == texts(m2, "/train/question"),
       "tasks: the same seed gives the same documents and questions")
for name, per_doc in [("memo", (14, 7)), ("update", (8, 4)), ("skill", (8, 3))]:
    f = h5py.File(f"{name}.h5")
    tq, sq = texts(f, "/train/question"), texts(f, "/test/question")
    report(len(texts(f, "/docs/text")) == 3 and len(tq) == 3 * per_doc[0] and len(sq) == 3 * per_doc[1]
           and f["/train/doc"].dtype == np.int64 and f["/test/doc"][()].max() == 2,
           f"{name}: 3 documents, {per_doc[0]} training and {per_doc[1]} test questions each")
    report(not set(tq) & set(sq), f"{name}: no test question is a training question")
o = h5py.File("own.h5")
report(texts(o, "/docs/text") == ["The vault code is 4471.", "Mira leads the choir."] and list(o["/train/doc"][()]) == [0, 1]
       and texts(o, "/test/answer") == ["4471"], "--from-jsonl: equal documents stored once; split train by default")

a, b = h5py.File("ev_imp.h5")["/eval"], h5py.File("ev_orig.h5")["/eval"]
report(texts(a, "prediction") == texts(b, "prediction") and a.attrs["accuracy"] == b.attrs["accuracy"],
       "an imported model (nk-lm import of the export) answers as the original does")
# sweep: the grid, the shards' merge equal to the whole, the report against a Python recomputation
w, mg = h5py.File("sw.h5"), h5py.File("swm.h5")
report([x.decode() for x in w["/runs/method"][()]] == ["on-policy", "ssd", "ssd"] and w["/runs/test_accuracy"].shape == (3, 3)
       and list(w["/runs/step"][0]) == [0, 1, 2], "sweep: 3 runs (on-policy, ssd at 2 taus), 3 evaluations each")
same = all(np.array_equal(w[f"/runs/{d}"][()], mg[f"/runs/{d}"][()], equal_nan=True) for d in
           ["tau", "seed", "supervised_tokens", "teacher_forward_tokens", "teacher_fraction", "test_accuracy", "train_loss", "ppl"])
report(same, "sweep: the merged shards equal the whole sweep (tokens, accuracies, losses, perplexities)")
r = h5py.File("rep.h5")
acc, sup = mg["/runs/test_accuracy"][()], mg["/runs/supervised_tokens"][()]
plateau = acc[:, -3:].mean(1)
target = plateau[0] - 0.01
def reach(i):
    if not target > mg["/runs"].attrs["base_accuracy"]: return np.nan
    hit = np.nonzero(acc[i] >= target)[0]
    return sup[i, hit[0]] if len(hit) else np.nan
tok = np.array([reach(i) for i in range(3)])
sav = 1 - tok / tok[0]
ok = (np.allclose(r["/report/plateau"][()], plateau) and np.allclose(r["/report/tokens_to_target"][()], tok, equal_nan=True)
      and np.allclose(r["/report/savings"][()], sav, equal_nan=True)
      and np.allclose(r["/report/teacher_fraction_last"][()], mg["/runs/teacher_fraction"][:, -1], equal_nan=True)
      and np.allclose(r["/report/ppl_change"][()], mg["/runs/ppl"][()] - mg["/runs"].attrs["base_ppl"]))
report(ok, "report: plateau, tokens to on-policy's plateau - 1 point, savings, teacher fraction, perplexity change as recomputed")
t1, t2 = open("sw.txt").read().splitlines(), open("swm.txt").read().splitlines()
report(len(t1) == 5 and [l.split("\t")[:-1] for l in t1] == [l.split("\t")[:-1] for l in t2],
       "report: the merged shards' table equals the whole sweep's (but seconds per step)")
import xml.dom.minidom
for f in ["sw-accuracy.svg", "sw-teacher.svg", "swm-accuracy.svg"]:
    report(xml.dom.minidom.parse(f).documentElement.tagName == "svg", f"{f}: an SVG document")

# divergence against numpy in float64
l = h5py.File("l.h5")
s, t = l["student_logits"][()].astype(np.float64), l["teacher_logits"][()].astype(np.float64)
def logsm(x): x = x - x.max(1, keepdims=True); return x - np.log(np.exp(x).sum(1, keepdims=True))
ls, lt = logsm(s), logsm(t); ps, pt = np.exp(ls), np.exp(lt)
fkl = (pt * (lt - ls)).sum(1); rkl = (ps * (ls - lt)).sum(1)
pm = (ps + pt) / 2; lm = np.log(np.maximum(pm, 1e-300))
def kl(p, lp): return np.where(p > 0, p * (lp - lm), 0).sum(1)
jsd = 0.5 * kl(pt, lt) + 0.5 * kl(ps, ls)
# gradients with respect to the student's logits
g_fkl = ps - pt
g_rkl = ps * ((ls - lt) - rkl[:, None])
a = np.where(ps > 0, ps * (ls - lm), 0)                     # d jsd / d z_s = 0.5 * (p_s (log p_s - log m) - p_s sum(...))
g_jsd = 0.5 * (a - ps * a.sum(1, keepdims=True))
ref = {"fkl": (fkl, g_fkl), "rkl": (rkl, g_rkl), "jsd": (jsd, g_jsd)}
for name, (lv, gv) in ref.items():
    d = h5py.File(f"d_{name}.h5")
    el = np.abs(d["loss"][()] - lv).max(); eg = np.abs(d["grad"][()] - gv).max()
    report(el < 1e-6 and eg < 1e-6, f"divergence --loss {name}: loss within {el:.1e}, gradient within {eg:.1e} of numpy float64")
d = h5py.File("d_fkl.h5")
report(np.abs(d["delta"][()] - jsd).max() < 1e-9 and list(d["writer"][()]) == list((jsd > 0.3).astype(int))
       and d.attrs["teacher_positions"] == int((jsd > 0.3).sum()),
       f"switch jsd: delta = numpy's JSD, the teacher where delta > 0.3 ({int((jsd > 0.3).sum())} of 6)")
report(abs(d["delta"][2] - np.log(2)) < 1e-9 and abs(d["delta"][0]) < 1e-12 and abs(d["loss"][0]) < 1e-12,
       "identical rows give 0; near-disjoint supports give ln 2")
sw = h5py.File("d_sw.h5")
report(np.abs(sw["delta"][()] - fkl).max() < 1e-6 * max(1, fkl.max()) and list(sw["writer"][()]) == list((fkl > 0).astype(int)),
       "--switch fkl --tau 0: KL(teacher || student), the teacher wherever the two differ")
report(h5py.File("d_ln2.h5")["writer"][()].sum() == 0, "--tau ln 2 with JSD: the student writes every position")

# eval: the scores recomputed from the predictions (lower case, non-alphanumerics as separators)
import re
from collections import Counter
def words(x): return re.sub(r"[^a-z0-9]", " ", x.lower()).split()
def f1(p, g):
    p, g = words(p), words(g)
    if not p and not g: return 1.0
    c = sum((Counter(p) & Counter(g)).values())
    return 0.0 if c == 0 else 2 * (c / len(p)) * (c / len(g)) / (c / len(p) + c / len(g))
for name, split in [("ev_closed", "test"), ("ev_open", "train")]:
    e = h5py.File(f"{name}.h5")["/eval"]
    pred, gold = texts(e, "prediction"), texts(m, f"/{split}/answer")
    ex = [words(p) == words(g) for p, g in zip(pred, gold)]
    fs = [f1(p, g) for p, g in zip(pred, gold)]
    cor = [x if len(words(g)) <= 3 else f >= 0.5 for x, f, g in zip(ex, fs, gold)]
    ok = (len(pred) == len(gold) and list(e["exact"][()]) == [int(x) for x in ex] and np.allclose(e["f1"][()], fs)
          and list(e["correct"][()]) == [int(x) for x in cor] and abs(e.attrs["accuracy"] - np.mean(cor)) < 1e-12
          and all("\n" not in p for p in pred))
    report(ok, f"eval {split} ({'open' if name == 'ev_open' else 'closed'}-book): exact, f1, correct and accuracy "
               f"({e.attrs['accuracy']:.3f}) recomputed in Python from the {len(pred)} predictions")
# rollouts
R = {n: h5py.File(f"ro_{n}.h5") for n in ["off-sft", "off-fkl", "on-policy", "skd", "ssd0", "ssd3", "t0", "ln2"]}
def rows(f): return [list(r[:n]) for r, n in zip(f["/rollouts/tokens"][()], f["/rollouts/length"][()])]
ok = True
for n, f in R.items():
    tok, wr, ln = f["/rollouts/tokens"][()], f["/rollouts/writer"][()], f["/rollouts/length"][()]
    pad = np.arange(10)[None, :] >= ln[:, None]
    ok &= tok.shape == (4, 10) and bool((tok[pad] == -1).all() and (wr[pad] == -1).all() and np.isnan(f["/rollouts/delta"][()][pad]).all())
    ok &= f.attrs["supervised_tokens"] == ln.sum() and f.attrs["teacher_tokens"] == (wr == 1).sum()
    so, to = f["/rollouts/student_prefix_offsets"][()], f["/rollouts/teacher_prefix_offsets"][()]
    ok &= len(so) == 5 and len(to) == 5 and so[-1] == len(f["/rollouts/student_prefix"]) and bool(((to[1:] - to[:-1]) > (so[1:] - so[:-1])).all())
report(ok, "rollout files: padding -1 / NaN after each length, CSR prompts (the teacher's longer: the document), counts add up")
report(all((R[n]["/rollouts/writer"][()] == 1).sum() == R[n].attrs["supervised_tokens"] for n in ["off-sft", "off-fkl"])
       and (R["on-policy"]["/rollouts/writer"][()] == 1).sum() == 0, "off-policy: the teacher writes every token; on-policy: none")
a, b = R["ssd0"], R["ssd3"]
mix = (a["/rollouts/writer"][()] == 1).sum()
report(rows(a) == rows(b) and (a["/rollouts/writer"][()] == b["/rollouts/writer"][()]).all() and 0 < mix < a.attrs["supervised_tokens"]
       and b.attrs["teacher_forward_tokens"] >= a.attrs["teacher_forward_tokens"],
       f"speculative ssd (chunk 3) gives the token-by-token rollouts exactly (the teacher wrote {mix} of {a.attrs['supervised_tokens']}); "
       f"teacher forward tokens {a.attrs['teacher_forward_tokens']} -> {b.attrs['teacher_forward_tokens']} with dropped drafts")
report(rows(R["t0"]) == rows(R["off-fkl"]) and rows(R["ln2"]) == rows(R["on-policy"]),
       "tau 0 is the teacher's rollout, tau ln 2 the student's (same draws)")
wr, de = a["/rollouts/writer"][()], a["/rollouts/delta"][()]
report(bool(((wr == 1) == (de > 0.005))[wr >= 0].all()), "ssd: the teacher wrote exactly where delta > tau")
# an independent forward (tests/unit/lm_reference.py, torch float64) over the exported safetensors
import json, struct, torch
sys.path.insert(0, __import__("os").environ["NK_SOURCE"] + "/tests/unit")
from lm_reference import forward
raw = open("hf/model.safetensors", "rb").read(); hn = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + hn]); data = raw[8 + hn:]
P = {k: torch.tensor(np.frombuffer(data[v["data_offsets"][0]:v["data_offsets"][1]], "<f4").reshape(v["shape"]).astype(np.float64))
     for k, v in header.items() if k != "__metadata__"}
hc = json.load(open("hf/config.json"))
cfg = dict(d_model=hc["hidden_size"], n_heads=hc["num_attention_heads"], n_kv_heads=hc["num_key_value_heads"],
           head_dim=hc["hidden_size"] // hc["num_attention_heads"], norm_eps=hc["rms_norm_eps"], rope_theta=hc["rope_theta"],
           n_layers=hc["num_hidden_layers"], tied_head=int(hc.get("tie_word_embeddings", True)), causal=1)
worst = 0.0
for r in range(2):
    n = int(a["/rollouts/length"][r]); y = list(a["/rollouts/tokens"][r][:n])
    for which in ["student", "teacher"]:
        off = a[f"/rollouts/{which}_prefix_offsets"][()]
        seq = list(a[f"/rollouts/{which}_prefix"][off[r]:off[r + 1]]) + y
        with torch.no_grad():
            lg = forward(P, cfg, torch.tensor(np.array(seq, dtype=np.int64)), np.array([0, len(seq)])).log_softmax(-1).numpy()
        ref = lg[len(seq) - n - 1:len(seq) - 1]
        got = a[f"/rollouts/{which}_logprobs"][r, :n]
        worst = max(worst, float(np.abs(got - ref).max()))
report(worst < 5e-3, f"--dump-dists: both models' log-probabilities equal a torch float64 forward of the exported weights (within {worst:.1e})")
# train
ok = True
for meth in ["off-sft", "off-fkl", "on-policy", "skd", "ssd"]:
    c = h5py.File(f"st_{meth}.h5")["/curve"]
    S, E = int(os.environ["STEPS"]), int(os.environ["EVERY"])
    ok &= list(c["step"][()]) == [0, E, S] and c.attrs["supervised_tokens"] == c["supervised_tokens"][-1] > 0
    ok &= bool((np.diff(c["supervised_tokens"][()]) > 0).all() and (np.diff(c["teacher_forward_tokens"][()]) > 0).all())
    ok &= c["wall_s"][-1] > 0 and np.isfinite(c["train_loss"][1:]).all() and ((c["test_accuracy"][()] >= 0) & (c["test_accuracy"][()] <= 1)).all()
    frac = c["teacher_fraction"][1:]
    ok &= (frac == 1).all() if meth.startswith("off") else (frac == 0).all() if meth == "on-policy" else ((frac > 0) & (frac < 1)).all()
report(ok, f"train: /curve at steps 0, {E}, {S}; cumulative tokens grow; the teacher writes all (off), none (on-policy), a share (skd, ssd)")
c = h5py.File("st_rkl.h5")["/curve"]
report(c.attrs["loss"] == "rkl" and np.isfinite(c["train_loss"][1:]).all(), "train --loss rkl: a finite loss in the curve")
if os.environ["LIGHT"] == "0":
    acc = lambda f: h5py.File(f)["/eval"].attrs["accuracy"]
    base, ceiling = acc("lb_closed.h5"), acc("lb_open.h5")
    for meth in ["on-policy", "ssd"]:
        report(acc(f"la_{meth}.h5") > base, f"learning: {meth} raises closed-book training accuracy above the base's "
               f"({base:.3f} -> {acc(f'la_{meth}.h5'):.3f}; the teacher open-book {ceiling:.3f})")
    fr = h5py.File("learn_ssd.h5")["/curve"]["teacher_fraction"][()]
    report(fr[1] > fr[2] > 0, f"learning: ssd's teacher fraction falls as the student learns ({fr[1]:.3f} -> {fr[2]:.3f})")
rd = h5py.File("reader_t.h5")
report(rd.attrs["nk_schema"] == "nk-lm.model/1" and rd.attrs["weights"] == "bfloat16" and "prepare" in rd.attrs["nk_command"]
       and not np.array_equal(rd["/params/model.norm.weight"][()], h5py.File(M)["/params/model.norm.weight"][()]),
       "prepare writes a bfloat16 nk-lm checkpoint whose weights moved from the base")
report(h5py.File("st_ssd.h5").attrs["nk_schema"] == "nk-lm.model/1" and h5py.File("ev_st.h5")["/eval"].attrs["model"] == "st_ssd.h5",
       "train writes an nk-lm checkpoint that eval reads")
ec = h5py.File("ev_closed.h5")["/eval"]
report(np.isfinite(ec.attrs["ppl_general"]) and 1 < ec.attrs["ppl_general"] < 2048 and ec.attrs["open_book"] == 0,
       f"eval --ppl: a finite perplexity on held-out fortunes ({ec.attrs['ppl_general']:.1f})")
finish()
EOF
[ $? -eq 0 ] || fail "the numpy checks above"

# Bad input: one line naming file and dataset, exit 3; nothing written.
check "a user's h5py task file (no nk_schema) is read" $SD tasks --from-jsonl own.jsonl -o own_again.h5
$PY - <<'EOF'
import h5py, numpy as np, shutil
for name, edit in [("bad_doc", lambda f: f["/train/doc"].__setitem__(0, 9)),
                   ("no_test", lambda f: f.__delitem__("/test/answer")),
                   ("empty_q", lambda f: f["/train/question"].__setitem__(0, b" "))]:
    shutil.copy("memo.h5", f"{name}.h5")
    with h5py.File(f"{name}.h5", "r+") as f: edit(f)
with h5py.File("shape.h5", "w") as f:
    f["student_logits"] = np.zeros((3, 5), "f4"); f["teacher_logits"] = np.zeros((3, 6), "f4")
with h5py.File("nan.h5", "w") as f:
    s = np.zeros((3, 5), "f4"); s[1, 2] = np.nan
    f["student_logits"] = s; f["teacher_logits"] = np.zeros((3, 5), "f4")
with h5py.File("missing.h5", "w") as f:
    f["student_logits"] = np.zeros((3, 5), "f4")
EOF
expect_fail "eval: a /train/doc index outside /docs/text" 3 "bad_doc.h5.*/train/doc.*index 0" $SD eval -m "$M" -i bad_doc.h5 -o x.h5
expect_fail "eval: a missing dataset" 3 "no_test.h5.*/test/answer" $SD eval -m "$M" -i no_test.h5 -o x.h5
expect_fail "eval: an empty question" 3 "empty_q.h5.*/train/question.*index 0" $SD eval -m "$M" -i empty_q.h5 -o x.h5
expect_fail "eval: a masked-diffusion checkpoint" 3 "diffusion.h5.*masked-diffusion" $SD eval -m "$NK_SOURCE/data/lm/diffusion.h5" -i memo.h5 -o x.h5
$PY -c "
import json
print(json.dumps({'doc': 'word ' * 400, 'question': 'Which word?', 'answer': 'word'}))" > long.jsonl
check "tasks --from-jsonl: a long document" $SD tasks --from-jsonl long.jsonl -o long.h5
expect_fail "eval --open-book: document + question over the context" 3 "long.h5.*/train/question.*row 0.*context" $SD eval -m "$M" -i long.h5 --split train --open-book -o x.h5
expect_fail "rollout: --skd-topk above the vocabulary" 3 "causal.h5.*skd-topk" $SD rollout -m "$M" -i memo.h5 --limit 1 --method skd --skd-topk 5000 -o x.h5
expect_fail "rollout --open-book prompt over the context" 3 "long.h5.*/train/question.*row 0" $SD rollout -m "$M" -i long.h5 --limit 1 -o x.h5
expect_fail "train: a /train/doc index outside /docs/text" 3 "bad_doc.h5.*/train/doc.*index 0" $SD train -m "$M" -i bad_doc.h5 --steps 1 -o x.h5
expect_fail "train: document + question over the context" 3 "long.h5.*/train/question.*row 0" $SD train -m "$M" -i long.h5 --steps 1 -o x.h5
expect_fail "prepare: a masked-diffusion checkpoint" 3 "diffusion.h5.*masked-diffusion" $SD prepare -m "$NK_SOURCE/data/lm/diffusion.h5" --docs 1 --epochs 1 -o x.h5
expect_fail "train: a masked-diffusion checkpoint" 3 "diffusion.h5.*masked-diffusion" $SD train -m "$NK_SOURCE/data/lm/diffusion.h5" -i memo.h5 --steps 1 -o x.h5
$PY -c "
import h5py, shutil
shutil.copy('sw.h5', 'sw_bad.h5')
with h5py.File('sw_bad.h5', 'r+') as f: del f['/runs/wall_s']; f['/runs/wall_s'] = [1.0, 2.0]" && pass "a sweep file with a bad /runs/wall_s" || fail "h5py edit"
expect_fail "report: a curve dataset of the wrong shape" 3 "sw_bad.h5.*/runs/wall_s" $SD report -i sw_bad.h5
expect_fail "report: not a sweep file" 3 "memo.h5" $SD report -i memo.h5
expect_fail "divergence: logits of different shapes" 3 "shape.h5.*/teacher_logits" $SD divergence -i shape.h5 -o x.h5
expect_fail "divergence: NaN in the student's logits" 3 "nan.h5.*/student_logits" $SD divergence -i nan.h5 -o x.h5
expect_fail "divergence: a missing dataset" 3 "missing.h5.*/teacher_logits" $SD divergence -i missing.h5 -o x.h5
expect_fail "divergence: a negative --tau" 2 "tau" $SD divergence -i l.h5 --tau -0.1 -o x.h5
printf '{"doc": "x", "question": "q?"}\n' > bad.jsonl
expect_fail "tasks --from-jsonl: a line without an answer" 3 "bad.jsonl.*line 1.*answer" $SD tasks --from-jsonl bad.jsonl -o x.h5
printf '{"doc": "x", "question": "q?", "answer": "a", "split": "dev"}\n' > bad2.jsonl
expect_fail "tasks --from-jsonl: an unknown split" 3 "bad2.jsonl.*split" $SD tasks --from-jsonl bad2.jsonl -o x.h5
[ ! -e x.h5 ] && pass "no output after a failure" || fail "a failed run left x.h5"
finish
