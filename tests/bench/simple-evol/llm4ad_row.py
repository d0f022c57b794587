#!/usr/bin/env python3
"""The faithfulness row: llm4ad's own EoH and FunSearch (PyPI llm4ad 1.11,
unmodified) on TSP, driven by simple-evol's surrogates and scored by
simple-evol's evaluator, beside simple-evol's own EoH and FunSearch from the
ICE sweep on the same data and rungs.

Run in the venv of llm4ad_venv.sh:
  build/bench-venv-llm4ad/bin/python tests/bench/simple-evol/llm4ad_row.py \
      --bin build/bin --sweep build/bench/simple-evol/sweep --exam build/bench/simple-evol/exam.h5

The glue is what any user writes to plug a model into llm4ad, plus two
accommodations for the surrogates (said in README):
- prompts: llm4ad shows programs as bare functions; the glue puts each
  top-level def in a ```python fence, as the surrogates read programs only
  there;
- replies: the surrogates write their weights as module constants, while
  llm4ad keeps only the function's body; the glue moves the constants into
  the body (the same program) and puts the description in braces, llm4ad's
  format.
Scores: llm4ad maximises, so a program scores minus its mean training
objective (None when any instance fails: llm4ad's invalid).
"""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np
from llm4ad.base import LLM, Evaluation
from llm4ad.method.eoh import EoH
from llm4ad.method.funsearch import FunSearch
from llm4ad.task.optimization.tsp_construct.template import task_description
from llm4ad.tools.profiler import ProfilerBase

def fence_functions(prompt):
    """Each top-level def block outside a fence, fenced."""
    out, block, in_fence = [], None, False
    for line in prompt.split("\n"):
        if line.startswith("```"):
            in_fence = not in_fence
        if block is not None and line and not line[0].isspace():
            out += ["```python"] + block + ["```"]
            block = None
        if block is None and not in_fence and line.startswith("def "):
            block = [line]
            continue
        if block is not None:
            block.append(line)
        else:
            out.append(line)
    if block is not None:
        out += ["```python"] + block + ["```"]
    return "\n".join(out)


def as_function(code):
    """The module's NAME = value constants moved into its function's body."""
    consts, imports, func = [], [], []
    for line in code.split("\n"):
        if func:
            func.append(line)
        elif line.startswith("def "):
            func.append(line)
        elif re.match(r"^[A-Z][A-Z0-9_]* = ", line):
            consts.append("    " + line)
        elif line.startswith("import ") or line.startswith("from "):
            imports.append(line)
    if not func:
        return code
    return "\n".join(imports + [func[0]] + consts + func[1:])


class SurrogateLLM(LLM):
    """`simple-evol llm --rung R --seed S` in chat-json, the sample index
    counting identical prompts (as simple-evol's own client does)."""

    def __init__(self, binary, rung, seed):
        super().__init__(do_auto_trim=True)
        self.binary, self.rung, self.seed = binary, rung, seed
        self.seen, self.calls = {}, 0

    def draw_sample(self, prompt, *args, **kwargs):
        text = fence_functions(prompt if isinstance(prompt, str) else str(prompt))
        k = self.seen.get(text, 0)
        self.seen[text] = k + 1
        self.calls += 1
        request = json.dumps({"messages": [{"role": "user", "content": text}], "temperature": 1.0, "sample": k})
        reply = subprocess.run([self.binary, "llm", "--rung", str(self.rung), "--seed", str(self.seed)],
                               input=request, capture_output=True, text=True, check=True).stdout
        m = re.search(r"```python\n(.*?)```", reply, re.S)
        code = as_function(m.group(1)) if m else reply
        d = re.search(r"^Description: (.*)$", reply, re.M)
        return "{%s}\n```python\n%s\n```\n" % (d.group(1) if d else "", code)


class SimpleEvolEvaluation(Evaluation):
    """Scores a program with `simple-evol eval` on the training file."""

    def __init__(self, binary, train, template, scratch):
        super().__init__(template_program=template, task_description=task_description, timeout_seconds=600,
                         exec_code=False, safe_evaluate=False)
        self.binary, self.train, self.scratch = binary, train, scratch
        self.log = []  # (program, score) in order
        self.harness_errors = 0

    def evaluate_program(self, program_str, callable_func, **kwargs):
        path = os.path.join(self.scratch, "candidate.py")
        out = os.path.join(self.scratch, "candidate.h5")
        with open(path, "w") as f:
            f.write(program_str)
        r = subprocess.run([self.binary, "eval", "-i", self.train, "--heuristic", path, "-o", out],
                           capture_output=True, text=True)
        if r.returncode != 0:
            # the harness failed (not the heuristic): said, and scored as llm4ad scores an error
            self.harness_errors += 1
            print("simple-evol eval exited %d: %s" % (r.returncode, r.stderr.strip()[-300:]), file=sys.stderr)
            self.log.append((program_str, None))
            return None
        with h5py.File(out, "r") as f:
            ok = bool((f["status"][()] == 0).all())
            score = -float(f.attrs["mean_objective"]) if ok else None
        self.log.append((program_str, score))
        return score


class Counter(ProfilerBase):
    """llm4ad 1.11 counts samples towards max_sample_nums only through a
    profiler; this one counts and writes nothing."""

    def __init__(self):
        super().__init__(log_dir=None, create_random_path=False)

    def record_parameters(self, *args, **kwargs):
        pass

    def register_function(self, function, *args, **kwargs):
        pass

    def register_population(self, *args, **kwargs):
        pass


def test_gap(binary, program, test, scratch):
    path = os.path.join(scratch, "best.py")
    out = os.path.join(scratch, "best.h5")
    with open(path, "w") as f:
        f.write(program)
    subprocess.run([binary, "eval", "-i", test, "--heuristic", path, "-o", out], check=True, capture_output=True)
    with h5py.File(out, "r") as f:
        return float(f.attrs["mean_gap"])


def run_one(method, binary, rung, seed, budget, train, test, template, scratch):
    random.seed(seed)
    np.random.seed(seed)
    llm = SurrogateLLM(binary, rung, seed)
    ev = SimpleEvolEvaluation(binary, train, template, scratch)
    if method == "eoh":
        m = EoH(llm=llm, evaluation=ev, profiler=Counter(), max_generations=None, max_sample_nums=budget,
                pop_size=None, num_samplers=1, num_evaluators=1)
    else:
        m = FunSearch(llm=llm, evaluation=ev, profiler=Counter(), max_sample_nums=budget, num_samplers=1,
                      num_evaluators=1)
    sys.stdout, saved = open(os.devnull, "w"), sys.stdout  # llm4ad prints every sample
    try:
        m.run()
    finally:
        sys.stdout.close()
        sys.stdout = saved
    scored = [(s, p) for p, s in ev.log if s is not None]
    if not scored:
        return float("nan"), len(ev.log), llm.calls, ev.harness_errors
    best = max(scored, key=lambda x: x[0])[1]
    return test_gap(binary, best, test, scratch), len(ev.log), llm.calls, ev.harness_errors


def slope(x, y):
    x, y = np.asarray(x, float), np.asarray(y, float)
    xm = x - x.mean()
    b = (xm * (y - y.mean())).sum() / (xm * xm).sum()
    resid = y - y.mean() - b * xm
    se = np.sqrt((resid ** 2).sum() / max(len(x) - 2, 1) / (xm * xm).sum())
    return b, se


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--sweep", required=True, help="the ICE sweep's folder (data/ and runs/)")
    ap.add_argument("--exam", required=True)
    ap.add_argument("--rungs", default="0,3,6,9")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--budget", type=int, default=60)
    ap.add_argument("--methods", default="eoh,funsearch")
    a = ap.parse_args()
    binary = os.path.abspath(os.path.join(a.bin, "simple-evol"))
    train = os.path.join(a.sweep, "data", "tsp-train.h5")
    test = os.path.join(a.sweep, "data", "tsp-test50.h5")
    rungs = [int(r) for r in a.rungs.split(",")]
    with h5py.File(a.exam, "r") as f:
        intelligence = dict(zip(f["exam/rung"][()].tolist(), f["exam/intelligence"][()].tolist()))
    # llm4ad's template: the seed heuristic every simple-evol framework starts from, constants in the body
    seed = subprocess.run([binary, "llm", "--seed-heuristic", "tsp"], capture_output=True, text=True,
                          check=True).stdout
    template = as_function(seed)
    eps = 0.01
    print("| framework | implementation | rung | seeds | mean test gap | candidates | LLM calls | harness errors | s per run |")
    print("|---|---|---|---|---|---|---|---|---|")
    rows = {}
    with tempfile.TemporaryDirectory() as scratch:
        for method in a.methods.split(","):
            for r in rungs:
                gaps, t0 = [], time.time()
                cands = calls = errors = 0
                for s in range(1, a.seeds + 1):
                    g, c, q, e = run_one(method, binary, r, s, a.budget, train, test, template, scratch)
                    gaps.append(g)
                    cands += c
                    calls += q
                    errors += e
                ours = []
                for s in range(1, a.seeds + 1):
                    p = os.path.join(a.sweep, "runs", "tsp-%s-r%d-s%d.h5" % (method, r, s))
                    if os.path.exists(p):
                        with h5py.File(p, "r") as f:
                            ours.append(float(f["best/test_gap"][0]))
                rows[(method, "llm4ad", r)] = np.nanmean(gaps)
                rows[(method, "simple-evol", r)] = np.mean(ours) if ours else float("nan")
                print("| %s | llm4ad 1.11 | %d | %d | %.4f | %.0f | %.0f | %d | %.1f |" %
                      (method, r, a.seeds, np.nanmean(gaps), cands / a.seeds, calls / a.seeds, errors,
                       (time.time() - t0) / a.seeds))
                print("| %s | simple-evol | %d | %d | %.4f | %d | | | |" %
                      (method, r, len(ours), rows[(method, "simple-evol", r)], a.budget))
                sys.stdout.flush()
    print()
    print("ICE on rungs %s (P = 1/(gap + %.2f) against the exam's I):" % (a.rungs, eps))
    print()
    print("| framework | llm4ad 1.11 ICE +- SE | simple-evol ICE +- SE |")
    print("|---|---|---|")
    for method in a.methods.split(","):
        cells = []
        for impl in ("llm4ad", "simple-evol"):
            x = [intelligence[r] for r in rungs]
            y = [1.0 / (rows[(method, impl, r)] + eps) for r in rungs]
            b, se = slope(x, y)
            cells.append("%.3f +- %.2f" % (b, se))
        print("| %s | %s | %s |" % (method, cells[0], cells[1]))


if __name__ == "__main__":
    main()
