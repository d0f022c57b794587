// global_methods.cpp - ALDRIFT in R^n (adaptive tempering, independence-MH
// corrections, refits), random search, CEM and CbAS with Gaussian models.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "aldrift/global.hpp"
#include "nk/log.hpp"

namespace ald {

namespace {

/// Effective sample size (sum w)^2 / sum w^2 of w_j = exp(-dT (d_j - min d)).
double ess(const std::vector<double>& d, int m, double dT) {
  double lo = *std::min_element(d.begin(), d.begin() + m);
  double s = 0, s2 = 0;
  for (int j = 0; j < m; ++j) {
    const double w = std::exp(-dT * (d[j] - lo));
    s += w;
    s2 += w * w;
  }
  return s * s / s2;
}

/// The temperature step whose weights on the stage's starts keep an effective
/// sample share 'share' (bisection on log dT), at most (max_ratio - 1) T once T > 0.
double next_increment(const std::vector<double>& d, int m, double share, double T, double max_ratio) {
  const double target = share * m;
  const double cap = T > 0 ? (max_ratio - 1) * T : 1e12;
  if (ess(d, m, cap) >= target) return cap;
  double lo = std::log(cap) - 40, hi = std::log(cap);
  if (ess(d, m, std::exp(lo)) < target) return std::exp(lo);
  for (int it = 0; it < 80; ++it) {
    const double mid = 0.5 * (lo + hi);
    (ess(d, m, std::exp(mid)) >= target ? lo : hi) = mid;
  }
  return std::exp(lo);
}

}  // namespace

void run_aldrift_global(Tracker& track, const GlobalOptions& o, ContinuousLearner learner, nk::Rng& rng) {
  const Objective& f = track.objective();
  const int n = f.n;
  // The optimistic learner fits a mean only; gauss and kde need spread too.
  // The product learner recombines coordinates across the pool, which must keep every basin a coordinate may need.
  const int C = o.chains > 0                                 ? o.chains
                : learner == ContinuousLearner::optimistic ? 3 * n + 6
                : learner == ContinuousLearner::product    ? 10 * n + 10
                                                           : 4 * n + 8;
  std::unique_ptr<Density> q = make_prior(n);
  double T = 0;
  std::vector<double> x(static_cast<size_t>(C) * n), d(C), log_w(C), prop(n), samples;
  int stage = 0;
  int started = 0;
  while (!track.done()) {
    // Stage 0's chains start from prior draws; later stages continue from the
    // previous stage's final states (approximately pi_{T_{i-1}}, as fresh draws
    // of q_{i-1} would be, but already evaluated). Their costs set the temperature.
    if (stage == 0) {
      for (int c = 0; c < C && !track.done(); ++c, ++started) {
        q->sample(rng, &x[c * n]);
        d[c] = track(&x[c * n]);
      }
      if (started < 2) break;
    }
    // The ESS step, capped by the gaps the states show: for a quadratic d the
    // Gibbs law has E[d - d*] = n / (2T), so T may not exceed
    // energy * n / (2 mean gap) (gap measured from the best value seen).
    double T_next = T + next_increment(d, started, o.ess, T, o.max_ratio);
    double gap = 0;
    for (int c = 0; c < started; ++c) gap += (d[c] - track.best()) / started;
    if (gap > 0) T_next = std::min(T_next, std::max(T, o.energy * n / (2 * gap)));
    T = T_next;
    for (int c = 0; c < started; ++c)
      log_w[c] = log_prior(&x[c * n], n) - T * d[c] - q->log_density(&x[c * n]);
    samples.clear();
    int64_t accepted = 0, moves = 0;
    for (int s = 1; s <= o.steps && !track.done(); ++s) {
      for (int c = 0; c < started && !track.done(); ++c) {
        q->sample(rng, prop.data());
        const double dp = track(prop.data());
        const double lw = log_prior(prop.data(), n) - T * dp - q->log_density(prop.data());
        const double u = rng.uniform();
        ++moves;
        if (lw >= log_w[c] || std::log(u) < lw - log_w[c]) {
          std::copy(prop.begin(), prop.end(), &x[c * n]);
          d[c] = dp;
          log_w[c] = lw;
          ++accepted;
        }
        if (s > o.burn_in) samples.insert(samples.end(), &x[c * n], &x[c * n] + n);
      }
    }
    if (static_cast<int>(samples.size()) / n < n + 2) break;  // the budget ended inside the stage
    q = fit_density(learner, samples, n, T, f, o.learning);
    spdlog::debug("global aldrift stage {}: T = {:.4g}, acceptance {:.3f}, best {:.3g} after {} evaluations", stage, T,
                  moves ? static_cast<double>(accepted) / moves : 0.0, track.best(), track.evals());
    ++stage;
  }
}

void run_random(Tracker& track, nk::Rng& rng) {
  const int n = track.objective().n;
  const auto prior = make_prior(n);
  std::vector<double> x(n);
  while (!track.done()) {
    prior->sample(rng, x.data());
    track(x.data());
  }
}

namespace {
int population(const GlobalOptions& o, int n) { return o.population > 0 ? o.population : std::max(20, 20 * n); }

/// Draws a population from q (as many as the budget allows) with their costs.
int draw_population(Tracker& track, const Density& q, int P, nk::Rng& rng, std::vector<double>& x, std::vector<double>& d) {
  const int n = track.objective().n;
  x.resize(static_cast<size_t>(P) * n);
  d.resize(P);
  int m = 0;
  for (; m < P && !track.done(); ++m) {
    q.sample(rng, &x[m * n]);
    d[m] = track(&x[m * n]);
  }
  return m;
}
}  // namespace

void run_cem_global(Tracker& track, const GlobalOptions& o, nk::Rng& rng) {
  const int n = track.objective().n;
  const int P = population(o, n);
  Eigen::VectorXd mean = Eigen::VectorXd::Zero(n);
  Eigen::MatrixXd cov = Eigen::MatrixXd::Identity(n, n) * (kPriorSd * kPriorSd);
  std::unique_ptr<Density> q = make_prior(n);
  std::vector<double> x, d;
  while (!track.done()) {
    const int m = draw_population(track, *q, P, rng, x, d);
    const int elite = std::clamp(static_cast<int>(std::ceil(o.elite * m)), 2, m);
    if (m < 2) break;
    std::vector<int> order(m);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + elite, order.end(), [&](int a, int b) { return d[a] < d[b]; });
    std::vector<double> rows;
    for (int e = 0; e < elite; ++e) rows.insert(rows.end(), &x[order[e] * n], &x[order[e] * n] + n);
    Eigen::VectorXd me;
    Eigen::MatrixXd ce;
    weighted_moments(rows, n, {}, me, ce);
    mean = (1 - o.cem_rate) * mean + o.cem_rate * me;
    cov = (1 - o.cem_rate) * cov + o.cem_rate * ce;
    q = std::make_unique<GaussianDensity>(mean, cov);
  }
}

void run_cbas_global(Tracker& track, const GlobalOptions& o, nk::Rng& rng) {
  const int n = track.objective().n;
  const int P = population(o, n);
  std::unique_ptr<Density> q = make_prior(n);
  double gamma = std::numeric_limits<double>::infinity();
  std::vector<double> x, d;
  while (!track.done()) {
    const int m = draw_population(track, *q, P, rng, x, d);
    if (m < 2) break;
    std::vector<double> sorted(d.begin(), d.begin() + m);
    const int k = std::clamp(static_cast<int>(std::ceil(o.quantile * m)) - 1, 0, m - 1);
    std::nth_element(sorted.begin(), sorted.begin() + k, sorted.end());
    gamma = std::min(gamma, sorted[k]);
    // Weights L/q on the draws under the threshold (the prior anchors the search).
    std::vector<double> lw(m, -std::numeric_limits<double>::infinity());
    double top = -std::numeric_limits<double>::infinity();
    for (int j = 0; j < m; ++j)
      if (d[j] <= gamma) top = std::max(top, lw[j] = log_prior(&x[j * n], n) - q->log_density(&x[j * n]));
    std::vector<double> w(m);
    int used = 0;
    for (int j = 0; j < m; ++j) {
      w[j] = std::isfinite(lw[j]) ? std::exp(lw[j] - top) : 0.0;
      used += w[j] > 0;
    }
    if (used < 2) continue;
    x.resize(static_cast<size_t>(m) * n);
    w.resize(m);
    Eigen::VectorXd mean;
    Eigen::MatrixXd cov;
    weighted_moments(x, n, w, mean, cov);
    q = std::make_unique<GaussianDensity>(mean, cov);
  }
}

std::array<double, 3> log_fit(const std::array<int64_t, kCurvePoints>& reach) {
  std::vector<double> xs, ys;
  for (int k = 0; k < kCurvePoints; ++k)
    if (reach[k] >= 0 && curve_eps(k) >= 1e-6 * (1 - 1e-12)) {
      xs.push_back(std::log(1.0 / curve_eps(k)));
      ys.push_back(static_cast<double>(reach[k]));
    }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (xs.size() < 3) return {nan, nan, nan};
  const double m = static_cast<double>(xs.size());
  const double mx = std::accumulate(xs.begin(), xs.end(), 0.0) / m, my = std::accumulate(ys.begin(), ys.end(), 0.0) / m;
  double sxx = 0, sxy = 0, syy = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    sxx += (xs[i] - mx) * (xs[i] - mx);
    sxy += (xs[i] - mx) * (ys[i] - my);
    syy += (ys[i] - my) * (ys[i] - my);
  }
  const double b = sxy / sxx, a = my - b * mx;
  const double r2 = syy > 0 ? sxy * sxy / (sxx * syy) : 1.0;
  return {a, b, r2};
}

}  // namespace ald
