#!/usr/bin/env python3
"""The straightforward Python evaluator a user would otherwise run, as the AHD
codes do it: one process per candidate, the instances in a Python loop, the
TSP construction calling the heuristic with fresh copies (ReEvo), a numpy
ant colony (ReEvo's CVRP-ACO, vectorised over the ants as its torch code is),
and EoH's published GLS with numba (makespan and both local searches
jitted; the compile time is reported apart).

usage: py_evaluator.py PROBLEM INSTANCES.h5 HEURISTIC.py [--ants 30 --iterations 100 --gls 1000]
prints: mean_objective, seconds (wall), heuristic_seconds, compile_seconds
"""
import argparse
import importlib.util
import time

import h5py
import numpy as np

p = argparse.ArgumentParser()
p.add_argument("problem")
p.add_argument("instances")
p.add_argument("heuristic")
p.add_argument("--ants", type=int, default=30)
p.add_argument("--iterations", type=int, default=100)
p.add_argument("--gls", type=int, default=1000)
args = p.parse_args()
t_start = time.perf_counter()

spec = importlib.util.spec_from_file_location("heuristic", args.heuristic)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
f = h5py.File(args.instances, "r")
groups = [f["instances"][k] for k in sorted(f["instances"].keys())]
heuristic_time = 0.0
compile_time = 0.0


def dist_matrix(coords):
    diff = coords[:, None, :] - coords[None, :, :]
    return np.sqrt((diff ** 2).sum(-1))


def timed(fn, *a):
    global heuristic_time
    t = time.perf_counter()
    r = fn(*a)
    heuristic_time += time.perf_counter() - t
    return r


def tsp(g):
    d = dist_matrix(g["coords"][()])
    n = len(d)
    tour, unvisited = [0], list(range(1, n))
    for _ in range(n - 1):
        nxt = int(timed(mod.select_next_node, tour[-1], 0, np.array(unvisited, dtype=np.int64), d.copy()))
        unvisited.remove(nxt)
        tour.append(nxt)
    return sum(d[tour[i], tour[(i + 1) % n]] for i in range(n))


def cvrp(g, rng):
    coords = g["coords"][()]
    demand = g["demand"][()].astype(float)
    cap = float(g.attrs["capacity"])
    d = dist_matrix(coords)
    shown = d.copy()
    shown[np.diag_indices_from(shown)] = 1
    eta = np.asarray(timed(mod.heuristics, shown, coords.copy(), demand.copy(), int(cap)), dtype=float) + 1e-9
    eta[eta < 1e-9] = 1e-9
    n, ants = len(d), args.ants
    tau = np.ones((n, n))
    best = np.inf
    for _ in range(args.iterations):
        cur = np.zeros(ants, dtype=np.int64)
        visited = np.zeros((ants, n), dtype=bool)
        visited[:, 0] = True
        load = np.zeros(ants)
        length = np.zeros(ants)
        done = np.zeros(ants, dtype=bool)
        paths = [cur.copy()]
        while not done.all():
            w = tau[cur] * eta[cur]
            allowed = ~visited & (demand[None, :] <= (cap - load)[:, None])
            left = (~visited[:, 1:]).any(axis=1)
            allowed[:, 0] = ~((cur == 0) & left)
            w = np.where(allowed, w, 0.0)
            w[done] = 0
            w[done, 0] = 1
            cum = np.cumsum(w, axis=1)
            u = rng.random(ants) * cum[:, -1]
            nxt = (cum < u[:, None]).sum(axis=1)
            nxt = np.minimum(nxt, n - 1)
            length += np.where(done, 0.0, d[cur, nxt])
            visited[np.arange(ants), nxt] = True
            load = np.where(nxt == 0, 0.0, load + demand[nxt])
            cur = nxt
            done = done | (~(~visited[:, 1:]).any(axis=1) & (cur == 0))
            paths.append(cur.copy())
        best = min(best, length.min())
        tau *= 0.9
        P = np.stack(paths)
        for a in range(ants):
            np.add.at(tau, (P[:-1, a], P[1:, a]), np.where(P[:-1, a] == P[1:, a], 0.0, 1.0 / length[a]))
        tau[tau < 1e-10] = 1e-10
    return best


def build_gls():
    global compile_time
    import numba

    @numba.njit(cache=False)
    def makespan(order, tasks):
        m = tasks.shape[1]
        c = np.zeros(m)
        for j in order:
            c[0] += tasks[j, 0]
            for k in range(1, m):
                if c[k] < c[k - 1]:
                    c[k] = c[k - 1]
                c[k] += tasks[j, k]
        return c[m - 1]

    @numba.njit(cache=False)
    def local_search(seq, threshold, tasks):
        s = seq.copy()
        n = len(s)
        for i in range(n):
            for j in range(i + 1, n):
                t = s.copy()
                t[i], t[j] = t[j], t[i]
                c = makespan(t, tasks)
                if c < threshold:
                    s, threshold = t, c
        for v in range(1, n):
            for j in range(1, n):
                rest = s[s != v]
                t = np.empty(n, dtype=np.int64)
                t[:j] = rest[:j]
                t[j] = v
                t[j + 1:] = rest[j:]
                c = makespan(t, tasks)
                if c < threshold:
                    s, threshold = t, c
        return s

    @numba.njit(cache=False)
    def local_search_perturb(seq, threshold, tasks, jobs):
        s = seq.copy()
        n = len(s)
        for i in jobs:
            for j in range(i + 1, n):
                t = s.copy()
                t[i], t[j] = t[j], t[i]
                c = makespan(t, tasks)
                if c < threshold:
                    s, threshold = t, c
        for v in jobs:
            for j in range(1, n):
                rest = s[s != v]
                t = np.empty(n, dtype=np.int64)
                t[:j] = rest[:j]
                t[j] = v
                t[j + 1:] = rest[j:]
                c = makespan(t, tasks)
                if c < threshold:
                    s, threshold = t, c
        return s

    t = time.perf_counter()
    demo = np.ones((3, 2))
    seq = np.arange(3, dtype=np.int64)
    makespan(seq, demo)
    local_search(seq, 1e9, demo)
    local_search_perturb(seq, 1e9, demo, np.array([0, 1], dtype=np.int64))
    compile_time = time.perf_counter() - t
    return makespan, local_search, local_search_perturb


def neh(tasks, makespan):
    n = tasks.shape[0]
    order = sorted(range(n), key=lambda j: (-tasks[j].sum(), j))
    seq = [order[0]]
    for i in range(1, n):
        best, best_c = None, np.inf
        for pos in range(i + 1):
            cand = seq[:pos] + [order[i]] + seq[pos:]
            c = makespan(np.array(cand, dtype=np.int64), tasks)
            if c < best_c:
                best, best_c = cand, c
        seq = best
    return np.array(seq, dtype=np.int64)


def fssp(g, fns):
    makespan, ls, lsp = fns
    tasks = g["processing"][()].T.astype(float)
    n, m = tasks.shape
    pi = neh(tasks, makespan)
    cmax = makespan(pi, tasks)
    best, best_c = pi, cmax
    for it in range(1, args.gls + 1):
        pi = ls(pi, cmax, tasks)
        cmax = makespan(pi, tasks)
        if cmax < best_c:
            best, best_c = pi, cmax
        new, jobs = timed(mod.get_matrix_and_jobs, [int(x) for x in pi], tasks.copy(), m, n)
        jobs = np.array([int(j) for j in list(jobs)[:5]], dtype=np.int64)
        new = np.asarray(new, dtype=float)
        cmax = makespan(pi, new)
        pi = lsp(pi, cmax, new, jobs)
        if it % 50 == 0:
            pi, cmax = best, best_c
    return best_c


rng = np.random.default_rng(0)
fns = build_gls() if args.problem == "fssp" else None
objs = []
for g in groups:
    if args.problem == "tsp":
        objs.append(tsp(g))
    elif args.problem == "cvrp":
        objs.append(cvrp(g, rng))
    else:
        objs.append(fssp(g, fns))
print("mean_objective %.10g" % np.mean(objs))
print("seconds %.4f" % (time.perf_counter() - t_start))
print("heuristic_seconds %.4f" % heuristic_time)
print("compile_seconds %.4f" % compile_time)
