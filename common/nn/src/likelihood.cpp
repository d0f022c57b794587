// likelihood.cpp - probability-flow log-likelihood (likelihood.hpp).
#include "nk/nn/likelihood.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>

#include "nk/rng.hpp"

namespace nk::nn {

namespace {

// div v at (x, t) with v written to 'v'; eps [probes, batch, D] fixed
// Rademacher vectors (empty: exact trace).
void velocity_and_divergence(FlowField& field, const float* x, float t, int64_t batch, int64_t dim,
                             const std::vector<std::vector<float>>& eps, float* v, double* div, LikelihoodResult& r) {
  field.velocity(x, t, batch, v);
  ++r.forwards;
  std::vector<float> g(static_cast<size_t>(batch * dim)), jt(g.size());
  for (int64_t b = 0; b < batch; ++b) div[b] = 0;
  if (eps.empty()) {
    for (int64_t k = 0; k < dim; ++k) {
      std::fill(g.begin(), g.end(), 0.0f);
      for (int64_t b = 0; b < batch; ++b) g[b * dim + k] = 1.0f;
      field.velocity_vjp(g.data(), batch, jt.data());
      ++r.backwards;
      for (int64_t b = 0; b < batch; ++b) div[b] += jt[b * dim + k];
    }
    return;
  }
  for (const auto& e : eps) {
    field.velocity_vjp(e.data(), batch, jt.data());
    ++r.backwards;
    for (int64_t b = 0; b < batch; ++b) {
      double s = 0;
      for (int64_t j = 0; j < dim; ++j) s += static_cast<double>(e[b * dim + j]) * jt[b * dim + j];
      div[b] += s / static_cast<double>(eps.size());
    }
  }
}

std::vector<std::vector<float>> rademacher(int64_t probes, int64_t batch, int64_t dim, uint64_t seed) {
  std::vector<std::vector<float>> eps(static_cast<size_t>(probes));
  Rng rng(seed);
  for (auto& e : eps) {
    e.resize(static_cast<size_t>(batch * dim));
    for (auto& v : e) v = rng.uniform() < 0.5 ? -1.0f : 1.0f;
  }
  return eps;
}

}  // namespace

std::vector<double> divergence(FlowField& field, const float* x, float t, int64_t batch, int64_t dim, int64_t probes,
                               uint64_t seed) {
  if (probes < 0) throw std::invalid_argument("divergence: probes < 0");
  std::vector<float> v(static_cast<size_t>(batch * dim));
  std::vector<double> div(static_cast<size_t>(batch));
  LikelihoodResult r;
  velocity_and_divergence(field, x, t, batch, dim, rademacher(probes, batch, dim, seed), v.data(), div.data(), r);
  return div;
}

LikelihoodResult log_likelihood(FlowField& field, const float* x1, int64_t batch, int64_t dim, int64_t steps, int64_t probes,
                                uint64_t seed) {
  if (steps < 1 || probes < 0) throw std::invalid_argument("log_likelihood: steps < 1 or probes < 0");
  LikelihoodResult r;
  const auto eps = rademacher(probes, batch, dim, seed);
  const size_t n = static_cast<size_t>(batch * dim);
  std::vector<float> x(x1, x1 + n), xp(n), v(n), vp(n);
  std::vector<double> integral(static_cast<size_t>(batch), 0.0), div(integral.size()), divp(integral.size());
  // Times t_k = 1 - (k / steps)^2 from t = 1 down to 0: short steps near the
  // data, where the velocity of a sharp (dequantised 8-bit) density changes fastest.
  auto time = [&](int64_t k) {
    const double u = static_cast<double>(k) / static_cast<double>(steps);
    return 1.0 - u * u;
  };
  for (int64_t k = 0; k < steps; ++k) {
    const double h = time(k) - time(k + 1);
    const float t = static_cast<float>(time(k)), tp = static_cast<float>(time(k + 1));
    velocity_and_divergence(field, x.data(), t, batch, dim, eps, v.data(), div.data(), r);
    for (size_t j = 0; j < n; ++j) xp[j] = static_cast<float>(x[j] - h * v[j]);
    velocity_and_divergence(field, xp.data(), tp, batch, dim, eps, vp.data(), divp.data(), r);
    for (size_t j = 0; j < n; ++j) x[j] = static_cast<float>(x[j] - 0.5 * h * (v[j] + vp[j]));
    for (int64_t b = 0; b < batch; ++b) integral[b] += 0.5 * h * (div[b] + divp[b]);
  }
  r.log_density.resize(static_cast<size_t>(batch));
  const double log2pi = std::log(2 * std::numbers::pi);
  for (int64_t b = 0; b < batch; ++b) {
    double sq = 0;
    for (int64_t j = 0; j < dim; ++j) sq += static_cast<double>(x[b * dim + j]) * x[b * dim + j];
    r.log_density[b] = -0.5 * (static_cast<double>(dim) * log2pi + sq) - integral[b];
  }
  return r;
}

}  // namespace nk::nn
