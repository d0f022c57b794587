// snn.cpp - LIF layers over T steps, forward and exact BPTT.
//
// Hidden layer h at step t (rows of a batch, columns of neurons):
//   V[t] = beta U[t-1] + I[t]             pre-reset potential (U[-1] = 0)
//   s[t] = H(V[t] - theta)                spike (sigma(k (V - theta)) in sigmoid mode)
//   U[t] = V[t] - theta s[t]              reset by subtraction, or
//   U[t] = V[t] (1 - s[t])                reset to zero
// with I[t] = x[t] W^T + b, x[t] the previous layer's spikes (or the coded
// input). The readout is linear in the last hidden layer's spike counts:
//   logits = (1/T) (sum_t s[t]) W_out^T + b_out.
// The loss is the mean cross-entropy. Backward, with g = dL/d(.) and s' the
// surrogate derivative at V[t] - theta:
//   gV[t] = gS[t] s' + gU[t] dU/dV,   gU[t-1] = beta gV[t],
//   dU/dV = 1 - theta s' (subtract) or (1 - s) - V s' (zero),
// so the reset path is differentiated too (exact BPTT). Each layer's
// currents for all T steps come from one matrix product, and its weight
// gradient from one more: the time loop itself is element-wise.
#include "snn.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace snn {

int64_t Config::parameter_count() const {
  int64_t n = 0;
  for (size_t l = 0; l + 1 < sizes.size(); ++l) n += sizes[l + 1] * (sizes[l] + 1);
  return n;
}

Reset parse_reset(const std::string& name) {
  if (name == "subtract") return Reset::subtract;
  if (name == "zero") return Reset::zero;
  throw std::invalid_argument("unknown reset '" + name + "' (subtract or zero)");
}
Surrogate parse_surrogate(const std::string& name) {
  if (name == "fast-sigmoid") return Surrogate::fast_sigmoid;
  if (name == "atan") return Surrogate::atan;
  if (name == "sigmoid") return Surrogate::sigmoid;
  throw std::invalid_argument("unknown surrogate '" + name + "' (fast-sigmoid, atan or sigmoid)");
}
Coding parse_coding(const std::string& name) {
  if (name == "direct") return Coding::direct;
  if (name == "rate") return Coding::rate;
  throw std::invalid_argument("unknown coding '" + name + "' (direct or rate)");
}
std::string name_of(Reset r) { return r == Reset::subtract ? "subtract" : "zero"; }
std::string name_of(Surrogate s) {
  return s == Surrogate::fast_sigmoid ? "fast-sigmoid" : s == Surrogate::atan ? "atan" : "sigmoid";
}
std::string name_of(Coding c) { return c == Coding::direct ? "direct" : "rate"; }

Network Network::init(const Config& config, nk::Rng& rng) {
  if (config.sizes.size() < 2) throw std::invalid_argument("a network needs inputs and classes");
  Network net;
  net.config = config;
  for (int64_t l = 0; l < config.layers(); ++l) {
    const int64_t in = config.sizes[static_cast<size_t>(l)], out = config.sizes[static_cast<size_t>(l) + 1];
    // Uniform(-a, a) with a = sqrt(6 / in): currents of order one, so that
    // the first hidden layer fires from the start at threshold 1.
    const double a = std::sqrt(6.0 / static_cast<double>(in));
    Matrix w(out, in);
    for (int64_t i = 0; i < w.size(); ++i) w.data()[i] = static_cast<float>(a * (2 * rng.uniform() - 1));
    net.weight.push_back(std::move(w));
    net.bias.push_back(Vector::Zero(out));
  }
  return net;
}

Eigen::VectorXd Network::flat() const {
  Eigen::VectorXd theta(config.parameter_count());
  Eigen::Index at = 0;
  for (size_t l = 0; l < weight.size(); ++l) {
    theta.segment(at, weight[l].size()) = Eigen::Map<const Eigen::VectorXf>(weight[l].data(), weight[l].size()).cast<double>();
    at += weight[l].size();
    theta.segment(at, bias[l].size()) = bias[l].cast<double>();
    at += bias[l].size();
  }
  return theta;
}

void Network::set_flat(const Eigen::VectorXd& theta) {
  Eigen::Index at = 0;
  for (size_t l = 0; l < weight.size(); ++l) {
    Eigen::Map<Eigen::VectorXf>(weight[l].data(), weight[l].size()) = theta.segment(at, weight[l].size()).cast<float>();
    at += weight[l].size();
    bias[l] = theta.segment(at, bias[l].size()).cast<float>();
    at += bias[l].size();
  }
}

Workspace::Workspace(const Config& c, int64_t batch) : batch_(batch) {
  const int64_t t = c.steps, hidden = c.hidden_layers();
  if (hidden < 1) throw std::invalid_argument("spike-sft networks need at least one hidden LIF layer");
  input.resize(c.coding == Coding::rate ? t * batch : batch, c.sizes[0]);
  int64_t widest = 0;
  for (int64_t h = 0; h < hidden; ++h) {
    const int64_t n = c.sizes[static_cast<size_t>(h) + 1];
    widest = std::max(widest, n);
    const bool shared_current = h == 0 && c.coding == Coding::direct;  // the same current at every step
    current.emplace_back(shared_current ? batch : t * batch, n);
    potential.emplace_back(t * batch, n);
    spikes.emplace_back(t * batch, n);
  }
  logits.resize(batch, c.sizes.back());
  probabilities.resize(batch, c.sizes.back());
  grad_v.resize(t * batch, widest);
  grad_s.resize(t * batch, widest);
  rate_sum.resize(batch, c.sizes[static_cast<size_t>(hidden)]);
}

int64_t Workspace::activation_bytes() const {
  int64_t floats = input.size();
  for (size_t h = 0; h < potential.size(); ++h) floats += current[h].size() + potential[h].size() + spikes[h].size();
  return floats * static_cast<int64_t>(sizeof(float));
}

namespace {

inline float spike_of(Surrogate mode, float slope, float x) {
  if (mode == Surrogate::sigmoid) return 1.0f / (1.0f + std::exp(-slope * x));
  return x > 0.0f ? 1.0f : 0.0f;
}

/// ds/dx at x = V - theta.
inline float derivative_of(Surrogate mode, float slope, float x, float s) {
  switch (mode) {
    case Surrogate::fast_sigmoid: {
      const float d = 1.0f + slope * std::abs(x);
      return 1.0f / (d * d);
    }
    case Surrogate::atan: {
      const float u = 1.5707963267948966f * slope * x;
      return 0.5f * slope / (1.0f + u * u);
    }
    case Surrogate::sigmoid:
      return slope * s * (1.0f - s);
  }
  return 0.0f;
}

}  // namespace

BatchStats forward(const Network& net, const Matrix& x, const int64_t* labels, Workspace& ws, nk::Rng* rng) {
  const Config& c = net.config;
  const int64_t b = x.rows(), t_count = c.steps, hidden = c.hidden_layers();
  if (b != ws.batch_) throw std::invalid_argument("batch size differs from the workspace's");
  // Coded input and the first layer's currents.
  if (c.coding == Coding::direct) {
    ws.input = x;
  } else {
    for (int64_t t = 0; t < t_count; ++t)
      for (int64_t r = 0; r < b; ++r)
        for (int64_t j = 0; j < x.cols(); ++j) ws.input(t * b + r, j) = rng->uniform() < x(r, j) ? 1.0f : 0.0f;
  }
  BatchStats stats;
  for (int64_t h = 0; h < hidden; ++h) {
    const Matrix& in = h == 0 ? ws.input : ws.spikes[static_cast<size_t>(h) - 1];
    Matrix& current = ws.current[static_cast<size_t>(h)];
    current.noalias() = in * net.weight[static_cast<size_t>(h)].transpose();
    current.rowwise() += net.bias[static_cast<size_t>(h)].transpose();
    Matrix& v = ws.potential[static_cast<size_t>(h)];
    Matrix& s = ws.spikes[static_cast<size_t>(h)];
    const int64_t n = v.cols();
    const bool shared = current.rows() == b;
    double fired = 0;
#pragma omp parallel for schedule(static) reduction(+ : fired)
    for (int64_t r = 0; r < b; ++r) {
      for (int64_t j = 0; j < n; ++j) {
        float u = 0.0f;  // U[t-1]
        for (int64_t t = 0; t < t_count; ++t) {
          const int64_t row = t * b + r;
          const float vt = c.beta * u + current(shared ? r : row, j);
          const float st = spike_of(c.surrogate, c.slope, vt - c.threshold);
          v(row, j) = vt;
          s(row, j) = st;
          u = c.reset == Reset::subtract ? vt - c.threshold * st : vt * (1.0f - st);
          fired += st;
        }
      }
    }
    stats.rate.push_back(fired / static_cast<double>(t_count * b * n));
  }
  const Matrix& last = ws.spikes[static_cast<size_t>(hidden) - 1];
  ws.rate_sum.setZero();
  for (int64_t t = 0; t < t_count; ++t) ws.rate_sum += last.middleRows(t * b, b);
  ws.logits.noalias() = (ws.rate_sum / static_cast<float>(t_count)) * net.weight.back().transpose();
  ws.logits.rowwise() += net.bias.back().transpose();
  for (int64_t r = 0; r < b; ++r) {
    const float top = ws.logits.row(r).maxCoeff();
    ws.probabilities.row(r) = (ws.logits.row(r).array() - top).exp();
    const float z = ws.probabilities.row(r).sum();
    ws.probabilities.row(r) /= z;
    if (labels) {
      Eigen::Index best = 0;
      ws.logits.row(r).maxCoeff(&best);
      stats.correct += best == labels[r];
      stats.loss -= std::log(std::max(1e-30, static_cast<double>(ws.probabilities(r, labels[r]))));
    }
  }
  stats.loss /= static_cast<double>(b);
  return stats;
}

void backward(const Network& net, const int64_t* labels, Workspace& ws, const LayerSink& sink) {
  const Config& c = net.config;
  const int64_t b = ws.batch_, t_count = c.steps, hidden = c.hidden_layers();
  // Readout.
  Matrix g_logits = ws.probabilities;
  for (int64_t r = 0; r < b; ++r) g_logits(r, labels[r]) -= 1.0f;
  g_logits /= static_cast<float>(b);
  sink(hidden, g_logits, ws.rate_sum / static_cast<float>(t_count));
  {
    const int64_t n = c.sizes[static_cast<size_t>(hidden)];
    const Matrix per_step = (g_logits * net.weight.back()) / static_cast<float>(t_count);
    for (int64_t t = 0; t < t_count; ++t) ws.grad_s.block(t * b, 0, b, n) = per_step;
  }
  for (int64_t h = hidden - 1; h >= 0; --h) {
    const Matrix& v = ws.potential[static_cast<size_t>(h)];
    const Matrix& s = ws.spikes[static_cast<size_t>(h)];
    const int64_t n = v.cols();
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < b; ++r) {
      for (int64_t j = 0; j < n; ++j) {
        float gu = 0.0f;  // dL/dU[t]
        for (int64_t t = t_count - 1; t >= 0; --t) {
          const int64_t row = t * b + r;
          const float x = v(row, j) - c.threshold, st = s(row, j);
          const float d = derivative_of(c.surrogate, c.slope, x, st);
          const float du_dv = c.reset == Reset::subtract ? 1.0f - c.threshold * d : (1.0f - st) - v(row, j) * d;
          const float gv = ws.grad_s(row, j) * d + gu * du_dv;
          ws.grad_v(row, j) = gv;
          gu = c.beta * gv;
        }
      }
    }
    const auto gv = ws.grad_v.block(0, 0, t_count * b, n);
    if (h == 0 && c.coding == Coding::direct) {
      // The input is the same at every step: sum the steps first.
      Matrix summed = gv.topRows(b);
      for (int64_t t = 1; t < t_count; ++t) summed += gv.middleRows(t * b, b);
      sink(0, summed, ws.input);
    } else {
      sink(h, gv, h == 0 ? ws.input : ws.spikes[static_cast<size_t>(h) - 1]);
    }
    if (h > 0) {
      const int64_t m = c.sizes[static_cast<size_t>(h)];
      ws.grad_s.block(0, 0, t_count * b, m).noalias() = gv * net.weight[static_cast<size_t>(h)];
    }
  }
}

void backward(const Network& net, const int64_t* labels, Workspace& ws, std::vector<Matrix>& gw, std::vector<Vector>& gb) {
  backward(net, labels, ws, [&](int64_t l, const Eigen::Ref<const Matrix>& gv, const Eigen::Ref<const Matrix>& x) {
    gw[static_cast<size_t>(l)].noalias() += gv.transpose() * x;
    gb[static_cast<size_t>(l)] += gv.colwise().sum().transpose();
  });
}

DenseGradient::DenseGradient(const Network& net) : flat_(net.config.parameter_count()) {
  for (size_t l = 0; l < net.weight.size(); ++l) {
    weight.emplace_back(net.weight[l].rows(), net.weight[l].cols());
    bias.emplace_back(net.bias[l].size());
  }
}

void DenseGradient::compute(const Network& net, const int64_t* labels, Workspace& ws) {
  for (Matrix& g : weight) g.setZero();
  for (Vector& g : bias) g.setZero();
  backward(net, labels, ws, weight, bias);
}

const Eigen::VectorXd& DenseGradient::flat() {
  Eigen::Index at = 0;
  for (size_t l = 0; l < weight.size(); ++l) {
    flat_.segment(at, weight[l].size()) = Eigen::Map<const Eigen::VectorXf>(weight[l].data(), weight[l].size()).cast<double>();
    at += weight[l].size();
    flat_.segment(at, bias[l].size()) = bias[l].cast<double>();
    at += bias[l].size();
  }
  return flat_;
}

}  // namespace snn
