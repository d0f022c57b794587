"""Independent state-evolution references for teacher-limits theory (numpy).

  glm FILE ACT      k = 1: the single-index GLM state evolution with Gaussian
                    prior, its channel function and free entropy by direct
                    quadrature (Psi = E int p log p, not the integral of F)
  linear FILE       the closed form m = rho / (1 + alpha rho / (Delta + m))
  he3 FILE          k coupled he3 GLMs at small SNR, where F = 3 s q^2 and the
                    fixed points q(1 - q) = 1 / (3 alpha s) are closed forms

Each compares FILE (a theory output) with the reference, prints ok/FAIL lines
and exits 1 on any failure.
"""
import sys
import h5py
import numpy as np
from numpy.polynomial.hermite_e import hermegauss

bad = 0


def report(ok, what):
    global bad
    print(("ok   " if ok else "FAIL ") + what)
    bad += not ok


def activation(name):
    if name == "he3":
        return (lambda z: (z**3 - 3 * z) / np.sqrt(6)), (lambda z: (3 * z**2 - 3) / np.sqrt(6))
    if name == "tanh":
        x, w = hermegauss(100)
        w = w / w.sum()
        c = 1 / np.sqrt(np.sum(w * np.tanh(x) ** 2))
        return (lambda z: c * np.tanh(z)), (lambda z: c * (1 - np.tanh(z) ** 2))
    raise SystemExit("unknown activation " + name)


XI, WXI = hermegauss(30)
WXI = WXI / WXI.sum()


def channel(g, dg, q, s):
    """F(q, s) = E (d_omega log Z)^2 and Psi(q, s) = E log Z for y = sqrt(s) g(.) + xi."""
    V, rs = 1 - q, np.sqrt(s)
    F = Psi = 0.0
    for x, wx in zip(XI, WXI):
        om = np.sqrt(q) * x
        if V < 1e-12:
            F += wx * s * dg(om) ** 2
            Psi += wx * (-0.5 * np.log(2 * np.pi * np.e))
            continue
        zz = np.linspace(-4.5, 4.5, 91)
        slope = np.max(np.abs(dg(om + np.sqrt(V) * zz)))
        hz = min(0.04, 0.3 / (rs * np.sqrt(V) * slope + 1e-300))
        z = np.arange(-7, 7 + hz / 2, hz)
        wz = np.exp(-z**2 / 2) / np.sqrt(2 * np.pi) * hz
        c, dc = rs * g(om + np.sqrt(V) * z), rs * dg(om + np.sqrt(V) * z)
        hy = 0.2
        y = np.arange(c.min() - 9, c.max() + 9, hy)
        p = np.zeros_like(y)
        dp = np.zeros_like(y)
        for lo in range(0, len(z), 400):
            E = np.exp(-0.5 * (y[:, None] - c[None, lo:lo + 400]) ** 2) / np.sqrt(2 * np.pi)
            p += E @ wz[lo:lo + 400]
            dp += (E * (y[:, None] - c[None, lo:lo + 400])) @ (wz[lo:lo + 400] * dc[lo:lo + 400])
        keep = p > 1e-300
        F += wx * np.sum(dp[keep] ** 2 / p[keep]) * hy
        Psi += wx * np.sum(p[keep] * np.log(p[keep])) * hy
    return F, Psi


def glm_branch(g, dg, alpha, s, q0):
    q = q0
    for _ in range(400):
        F, _ = channel(g, dg, q, s)
        qn = alpha * F / (1 + alpha * F)
        if abs(qn - q) < 1e-9:
            q = qn
            break
        q = 0.5 * q + 0.5 * qn
    F, Psi = channel(g, dg, q, s)
    qh = alpha * F
    phi = 0.5 * (qh - np.log1p(qh)) + alpha * Psi - 0.5 * q * qh
    return q, phi


def check_glm(path, act):
    g, dg = activation(act)
    f = h5py.File(path)
    t = f["/theory"]
    delta = float(f.attrs["noise"])
    v = 1.0  # k = 1: v_1 = 1
    s = v * v / delta
    for j, alpha in enumerate(t["alpha"][()]):
        qu, pu = glm_branch(g, dg, alpha, s, 0.0)
        qi, pi = glm_branch(g, dg, alpha, s, 1 - 1e-6)
        q = qi if pi > pu else qu
        ker = q**3 if act == "he3" else None
        if act == "tanh":
            x, w = hermegauss(80)
            w = w / w.sum()
            inner = np.array([np.sum(w * g(np.sqrt(q) * xi + np.sqrt(1 - q) * x)) for xi in x])
            ker = np.sum(w * inner**2)
        eps = v * v * (1 - ker)
        got_q, got_e = t["overlap"][j, 0], t["eps_bo"][j]
        report(abs(got_q - q) < 0.01 and abs(got_e - eps) < 0.01 * max(eps, 1e-3),
               f"glm {act} Delta={delta:g} alpha={alpha:.4g}: q {got_q:.5f} vs {q:.5f}, eps {got_e:.5g} vs {eps:.5g}"
               f" (branches q {qu:.4f} / {qi:.4f})")
        got_u = t["eps_uninformed"][j]
        eps_u = v * v * (1 - (qu**3 if act == "he3" else ker if abs(qu - q) < 1e-9 else np.nan))
        if act == "he3":
            report(abs(got_u - eps_u) < 0.01 * max(eps_u, 1e-3), f"glm he3 alpha={alpha:.4g}: uninformed eps {got_u:.5g} vs {eps_u:.5g}")


def check_linear(path):
    f = h5py.File(path)
    t = f["/theory"]
    delta = float(f.attrs["noise"])
    rho = 1.0  # sum_i v_i^2
    for alpha, got in zip(t["alpha"][()], t["eps_bo"][()]):
        m = rho
        for _ in range(100000):
            mn = rho / (1 + alpha * rho / (delta + m))
            if abs(mn - m) < 1e-15:
                break
            m = mn
        report(abs(got - m) < 1e-6 * max(m, 1e-12) + 1e-12, f"linear alpha={alpha:.4g}: eps {got:.8g} vs closed form {m:.8g}")


def check_he3(path):
    f = h5py.File(path)
    t = f["/theory"]
    delta = float(f.attrs["noise"])
    beta = float(f.attrs["beta"])
    k = int(f.attrs["k"])
    v = np.arange(1, k + 1) ** -beta
    v /= np.linalg.norm(v)

    def solve(alpha, rule):
        q = np.zeros(k)
        for _ in range(10000):
            err = v**2 * (1 - q**3)
            noise = delta + err.sum() - err
            lam = alpha * v**2 / noise
            qn = np.zeros(k)
            disc = 1 - 4 / (3 * np.maximum(lam, 1e-300))
            has = disc >= 0
            qp = np.where(has, 0.5 * (1 + np.sqrt(np.maximum(disc, 0))), 0.0)
            phi = 0.5 * (qp + np.log1p(-np.minimum(qp, 1 - 1e-16))) + 0.5 * lam * qp**3
            if rule == "best":
                qn = np.where(has & (phi > 0), qp, 0.0)
            elif rule == "highest":
                qn = qp
            if np.max(np.abs(qn - q)) < 1e-13:
                q = qn
                break
            q = 0.5 * q + 0.5 * qn
        return q, np.sum(v**2 * (1 - q**3))

    differ = 0
    for j, alpha in enumerate(t["alpha"][()]):
        q, eps = solve(alpha, "best")
        _, eps_u = solve(alpha, "lowest")
        got = t["eps_bo"][j]
        report(abs(got - eps) < 2e-3 * eps and np.max(np.abs(t["overlap"][j] - q)) < 5e-3,
               f"he3 k={k} alpha={alpha:.4g}: eps {got:.6g} vs {eps:.6g}, max |dq| {np.max(np.abs(t['overlap'][j] - q)):.2g}")
        report(abs(t["eps_uninformed"][j] - eps_u) < 2e-3 * eps_u, f"he3 alpha={alpha:.4g}: uninformed {t['eps_uninformed'][j]:.6g} vs {eps_u:.6g}")
        differ += abs(eps_u - eps) > 0.05 * eps
    # The test can tell the Bayes-optimal branch from the uninformed one.
    report(differ >= 2, f"he3: the uninformed branch differs from the Bayes-optimal one at {differ} of {len(t['alpha'])} points")


case, path = sys.argv[1], sys.argv[2]
if case == "glm":
    check_glm(path, sys.argv[3])
elif case == "linear":
    check_linear(path)
elif case == "he3":
    check_he3(path)
else:
    raise SystemExit("unknown case " + case)
sys.exit(1 if bad else 0)
