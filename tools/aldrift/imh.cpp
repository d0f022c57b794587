// imh.cpp - independence Metropolis-Hastings: chains, and the exact law.
#include "aldrift/imh.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace ald {

IndependenceKernel::IndependenceKernel(const std::vector<double>& log_q, const std::vector<double>& log_pi) {
  const int64_t N = static_cast<int64_t>(log_q.size());
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> log_w(N);
  q_.resize(N);
  pi_.resize(N);
  inv_w_.assign(N, 0.0);
  for (int64_t s = 0; s < N; ++s) {
    q_[s] = std::exp(log_q[s]);
    pi_[s] = std::exp(log_pi[s]);
    if (pi_[s] <= 0) log_w[s] = -inf;        // never a target: w = 0
    else if (q_[s] <= 0) log_w[s] = inf;     // never proposed: w = infinity
    else log_w[s] = log_pi[s] - log_q[s];
    if (std::isfinite(log_w[s])) inv_w_[s] = std::exp(-log_w[s]);
    if (pi_[s] > 0) coverage_ = std::max(coverage_, std::exp(log_w[s]));
  }
  order_.resize(N);
  std::iota(order_.begin(), order_.end(), int64_t{0});
  std::stable_sort(order_.begin(), order_.end(), [&](int64_t a, int64_t b) { return log_w[a] < log_w[b]; });
  group_begin_.resize(N);
  group_end_.resize(N);
  for (int64_t i = 0; i < N;) {
    int64_t j = i;
    while (j < N && log_w[order_[j]] == log_w[order_[i]]) ++j;
    for (int64_t k = i; k < j; ++k) {
      group_begin_[k] = i;
      group_end_[k] = j;
    }
    i = j;
  }
  // a(y) = P(move away from y) = sum_{z != y, w(z) >= w(y)} q(z) + sum_{w(z) < w(y)} pi(z) / w(y).
  std::vector<double> q_prefix(N + 1, 0.0), pi_prefix(N + 1, 0.0);
  for (int64_t i = 0; i < N; ++i) {
    q_prefix[i + 1] = q_prefix[i] + q_[order_[i]];
    pi_prefix[i + 1] = pi_prefix[i] + pi_[order_[i]];
  }
  accept_.resize(N);
  for (int64_t i = 0; i < N; ++i) {
    const int64_t y = order_[i];
    const double q_ge = q_prefix[N] - q_prefix[group_begin_[i]];
    const double pi_lt = pi_prefix[group_begin_[i]];
    accept_[y] = std::clamp(q_ge - q_[y] + pi_lt * inv_w_[y], 0.0, 1.0);
  }
}

std::vector<double> IndependenceKernel::step(const std::vector<double>& mu) const {
  const int64_t N = static_cast<int64_t>(mu.size());
  // Over sorted positions: S_le = mass of mu at w <= w(y); T_gt = sum mu/w at w > w(y).
  std::vector<double> mu_prefix(N + 1, 0.0), scaled_suffix(N + 1, 0.0);
  for (int64_t i = 0; i < N; ++i) mu_prefix[i + 1] = mu_prefix[i] + mu[order_[i]];
  for (int64_t i = N - 1; i >= 0; --i) scaled_suffix[i] = scaled_suffix[i + 1] + mu[order_[i]] * inv_w_[order_[i]];
  std::vector<double> out(N);
  for (int64_t i = 0; i < N; ++i) {
    const int64_t y = order_[i];
    const double s_le = mu_prefix[group_end_[i]] - mu[y];
    const double t_gt = scaled_suffix[group_end_[i]];
    out[y] = q_[y] * s_le + (t_gt > 0 ? pi_[y] * t_gt : 0.0) + mu[y] * (1.0 - accept_[y]);
  }
  return out;
}

std::vector<double> sample_law(const IndependenceKernel& P, const std::vector<double>& mu0, int steps, int burn_in) {
  std::vector<double> mu = mu0, law(mu0.size(), 0.0);
  const int kept = steps - burn_in;
  for (int m = 1; m <= steps; ++m) {
    mu = P.step(mu);
    if (m > burn_in)
      for (size_t s = 0; s < mu.size(); ++s) law[s] += mu[s] / kept;
  }
  return law;
}

double total_variation(const std::vector<double>& a, const std::vector<double>& b) {
  double t = 0;
  for (size_t i = 0; i < a.size(); ++i) t += std::abs(a[i] - b[i]);
  return 0.5 * t;
}

std::vector<double> exp_all(const std::vector<double>& log_p) {
  std::vector<double> p(log_p.size());
  for (size_t i = 0; i < p.size(); ++i) p[i] = std::exp(log_p[i]);
  return p;
}

ChainRun run_chains(const Problem& p, const Model& q, double T, int64_t chains, int steps, int burn_in,
                    const nk::Rng& rng) {
  const int n = p.n;
  const int kept = steps - burn_in;
  ChainRun run;
  run.samples.resize(static_cast<size_t>(chains) * kept * n);
  run.evaluations = chains * (steps + 1);
  int64_t accepted = 0;
  const Model prior = Model::from_prior(p);
#pragma omp parallel for schedule(static) reduction(+ : accepted)
  for (int64_t c = 0; c < chains; ++c) {
    nk::Rng r = rng.split(static_cast<uint64_t>(c));
    std::vector<int> s(n), t(n);
    q.sample(r, s.data());
    // log of the importance weight pi/q up to a constant: log L - T d - log q.
    double log_w = prior.log_prob(s.data()) - T * p.cost[encode(s.data(), p.A, n)] - q.log_prob(s.data());
    for (int m = 1; m <= steps; ++m) {
      q.sample(r, t.data());
      const double log_w_new = prior.log_prob(t.data()) - T * p.cost[encode(t.data(), p.A, n)] - q.log_prob(t.data());
      const double u = r.uniform();
      if (log_w_new >= log_w || std::log(u) < log_w_new - log_w) {
        s.swap(t);
        log_w = log_w_new;
        ++accepted;
      }
      if (m > burn_in) std::copy(s.begin(), s.end(), &run.samples[(static_cast<size_t>(c) * kept + (m - burn_in - 1)) * n]);
    }
  }
  run.acceptance = steps > 0 ? static_cast<double>(accepted) / static_cast<double>(chains * steps) : 0.0;
  return run;
}

}  // namespace ald
