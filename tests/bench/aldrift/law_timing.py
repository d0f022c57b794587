# law_timing.py PROBLEM TIMES: what the dense way costs: one stage's exact law
# (9 moves) by numpy's N x N independence-MH matrix on the benchmark problem,
# beside the whole aldrift run (10 stages: chains, fits and exact laws).
import sys
import time
import itertools
import h5py
import numpy as np

P = h5py.File(sys.argv[1], "r")
times = dict(line.split() for line in open(sys.argv[2]))
init, trans, cost = P["/prior/init"][()], P["/prior/trans"][()], P["/cost"][()]
n = int(round(np.log2(len(cost))))
states = np.array(list(itertools.product(range(2), repeat=n)))
logL = np.log(init[states[:, 0]]) + np.log(trans[states[:, :-1], states[:, 1:]]).sum(1)
q = np.exp(logL)
pi = np.exp(logL - 0.5 * cost)
pi /= pi.sum()
start = time.perf_counter()
w = pi / q
M = q[None, :] * np.minimum(1.0, w[None, :] / w[:, None])
np.fill_diagonal(M, 0.0)
M[np.diag_indices_from(M)] = 1.0 - M.sum(1)
mu, law = q.copy(), np.zeros_like(q)
for m in range(1, 10):
    mu = mu @ M
    if m > 4:
        law += mu / 5
dense = time.perf_counter() - start
print()
print(f"numpy dense: {dense:.3f} s for one stage's law (N = {len(q)}: a {len(q)}x{len(q)} matrix, 9 products);")
print(f"aldrift exact: {float(times['aldrift-markov-0.5']):.3f} s for the whole run (10 stages, 40,000 chain moves, 10 fits, 10 exact laws).")
