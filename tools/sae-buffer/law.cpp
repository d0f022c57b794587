// law.cpp - the law's forms, their Huber fit and the sizing rule.
#include "sae-buffer/law.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>

#include "nk/error.hpp"

namespace sb {

std::string law_name(LawKind kind) {
  switch (kind) {
    case LawKind::law: return "law";
    case LawKind::law_latents: return "law";
    case LawKind::power_b: return "power_b";
    case LawKind::power_ub: return "power_ub";
  }
  return "?";
}

std::vector<std::string> law_parameters(LawKind kind) {
  switch (kind) {
    case LawKind::law: return {"E", "A", "alpha", "Rstar"};
    case LawKind::law_latents: return {"E", "A", "alpha", "Rstar", "C", "gamma"};
    case LawKind::power_b: return {"E", "A", "a"};
    case LawKind::power_ub: return {"E", "A", "a", "b"};
  }
  return {};
}

double effective_data(double U, double B, double r_star) {
  const double repeats = std::max(0.0, B / U - 1);
  return U * (1 + r_star * -std::expm1(-repeats / r_star));
}

double predict_fvu(LawKind kind, const std::vector<double>& p, const GridPoint& g) {
  switch (kind) {
    case LawKind::law: return p[0] + p[1] * std::pow(effective_data(g.U, g.B, p[3]), -p[2]);
    case LawKind::law_latents:
      return p[0] + p[1] * std::pow(effective_data(g.U, g.B, p[3]), -p[2]) + p[4] * std::pow(g.latents, -p[5]);
    case LawKind::power_b: return p[0] + p[1] * std::pow(g.B, -p[2]);
    case LawKind::power_ub: return p[0] + p[1] * std::pow(g.U, -p[2]) * std::pow(g.B, -p[3]);
  }
  return 0;
}

double lbfgs_minimize(const std::function<double(const std::vector<double>&, std::vector<double>&)>& gradient,
                      std::vector<double>& x, int iterations) {
  const size_t d = x.size();
  constexpr size_t kMemory = 10;
  std::vector<double> g(d), direction(d), x_new(d), g_new(d);
  double f = gradient(x, g);
  std::deque<std::vector<double>> s_hist, y_hist;
  std::deque<double> rho_hist;
  auto dot = [](const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
  };
  for (int it = 0; it < iterations && std::isfinite(f); ++it) {
    if (std::sqrt(dot(g, g)) < 1e-12) break;
    // two-loop recursion: direction = -H g
    std::vector<double> q = g;
    std::vector<double> alpha(s_hist.size());
    for (size_t i = s_hist.size(); i-- > 0;) {
      alpha[i] = rho_hist[i] * dot(s_hist[i], q);
      for (size_t c = 0; c < d; ++c) q[c] -= alpha[i] * y_hist[i][c];
    }
    const double gamma = s_hist.empty() ? 1.0 / std::max(1.0, std::sqrt(dot(g, g))) : dot(s_hist.back(), y_hist.back()) / dot(y_hist.back(), y_hist.back());
    for (double& v : q) v *= gamma;
    for (size_t i = 0; i < s_hist.size(); ++i) {
      const double beta = rho_hist[i] * dot(y_hist[i], q);
      for (size_t c = 0; c < d; ++c) q[c] += s_hist[i][c] * (alpha[i] - beta);
    }
    for (size_t c = 0; c < d; ++c) direction[c] = -q[c];
    double slope = dot(direction, g);
    if (!(slope < 0)) {  // not a descent direction: restart from steepest descent
      s_hist.clear(), y_hist.clear(), rho_hist.clear();
      for (size_t c = 0; c < d; ++c) direction[c] = -g[c];
      slope = -dot(g, g);
    }
    double step = 1, f_new = 0;
    bool accepted = false;
    for (int tries = 0; tries < 40; ++tries, step *= 0.5) {
      for (size_t c = 0; c < d; ++c) x_new[c] = x[c] + step * direction[c];
      f_new = gradient(x_new, g_new);
      if (std::isfinite(f_new) && f_new <= f + 1e-4 * step * slope) {
        accepted = true;
        break;
      }
    }
    if (!accepted) break;
    std::vector<double> s(d), y(d);
    for (size_t c = 0; c < d; ++c) s[c] = x_new[c] - x[c], y[c] = g_new[c] - g[c];
    const double sy = dot(s, y);
    const double improvement = f - f_new;
    x = x_new, g = g_new, f = f_new;
    if (sy > 1e-300) {
      s_hist.push_back(s), y_hist.push_back(y), rho_hist.push_back(1 / sy);
      if (s_hist.size() > kMemory) s_hist.pop_front(), y_hist.pop_front(), rho_hist.pop_front();
    }
    if (improvement <= 1e-15 * (1 + std::abs(f))) break;
  }
  return f;
}

namespace {

double huber(double r, double delta) {
  const double a = std::abs(r);
  return a <= delta ? 0.5 * r * r : delta * (a - 0.5 * delta);
}
double huber_slope(double r, double delta) { return std::clamp(r, -delta, delta); }

// Objective in log-parameters, with its gradient by central differences
// (at most six parameters: cheap, and exact enough for L-BFGS).
double objective(LawKind kind, const std::vector<GridPoint>& points, double delta, const std::vector<double>& log_params) {
  std::vector<double> p(log_params.size());
  for (size_t i = 0; i < p.size(); ++i) p[i] = std::exp(log_params[i]);
  double total = 0;
  for (const GridPoint& g : points) {
    const double predicted = predict_fvu(kind, p, g);
    if (!(predicted > 0)) return std::numeric_limits<double>::infinity();
    total += huber(std::log(predicted) - std::log(g.fvu), delta);
  }
  return total;
}

std::vector<std::vector<double>> starts(LawKind kind, const std::vector<GridPoint>& points) {
  double min_fvu = points.front().fvu;
  for (const GridPoint& g : points) min_fvu = std::min(min_fvu, g.fvu);
  const std::vector<double> E = {0.1 * min_fvu, 0.5 * min_fvu, 0.9 * min_fvu}, A = {1, 10, 100, 1000},
                            exponent = {0.1, 0.3, 0.6, 1.0}, R = {1, 10, 100, 1000};
  std::vector<std::vector<double>> out;
  for (const double e : E)
    for (const double a : A)
      for (const double x : exponent) {
        if (kind == LawKind::power_b) {
          out.push_back({e, a, x});
          continue;
        }
        if (kind == LawKind::power_ub) {
          for (const double b : {0.1, 0.3, 0.6}) out.push_back({e, a, x, b});
          continue;
        }
        for (const double r : R) {
          if (kind == LawKind::law) out.push_back({e, a, x, r});
          else
            for (const double c : {0.1 * min_fvu, min_fvu})
              for (const double gamma : {0.3, 1.0}) out.push_back({e, a, x, r, c, gamma});
        }
      }
  return out;
}

}  // namespace

LawFit fit_law(LawKind kind, const std::vector<GridPoint>& points, double delta) {
  const size_t d = law_parameters(kind).size();
  if (points.size() < d)
    throw nk::Error(nk::Exit::input, "the fit of " + law_name(kind) + " needs at least " + std::to_string(d) +
                                         " points (its parameters), the grid gives " + std::to_string(points.size()));
  for (const GridPoint& g : points)
    if (!(g.fvu > 0) || !(g.U > 0) || !(g.B >= g.U) || !std::isfinite(g.fvu))
      throw nk::Error(nk::Exit::input, "grid point U = " + std::to_string(g.U) + ", B = " + std::to_string(g.B) +
                                           " has FVU " + std::to_string(g.fvu) + ": every point needs 0 < FVU and B >= U > 0");
  auto gradient = [&](const std::vector<double>& x, std::vector<double>& g) {
    const double f = objective(kind, points, delta, x);
    std::vector<double> probe = x;
    for (size_t i = 0; i < x.size(); ++i) {
      const double h = 1e-6 * (1 + std::abs(x[i]));
      probe[i] = x[i] + h;
      const double up = objective(kind, points, delta, probe);
      probe[i] = x[i] - h;
      const double down = objective(kind, points, delta, probe);
      probe[i] = x[i];
      g[i] = std::isfinite(up) && std::isfinite(down) ? (up - down) / (2 * h) : 0.0;
    }
    return f;
  };
  LawFit best;
  best.kind = kind;
  best.loss = std::numeric_limits<double>::infinity();
  for (const std::vector<double>& start : starts(kind, points)) {
    std::vector<double> x(start.size());
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::log(start[i]);
    if (!std::isfinite(objective(kind, points, delta, x))) continue;
    const double f = lbfgs_minimize(gradient, x);
    ++best.starts;
    if (f < best.loss) {
      best.loss = f;
      best.params.resize(x.size());
      for (size_t i = 0; i < x.size(); ++i) best.params[i] = std::exp(x[i]);
    }
  }
  if (best.params.empty()) throw nk::Error(nk::Exit::runtime, "the fit of " + law_name(kind) + " found no finite start");
  return best;
}

int64_t smallest_buffer(const LawFit& fit, double B, double latents, double tolerance) {
  auto ev = [&](double U) { return 1 - predict_fvu(fit.kind, fit.params, {U, B, latents, 0}); };
  const double target = (1 - tolerance) * ev(B);
  int64_t lo = 1, hi = static_cast<int64_t>(B);  // ev(hi) >= target always
  if (ev(1) >= target) return 1;
  while (hi - lo > 1) {  // invariant: ev(lo) < target <= ev(hi)
    const int64_t mid = lo + (hi - lo) / 2;
    (ev(static_cast<double>(mid)) >= target ? hi : lo) = mid;
  }
  return hi;
}

}  // namespace sb
