#!/usr/bin/python3
"""Independent references for simple-evol's tests (plain Python and numpy):
Taillard's generator, objectives, NEH, the published FSSP-GLS step for step,
the greedy-ant CVRP-ACO and the TSP construction loop.

usage: simple_evol_reference.py CHECK ARGS...  (prints what it compares; exit 1 on a mismatch)
"""
import importlib.util
import itertools
import math
import sys

import h5py
import numpy as np


def fail(msg):
    print("MISMATCH:", msg)
    sys.exit(1)


def instances(path):
    f = h5py.File(path, "r")
    return f, [f["instances"][k] for k in sorted(f["instances"].keys())]


def load_heuristic(path, name):
    spec = importlib.util.spec_from_file_location("heuristic_under_test", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name)


def dist_matrix(coords):
    diff = coords[:, None, :] - coords[None, :, :]
    return np.sqrt((diff ** 2).sum(-1))


def taillard(seed, jobs, machines):
    m, a, q, r = 2147483647, 16807, 127773, 2836
    out = np.zeros((machines, jobs), dtype=np.int64)
    for i in range(machines):
        for j in range(jobs):
            k = seed // q
            seed = a * (seed % q) - k * r
            if seed < 0:
                seed += m
            out[i, j] = 1 + int(seed / m * 99)
    return out


def makespan(order, tasks):
    """tasks[job][machine]; the published order of operations."""
    mm = tasks.shape[1]
    c = [0.0] * mm
    for j in order:
        c[0] += tasks[j][0]
        for k in range(1, mm):
            if c[k] < c[k - 1]:
                c[k] = c[k - 1]
            c[k] += tasks[j][k]
    return max(c)


def neh(tasks):
    n = tasks.shape[0]
    totals = [sum(tasks[j]) for j in range(n)]
    order = sorted(range(n), key=lambda j: (-totals[j], j))
    seq = [order[0]]
    for i in range(1, n):
        best, best_c = None, float("inf")
        for pos in range(i + 1):
            cand = seq[:pos] + [order[i]] + seq[pos:]
            c = makespan(cand, tasks)
            if c < best_c:
                best, best_c = cand, c
        seq = best
    return seq


def ls_true(seq, threshold, tasks):
    s = seq[:]
    n = len(s)
    for i in range(n):
        for j in range(i + 1, n):
            t = s[:]
            t[i], t[j] = t[j], t[i]
            c = makespan(t, tasks)
            if c < threshold:
                s, threshold = t, c
    for v in range(1, n):
        for j in range(1, n):
            t = s[:]
            t.remove(v)
            t.insert(j, v)
            c = makespan(t, tasks)
            if c < threshold:
                s, threshold = t, c
    return s


def ls_perturb(seq, threshold, tasks, jobs):
    s = seq[:]
    n = len(s)
    for i in jobs:
        for j in range(i + 1, n):
            t = s[:]
            t[i], t[j] = t[j], t[i]
            c = makespan(t, tasks)
            if c < threshold:
                s, threshold = t, c
    for v in jobs:
        for j in range(1, n):
            t = s[:]
            t.remove(v)
            t.insert(j, v)
            c = makespan(t, tasks)
            if c < threshold:
                s, threshold = t, c
    return s


def gls(tasks, heuristic, iterations, reset=50):
    pi = neh(tasks)
    cmax = makespan(pi, tasks)
    best, best_c = pi, cmax
    n, m = tasks.shape
    for it in range(1, iterations + 1):
        pi = ls_true(pi, cmax, tasks)
        cmax = makespan(pi, tasks)
        if cmax < best_c:
            best, best_c = pi, cmax
        new, jobs = heuristic(pi[:], tasks.copy(), m, n)
        new = np.asarray(new, dtype=float)
        jobs = [int(j) for j in list(jobs)[:5]]
        cmax = makespan(pi, new)
        pi = ls_perturb(pi, cmax, new, jobs)
        if it % reset == 0:
            pi, cmax = best, best_c
    return best, best_c


def aco_greedy(dist, demand, capacity, eta, ants, iterations, decay=0.9):
    n = len(demand)
    tau = np.ones((n, n))
    best, best_len = None, float("inf")
    for _ in range(iterations):
        paths, lengths = [], []
        for _a in range(ants):
            path, visited, cur, load = [0], set(), 0, 0
            while len(visited) < n - 1 or cur != 0:
                w = np.zeros(n)
                for j in range(n):
                    if j == 0:
                        ok = not (cur == 0 and len(visited) < n - 1)
                    else:
                        ok = j not in visited and demand[j] <= capacity - load
                    if ok:
                        w[j] = tau[cur, j] * eta[cur, j]
                nxt = int(np.argmax(w))
                if nxt == 0:
                    load = 0
                else:
                    visited.add(nxt)
                    load += demand[nxt]
                path.append(nxt)
                cur = nxt
            length = 0.0
            for a, b in zip(path[:-1], path[1:]):
                length += dist[a, b]
            paths.append(path)
            lengths.append(length)
        for p, length in zip(paths, lengths):
            if length < best_len:
                best, best_len = p, length
        tau *= decay
        for p, length in zip(paths, lengths):
            for a, b in zip(p[:-1], p[1:]):
                tau[a, b] += 1.0 / length
        tau[tau < 1e-10] = 1e-10
    return best, best_len


def close(a, b, tol):
    return abs(a - b) <= tol * max(1.0, abs(b))


def check_taillard(path):
    f, items = instances(path)
    for g in items:
        p = taillard(int(g.attrs["time_seed"]), g["processing"].shape[1], g["processing"].shape[0])
        if not np.array_equal(p, g["processing"][()]):
            fail("Taillard processing of %s" % g.attrs["name"])
    print("taillard: %d instances equal the Python LCG" % len(items))


def check_objectives(inst_path, res_path):
    f, items = instances(inst_path)
    r = h5py.File(res_path, "r")
    problem = f.attrs["problem"]
    if isinstance(problem, bytes):
        problem = problem.decode()
    off = r["solution_offsets"][()]
    sol = r["solution"][()]
    status = r["status"][()] if "status" in r else np.zeros(len(items), dtype=np.int8)
    for k, g in enumerate(items):
        if status[k] != 0:
            continue
        s = sol[off[k]:off[k + 1]]
        if problem == "tsp":
            d = dist_matrix(g["coords"][()])
            if sorted(s) != list(range(len(d))) or s[0] != 0:
                fail("tour %d is not a permutation from 0" % k)
            obj = 0.0
            for i in range(len(s)):
                obj += d[s[i], s[(i + 1) % len(s)]]
        elif problem == "cvrp":
            d = dist_matrix(g["coords"][()])
            dem = g["demand"][()]
            cap = int(g.attrs["capacity"])
            if s[0] != 0 or s[-1] != 0 or sorted(x for x in s if x) != list(range(1, len(dem))):
                fail("routes %d do not serve every customer once" % k)
            load = 0
            for x in s[1:]:
                load = 0 if x == 0 else load + dem[x]
                if load > cap:
                    fail("routes %d exceed the capacity" % k)
            obj = 0.0
            for a, b in zip(s[:-1], s[1:]):
                obj += d[a, b]
        else:
            tasks = g["processing"][()].T.astype(float)
            if sorted(s) != list(range(tasks.shape[0])):
                fail("sequence %d is not a permutation" % k)
            obj = makespan(list(s), tasks)
        if not close(r["objective"][k], obj, 1e-12):
            fail("objective %d: file %r, recomputed %r" % (k, r["objective"][k], obj))
        if "reference" in g.attrs:
            gap = obj / g.attrs["reference"] - 1
            if not close(r["gap"][k], gap, 1e-9):
                fail("gap %d: %r vs %r" % (k, r["gap"][k], gap))
    print("objectives: %d instances recomputed in numpy" % len(items))


def check_exact(inst_path, res_path):
    f, items = instances(inst_path)
    r = h5py.File(res_path, "r")
    for k, g in enumerate(items):
        d = dist_matrix(g["coords"][()])
        n = len(d)
        best = float("inf")
        for perm in itertools.permutations(range(1, n)):
            t = (0,) + perm
            best = min(best, sum(d[t[i], t[(i + 1) % n]] for i in range(n)))
        if not close(r["objective"][k], best, 1e-9):
            fail("Held-Karp %d: %r, brute force %r" % (k, r["objective"][k], best))
    print("exact: Held-Karp equals brute force on %d instances" % len(items))


def check_neh(inst_path, res_path):
    f, items = instances(inst_path)
    r = h5py.File(res_path, "r")
    off, sol = r["solution_offsets"][()], r["solution"][()]
    for k, g in enumerate(items):
        tasks = g["processing"][()].T.astype(float)
        seq = neh(tasks)
        if list(sol[off[k]:off[k + 1]]) != seq:
            fail("NEH sequence %d differs" % k)
    print("neh: %d sequences equal" % len(items))


def check_gls(inst_path, res_path, heuristic_path, iterations):
    f, items = instances(inst_path)
    r = h5py.File(res_path, "r")
    h = load_heuristic(heuristic_path, "get_matrix_and_jobs")
    off, sol = r["solution_offsets"][()], r["solution"][()]
    for k, g in enumerate(items):
        tasks = g["processing"][()].T.astype(float)
        best, best_c = gls(tasks, h, int(iterations))
        if list(sol[off[k]:off[k + 1]]) != best or r["objective"][k] != best_c:
            fail("GLS %d: file %r, Python %r" % (k, r["objective"][k], best_c))
    print("gls: %d instances equal step for step (%s iterations)" % (len(items), iterations))


def check_aco(inst_path, res_path, heuristic_path, ants, iterations):
    f, items = instances(inst_path)
    r = h5py.File(res_path, "r")
    h = load_heuristic(heuristic_path, "heuristics")
    off, sol = r["solution_offsets"][()], r["solution"][()]
    for k, g in enumerate(items):
        coords = g["coords"][()]
        d = dist_matrix(coords)
        shown = d.copy()
        shown[np.diag_indices_from(shown)] = 1
        dem = g["demand"][()]
        eta = np.asarray(h(shown, coords.copy(), dem.astype(float), int(g.attrs["capacity"])), dtype=float) + 1e-9
        eta[eta < 1e-9] = 1e-9
        best, best_len = aco_greedy(d, dem, int(g.attrs["capacity"]), eta, int(ants), int(iterations))
        if list(sol[off[k]:off[k + 1]]) != best or not close(r["objective"][k], best_len, 1e-12):
            fail("ACO %d: file %r, Python %r" % (k, r["objective"][k], best_len))
    print("aco: %d instances equal step for step (greedy ants)" % len(items))


def check_tsp_eval(inst_path, res_path, heuristic_path):
    f, items = instances(inst_path)
    r = h5py.File(res_path, "r")
    h = load_heuristic(heuristic_path, "select_next_node")
    off, sol = r["solution_offsets"][()], r["solution"][()]
    for k, g in enumerate(items):
        d = dist_matrix(g["coords"][()])
        n = len(d)
        tour, unvisited = [0], list(range(1, n))
        for _ in range(n - 1):
            nxt = int(h(tour[-1], 0, np.array(unvisited, dtype=np.int64), d.copy()))
            unvisited.remove(nxt)
            tour.append(nxt)
        if list(sol[off[k]:off[k + 1]]) != tour:
            fail("TSP construction %d differs" % k)
    print("tsp: %d constructions equal" % len(items))


def check_lower_bound(path):
    f, items = instances(path)
    for g in items:
        p = g["processing"][()]  # [m, n]
        m, n = p.shape
        lb = p.sum(axis=0).max()
        for i in range(m):
            head = min(p[:i, j].sum() for j in range(n))
            tail = min(p[i + 1:, j].sum() for j in range(n))
            lb = max(lb, head + p[i].sum() + tail)
        if lb != g.attrs["lower_bound"]:
            fail("lower bound of %s: %r vs %r" % (g.attrs.get("name"), g.attrs["lower_bound"], lb))
    print("lower bounds: %d equal" % len(items))


if __name__ == "__main__":
    checks = {"taillard": check_taillard, "objectives": check_objectives, "exact": check_exact, "neh": check_neh,
              "gls": check_gls, "aco": check_aco, "tsp": check_tsp_eval, "lower_bound": check_lower_bound}
    checks[sys.argv[1]](*sys.argv[2:])
