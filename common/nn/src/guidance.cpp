// guidance.cpp - none, DPS and NDTM guides over a flow prior (guidance.hpp).
#include "nk/nn/guidance.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace nk::nn {

void UNetField::velocity(const float* x, float t, int64_t batch, float* v) {
  if (batch > ws_.capacity()) throw std::invalid_argument("UNetField: batch above capacity");
  if (net_.config().cond_dim > 0 && !cond_) throw std::invalid_argument("UNetField: a conditional U-Net without condition()");
  std::fill(t_.begin(), t_.begin() + batch, t);
  forward(net_, x, t_.data(), net_.config().cond_dim > 0 ? cond_ : static_cast<const float*>(nullptr), batch, ws_);
  const int64_t n = batch * net_.config().image.size();
  std::copy(ws_.output(), ws_.output() + n, v);
}

void UNetField::velocity_vjp(const float* g, int64_t batch, float* dx) {
  if (batch != ws_.batch) throw std::invalid_argument("UNetField: the VJP's batch differs from the last velocity's");
  backward(net_, g, ws_, static_cast<UNetGradients<float>*>(nullptr), dx);
}

namespace {

// grad_x c(xhat(x, t)) with xhat = x + (1 - t) v(x, t): the cost's gradient
// g at xhat, plus (1 - t) g^T dv/dx. 'v' is v(x, t) from the caller's last
// velocity() at x. Writes the per-item costs.
void endpoint_gradient(FlowField& prior, TerminalCost& cost, const float* x, const float* v, float t, int64_t batch,
                       int64_t dim, std::vector<float>& xhat, std::vector<float>& g, std::vector<float>& jg,
                       std::vector<double>& c, float* grad, GuideCounts& counts) {
  const int64_t n = batch * dim;
  for (int64_t j = 0; j < n; ++j) xhat[j] = x[j] + (1 - t) * v[j];
  cost.evaluate(xhat.data(), batch, c.data(), g.data());
  ++counts.costs;
  prior.velocity_vjp(g.data(), batch, jg.data());
  ++counts.backwards;
  for (int64_t j = 0; j < n; ++j) grad[j] = g[j] + (1 - t) * jg[j];
}

}  // namespace

GuideCounts guided_sample(FlowField& prior, TerminalCost& cost, float* x, int64_t batch, int64_t dim,
                          const GuideConfig& config) {
  if (config.steps <= 0) throw std::invalid_argument("guided_sample: steps must be positive");
  const int64_t n = batch * dim;
  const double h = 1.0 / static_cast<double>(config.steps);
  std::vector<float> v(n), y(n), u(n), grad(n), xhat(n), g(n), jg(n), m(n);
  std::vector<double> c(static_cast<size_t>(batch)), second(static_cast<size_t>(batch));
  GuideCounts counts;
  for (int64_t step = 0; step < config.steps; ++step) {
    const auto t = static_cast<float>(static_cast<double>(step) * h);
    if (config.guide == Guide::none) {
      prior.velocity(x, t, batch, v.data());
      ++counts.forwards;
      for (int64_t j = 0; j < n; ++j) x[j] += static_cast<float>(h) * v[j];
      continue;
    }
    if (config.guide == Guide::dps) {
      prior.velocity(x, t, batch, v.data());
      ++counts.forwards;
      endpoint_gradient(prior, cost, x, v.data(), t, batch, dim, xhat, g, jg, c, grad.data(), counts);
      for (int64_t b = 0; b < batch; ++b) {
        // grad sqrt(c) = grad c / (2 sqrt(c)).
        const double scale = config.zeta / (2 * std::sqrt(std::max(c[b], 1e-30)));
        for (int64_t j = b * dim; j < (b + 1) * dim; ++j) {
          x[j] += static_cast<float>(h * v[j] - scale * grad[j]);
        }
      }
      continue;
    }
    // ndtm: Adam on the control u from zero, rate eta s_t decaying linearly
    // over the inner steps; the second moment is one number per item (the
    // mean square of its gradient), so a step keeps the gradient's direction.
    const double s = config.kappa * (1.0 - static_cast<double>(t)) + config.kappa_min;
    const double rate = config.eta * s, inv_s2 = 1.0 / (s * s);
    std::fill(u.begin(), u.end(), 0.0f);
    std::fill(m.begin(), m.end(), 0.0f);
    std::fill(second.begin(), second.end(), 0.0);
    constexpr double b1 = 0.9, b2 = 0.999, eps = 1e-12;
    for (int64_t k = 1; k <= config.inner; ++k) {
      for (int64_t j = 0; j < n; ++j) y[j] = x[j] + u[j];
      prior.velocity(y.data(), t, batch, v.data());
      ++counts.forwards;
      endpoint_gradient(prior, cost, y.data(), v.data(), t, batch, dim, xhat, g, jg, c, grad.data(), counts);
      const double c1 = 1 - std::pow(b1, static_cast<double>(k)), c2 = 1 - std::pow(b2, static_cast<double>(k));
      const double step_rate = rate * static_cast<double>(config.inner - k + 1) / static_cast<double>(config.inner);
      for (int64_t b = 0; b < batch; ++b) {
        double sq = 0;
        for (int64_t j = b * dim; j < (b + 1) * dim; ++j) {
          const double gj = config.lambda * grad[j] + inv_s2 * u[j];
          grad[j] = static_cast<float>(gj);
          sq += gj * gj;
        }
        second[b] = b2 * second[b] + (1 - b2) * sq / static_cast<double>(dim);
        const double scale = step_rate / c1 / (std::sqrt(second[b] / c2) + eps);
        for (int64_t j = b * dim; j < (b + 1) * dim; ++j) {
          m[j] = static_cast<float>(b1 * m[j] + (1 - b1) * grad[j]);
          u[j] -= static_cast<float>(scale * m[j]);
        }
      }
    }
    for (int64_t j = 0; j < n; ++j) y[j] = x[j] + u[j];
    prior.velocity(y.data(), t, batch, v.data());
    ++counts.forwards;
    for (int64_t j = 0; j < n; ++j) x[j] = y[j] + static_cast<float>(h) * v[j];
  }
  return counts;
}

}  // namespace nk::nn
