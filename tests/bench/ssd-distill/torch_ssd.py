#!/usr/bin/python3
"""torch_ssd.py MODEL.h5 PROMPTS.h5 --method on-policy|ssd --steps N --batch B
--max-new M [--tau T] [--lr R] [--threads 2] - the peer a user would otherwise
run: one self-distillation step in eager float32 PyTorch, written the way an
SDFT/SSD training loop is written on top of a Llama (torch_llama.py): the
batch's rollouts decoded together with KV caches (left-padded prompts),
on-policy: the student samples and the teacher (the document in its prompt)
scores the finished rollouts in one forward; ssd: both models run token by
token, the teacher writes y_t where JSD(student || teacher) > tau. Then the
student's forward over prompt + rollout with autograd, the mean per-position
KL(teacher || student), backward, torch.optim.AdamW. The prompts are
`ssd-distill rollout`'s CSR arrays (the same tokenisation). Prints seconds
per step (the first step, warm-up, left out), the rollouts' share, and the
supervised tokens a step."""
import argparse
import os
import sys
import time

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_llama import Llama, left_pad  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("model"); p.add_argument("prompts")
p.add_argument("--method", choices=["on-policy", "ssd"], default="ssd")
p.add_argument("--steps", type=int, default=10)
p.add_argument("--batch", type=int, default=8)
p.add_argument("--max-new", type=int, default=32)
p.add_argument("--tau", type=float, default=0.3)
p.add_argument("--lr", type=float, default=3e-4)
p.add_argument("--threads", type=int, default=2)
a = p.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(1)

f = h5py.File(a.prompts, "r")
def csr(name):
    flat, off = f[f"/rollouts/{name}"][()], f[f"/rollouts/{name}_offsets"][()]
    return [flat[off[i]:off[i + 1]].tolist() for i in range(len(off) - 1)]
s_pre, t_pre = csr("student_prefix"), csr("teacher_prefix")
eos = int(f.attrs["eos"])
R = len(s_pre)

student = Llama(a.model)
teacher = student.frozen_copy()
opt = torch.optim.AdamW(list(student.params.values()), lr=a.lr, weight_decay=0.0)


def jsd(ls, lt):  # rows of log-probabilities -> [B]
    ps, pt = ls.exp(), lt.exp()
    lm = torch.log((ps + pt) / 2)
    return 0.5 * (pt * (lt - lm)).sum(-1) + 0.5 * (ps * (ls - lm)).sum(-1)


def last_rows(logits, valid_len, n):  # logits of [prompt + y]: the rows predicting y's n tokens
    T = logits.shape[1]
    return [logits[i, T - n[i] - 1:T - 1] for i in range(len(n))]


times, roll_times, tokens = [], [], []
for step in range(a.steps + 1):
    rows = [(step * a.batch + b) % R for b in range(a.batch)]
    t0 = time.perf_counter()
    with torch.no_grad():
        sc, tc = {}, {}
        tok, val = left_pad([s_pre[r] for r in rows])
        s_log = torch.log_softmax(student.forward(tok, val, sc)[:, -1], -1)
        if a.method == "ssd":
            tok, val = left_pad([t_pre[r] for r in rows])
            t_log = torch.log_softmax(teacher.forward(tok, val, tc)[:, -1], -1)
        alive = torch.ones(a.batch, dtype=torch.bool)
        ys, t_rows = [], []
        for t in range(a.max_new):
            y = torch.multinomial(s_log.exp(), 1)[:, 0]
            if a.method == "ssd":
                t_rows.append(t_log)
                by_teacher = jsd(s_log, t_log) > a.tau
                y = torch.where(by_teacher, torch.multinomial(t_log.exp(), 1)[:, 0], y)
            y = torch.where(alive, y, torch.full_like(y, eos))
            ys.append(y)
            was = alive.clone()
            alive &= y != eos
            if not alive.any() or t + 1 == a.max_new:
                break
            s_log = torch.log_softmax(student.forward(y[:, None], was[:, None], sc)[:, -1], -1)
            if a.method == "ssd":
                t_log = torch.log_softmax(teacher.forward(y[:, None], was[:, None], tc)[:, -1], -1)
        Y = torch.stack(ys, 1)
        n = [int((Y[i] == eos).nonzero()[0]) + 1 if (Y[i] == eos).any() else Y.shape[1] for i in range(a.batch)]
        if a.method == "ssd":
            TL = torch.stack(t_rows, 1)
            targets = [TL[i, :n[i]] for i in range(a.batch)]
        else:  # the teacher scores the finished rollouts in one forward
            tok, val = left_pad([t_pre[r] + Y[i, :n[i]].tolist() for i, r in enumerate(rows)])
            targets = [torch.log_softmax(x, -1) for x in last_rows(teacher.forward(tok, val), None, n)]
    t1 = time.perf_counter()
    tok, val = left_pad([s_pre[r] + Y[i, :n[i]].tolist() for i, r in enumerate(rows)])
    preds = last_rows(student.forward(tok, val), None, n)
    loss = sum((lt.exp() * (lt - torch.log_softmax(z, -1))).sum(-1).mean() for z, lt in zip(preds, targets)) / a.batch
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step > 0:
        times.append(time.perf_counter() - t0)
        roll_times.append(t1 - t0)
        tokens.append(sum(n))
print(f"seconds_per_step {np.mean(times):.5f} rollout_seconds {np.mean(roll_times):.5f} "
      f"supervised_per_step {np.mean(tokens):.1f} method {a.method} torch {torch.__version__}")
