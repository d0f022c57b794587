#!/usr/bin/env python3
"""The reference solvers a user would otherwise run, on simple-evol's
instance files: elkai (LKH-3) for the TSP and PyVRP (HGS) for the CVRP.
Prints one line per instance: the objective in real Euclidean distance.

usage: peers.py tsp FILE [RUNS] | peers.py cvrp FILE SECONDS
"""
import sys
import time

import h5py
import numpy as np


def dist(coords):
    diff = coords[:, None, :] - coords[None, :, :]
    return np.sqrt((diff ** 2).sum(-1))


def main():
    kind, path = sys.argv[1], sys.argv[2]
    f = h5py.File(path, "r")
    t0 = time.perf_counter()
    out = []
    for key in sorted(f["instances"].keys()):
        g = f["instances"][key]
        coords = g["coords"][()]
        d = dist(coords)
        if kind == "tsp":
            import elkai
            runs = int(sys.argv[3]) if len(sys.argv) > 3 else 10
            # LKH works on integers: distances scaled by 1e6, the tour priced in real distance
            tour = elkai.DistanceMatrix(np.rint(d * 1e6).astype(int).tolist()).solve_tsp(runs=runs)[:-1]
            out.append(sum(d[tour[i], tour[(i + 1) % len(tour)]] for i in range(len(tour))))
        else:
            from pyvrp import Model
            from pyvrp.stop import MaxRuntime
            seconds = float(sys.argv[3])
            dem = g["demand"][()]
            cap = int(g.attrs["capacity"])
            m = Model()
            locs = [m.add_location(x=int(round(x * 1e4)), y=int(round(y * 1e4))) for x, y in coords]
            m.add_depot(locs[0])
            for i in range(1, len(locs)):
                m.add_client(locs[i], delivery=[int(dem[i])])
            m.add_vehicle_type(num_available=len(locs) - 1, capacity=[cap])
            scaled = np.rint(d * 1e4).astype(int)
            for a in range(len(locs)):
                for b in range(len(locs)):
                    m.add_edge(locs[a], locs[b], distance=int(scaled[a, b]))
            res = m.solve(stop=MaxRuntime(seconds), display=False, seed=0)
            routes = [[a.idx for a in r if a.is_client()] for r in res.best.routes()]
            # client activities count from 0 or from 1 (after the depot) by PyVRP's version
            shift = 1 if min(min(r) for r in routes if r) == 0 else 0
            served = sorted(c + shift for r in routes for c in r)
            assert served == list(range(1, len(locs))), "PyVRP's routes do not serve every customer once"
            total = 0.0
            for r in routes:
                v = [0] + [c + shift for c in r] + [0]
                total += sum(d[v[i], v[i + 1]] for i in range(len(v) - 1))
            out.append(total)
    for v in out:
        print("%.10g" % v)
    print("seconds %.3f" % (time.perf_counter() - t0), file=sys.stderr)


main()
