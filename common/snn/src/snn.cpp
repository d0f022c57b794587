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
#include "nk/snn/snn.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "nk/kernels/gemm.hpp"

namespace nk::snn {
namespace {

/// Products through nk::kernels (Eigen in the widest instruction set the CPU
/// runs, picked at run time; this library is built for the portable baseline,
/// where Eigen's own products run 4 floats wide) wherever the operands are
/// contiguous row-major blocks; Eigen's otherwise (a block narrower than its
/// workspace, in networks of several hidden layers).
template <typename A, typename B, typename C>
bool dense_rows(const A& a, const B& b, const C& c) {
  return a.outerStride() == a.cols() && b.outerStride() == b.cols() && c.outerStride() == c.cols();
}
/// c = a b^T.
template <typename A, typename B, typename C>
void product_nt(const A& a, const B& b, C&& c) {
  if (dense_rows(a, b, c))
    nk::kernels::gemm_nt(a.data(), b.data(), c.data(), a.rows(), b.rows(), a.cols());
  else
    c.noalias() = a * b.transpose();
}
/// c = a b.
template <typename A, typename B, typename C>
void product_nn(const A& a, const B& b, C&& c) {
  if (dense_rows(a, b, c))
    nk::kernels::gemm(a.data(), b.data(), c.data(), a.rows(), b.cols(), a.cols());
  else
    c.noalias() = a * b;
}
/// c += a^T b.
template <typename A, typename B, typename C>
void add_product_tn(const A& a, const B& b, C&& c) {
  if (dense_rows(a, b, c))
    nk::kernels::gemm_tn(a.data(), b.data(), c.data(), a.cols(), b.cols(), a.rows(), true);
  else
    c.noalias() += a.transpose() * b;
}

}  // namespace

BatchStats forward_conv(const Network& net, const Matrix& x, const int64_t* labels, Workspace& ws, nk::Rng* rng);
void backward_conv(const Network& net, const Matrix& g_top, Output at, Workspace& ws, const LayerSink* sink, Matrix* grad_x);
void backward_dense(const Network& net, const Matrix& g_top, Output at, Workspace& ws, const LayerSink* sink, Matrix* grad_x);
void readout(const Network& net, const int64_t* labels, Workspace& ws, BatchStats& stats);

int64_t Config::weight_rows(int64_t l) const {
  return conv() && l < static_cast<int64_t>(channels.size()) ? channels[static_cast<size_t>(l)] : sizes[static_cast<size_t>(l) + 1];
}

int64_t Config::weight_cols(int64_t l) const {
  return conv() && l < static_cast<int64_t>(channels.size()) ? 9 * map_channels(l) : sizes[static_cast<size_t>(l)];
}

int64_t Config::input_group(int64_t l) const {
  const auto blocks = static_cast<int64_t>(channels.size());
  if (!conv() || l == 0) return 1;
  return l < blocks ? 9 : map_height(blocks) * map_width(blocks);
}

int64_t Config::parameter_count() const {
  int64_t n = 0;
  for (int64_t l = 0; l < layers(); ++l) n += weight_rows(l) * (weight_cols(l) + 1);
  return n;
}

void Config::set_conv(int64_t h, int64_t w, int64_t c, const std::vector<int64_t>& maps, int64_t classes) {
  if (maps.empty()) throw std::invalid_argument("a convolutional network needs at least one block");
  if (h < 1 || w < 1 || c < 1) throw std::invalid_argument("a convolutional network needs an image input");
  for (int64_t m : maps)
    if (m < 1) throw std::invalid_argument("every convolution block needs at least one channel");
  const auto blocks = static_cast<int64_t>(maps.size());
  if (h % (int64_t{1} << blocks) != 0 || w % (int64_t{1} << blocks) != 0)
    throw std::invalid_argument("a " + std::to_string(h) + "x" + std::to_string(w) + " image does not halve evenly through " +
                                std::to_string(blocks) + " pooling blocks");
  height = h;
  width = w;
  in_channels = c;
  channels = maps;
  sizes = {h * w * c};
  for (int64_t b = 0; b < blocks; ++b) sizes.push_back(maps[static_cast<size_t>(b)] * map_height(b + 1) * map_width(b + 1));
  sizes.push_back(classes);
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
    const int64_t in = config.weight_cols(l), out = config.weight_rows(l);
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
  if (c.conv()) {
    for (int64_t h = 0; h < hidden; ++h) {
      const int64_t rows = batch * c.map_height(h) * c.map_width(h), maps = c.weight_rows(h), taps = c.weight_cols(h);
      const bool shared = h == 0 && c.coding == Coding::direct;
      patches.emplace_back(shared ? rows : t * rows, taps);
      current.emplace_back(shared ? rows : t * rows, maps);
      potential.emplace_back(t * rows, maps);
      spikes.emplace_back(t * rows, maps);
      pooled.emplace_back(t * rows / 4, maps);
      conv_grad_v.emplace_back(t * rows, maps);
      conv_grad_s.emplace_back(t * rows, maps);
      grad_patches.emplace_back(h > 0 ? t * rows : 0, taps);
      grad_pooled.emplace_back(t * rows / 4, maps);
    }
    logits.resize(batch, c.sizes.back());
    probabilities.resize(batch, c.sizes.back());
    rate_sum.resize(batch, c.sizes[static_cast<size_t>(hidden)]);
    return;
  }
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
  for (size_t h = 0; h < patches.size(); ++h) floats += patches[h].size() + pooled[h].size();
  return floats * static_cast<int64_t>(sizeof(float));
}

namespace {

template <Surrogate mode>
inline float spike_of(float slope, float x) {
  if constexpr (mode == Surrogate::sigmoid) {
    return 1.0f / (1.0f + std::exp(-slope * x));
  } else {
    return x > 0.0f ? 1.0f : 0.0f;
  }
}

/// ds/dx at x = V - theta.
template <Surrogate mode>
inline float derivative_of(float slope, float x, float s) {
  if constexpr (mode == Surrogate::fast_sigmoid) {
    const float d = 1.0f + slope * std::abs(x);
    return 1.0f / (d * d);
  } else if constexpr (mode == Surrogate::atan) {
    const float u = 1.5707963267948966f * slope * x;
    return 0.5f * slope / (1.0f + u * u);
  } else {
    return slope * s * (1.0f - s);
  }
}

constexpr int64_t kLanes = 64;  ///< neurons per inner loop (one stack array of state each)

/// The LIF recurrence over T steps for every row r < rows_per_step and
/// column j: potentials v and spikes s [T * rows_per_step, n] from the
/// currents (the same at every step when current has rows_per_step rows).
/// The innermost loop runs over up to kLanes neurons of one row and step,
/// so it vectorises; each neuron's operations are those of the equations.
/// Returns the number of spikes.
template <Surrogate mode, Reset reset>
double lif_forward_as(const Config& c, const Matrix& current, int64_t rows_per_step, Matrix& v, Matrix& s) {
  const int64_t n = v.cols(), t_count = c.steps, b = rows_per_step;
  const bool shared = current.rows() == b;
  const float beta = c.beta, threshold = c.threshold, slope = c.slope;
  double fired = 0;
#pragma omp parallel for schedule(static) reduction(+ : fired)
  for (int64_t r = 0; r < b; ++r) {
    for (int64_t j0 = 0; j0 < n; j0 += kLanes) {
      const int64_t lanes = std::min(kLanes, n - j0);
      float u[kLanes] = {}, count[kLanes] = {};  // U[t-1]; spikes so far (exact in float)
      for (int64_t t = 0; t < t_count; ++t) {
        const int64_t row = t * b + r;
        const float* __restrict in = current.data() + (shared ? r : row) * n + j0;
        float* __restrict vt = v.data() + row * n + j0;
        float* __restrict st = s.data() + row * n + j0;
#pragma omp simd
        for (int64_t j = 0; j < lanes; ++j) {
          const float potential = beta * u[j] + in[j];
          const float spike = spike_of<mode>(slope, potential - threshold);
          vt[j] = potential;
          st[j] = spike;
          u[j] = reset == Reset::subtract ? potential - threshold * spike : potential * (1.0f - spike);
          count[j] += spike;
        }
      }
      for (int64_t j = 0; j < lanes; ++j) fired += count[j];
    }
  }
  return fired;
}

/// What the backward pass through the recurrence reads and writes: dL/ds
/// (grad_s, rows over steps and examples, or the same rows at every step
/// when shared: the rate readout's) and dL/dV (grad_v, every step's, or
/// with summed only their sum over the steps, in the first rows_per_step
/// rows: all a layer with the same input at every step needs); both
/// row-major with 'stride' floats per row.
struct LifGrad {
  const float* grad_s;
  bool shared;
  float* grad_v;
  bool summed;
  int64_t stride;
};

/// BPTT through the recurrence, from dL/ds to dL/dV, the reset
/// differentiated.
template <Surrogate mode, Reset reset>
void lif_backward_as(const Config& c, const Matrix& v, const Matrix& s, int64_t rows_per_step, const LifGrad& io) {
  const int64_t n = v.cols(), t_count = c.steps, b = rows_per_step, stride = io.stride;
  const float beta = c.beta, threshold = c.threshold, slope = c.slope;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < b; ++r) {
    for (int64_t j0 = 0; j0 < n; j0 += kLanes) {
      const int64_t lanes = std::min(kLanes, n - j0);
      float gu[kLanes] = {}, sum[kLanes] = {};  // dL/dU[t]; dL/dV summed over the steps so far
      for (int64_t t = t_count - 1; t >= 0; --t) {
        const int64_t row = t * b + r;
        const float* __restrict vt = v.data() + row * n + j0;
        const float* __restrict st = s.data() + row * n + j0;
        const float* __restrict gs = io.grad_s + (io.shared ? r : row) * stride + j0;
        float* __restrict gv = io.grad_v + row * stride + j0;
        const bool per_step = !io.summed;
#pragma omp simd
        for (int64_t j = 0; j < lanes; ++j) {
          const float d = derivative_of<mode>(slope, vt[j] - threshold, st[j]);
          const float du_dv = reset == Reset::subtract ? 1.0f - threshold * d : (1.0f - st[j]) - vt[j] * d;
          const float g = gs[j] * d + gu[j] * du_dv;
          if (per_step) gv[j] = g;
          sum[j] += g;
          gu[j] = beta * g;
        }
      }
      if (io.summed) std::copy(sum, sum + lanes, io.grad_v + r * stride + j0);
    }
  }
}

template <Reset reset>
double lif_forward_reset(const Config& c, const Matrix& current, int64_t rows, Matrix& v, Matrix& s) {
  switch (c.surrogate) {
    case Surrogate::fast_sigmoid: return lif_forward_as<Surrogate::fast_sigmoid, reset>(c, current, rows, v, s);
    case Surrogate::atan: return lif_forward_as<Surrogate::atan, reset>(c, current, rows, v, s);
    case Surrogate::sigmoid: break;
  }
  return lif_forward_as<Surrogate::sigmoid, reset>(c, current, rows, v, s);
}

double lif_forward(const Config& c, const Matrix& current, int64_t rows, Matrix& v, Matrix& s) {
  return c.reset == Reset::subtract ? lif_forward_reset<Reset::subtract>(c, current, rows, v, s)
                                    : lif_forward_reset<Reset::zero>(c, current, rows, v, s);
}

template <Reset reset>
void lif_backward_reset(const Config& c, const Matrix& v, const Matrix& s, int64_t rows, const LifGrad& io) {
  switch (c.surrogate) {
    case Surrogate::fast_sigmoid: return lif_backward_as<Surrogate::fast_sigmoid, reset>(c, v, s, rows, io);
    case Surrogate::atan: return lif_backward_as<Surrogate::atan, reset>(c, v, s, rows, io);
    case Surrogate::sigmoid: break;
  }
  lif_backward_as<Surrogate::sigmoid, reset>(c, v, s, rows, io);
}

void lif_backward(const Config& c, const Matrix& v, const Matrix& s, int64_t rows, const LifGrad& io) {
  if (c.reset == Reset::subtract)
    lif_backward_reset<Reset::subtract>(c, v, s, rows, io);
  else
    lif_backward_reset<Reset::zero>(c, v, s, rows, io);
}

/// The coded input: x itself (direct coding, the same at every step), or
/// Bernoulli spikes with x's values as probabilities, drawn at every step.
void code_input(const Config& c, const Matrix& x, Matrix& input, nk::Rng* rng) {
  const int64_t b = x.rows();
  if (c.coding == Coding::direct) {
    input = x;
    return;
  }
  for (int64_t t = 0; t < c.steps; ++t)
    for (int64_t r = 0; r < b; ++r)
      for (int64_t j = 0; j < x.cols(); ++j) input(t * b + r, j) = rng->uniform() < x(r, j) ? 1.0f : 0.0f;
}

/// dL/dlogits of the mean cross-entropy: (softmax - one-hot) / B.
Matrix logits_gradient(const Matrix& probabilities, const int64_t* labels) {
  Matrix g = probabilities;
  for (int64_t r = 0; r < g.rows(); ++r) g(r, labels[r]) -= 1.0f;
  return g / static_cast<float>(g.rows());
}

}  // namespace

BatchStats forward(const Network& net, const Matrix& x, const int64_t* labels, Workspace& ws, nk::Rng* rng, const Matrix* first_currents) {
  const Config& c = net.config;
  const int64_t b = x.rows(), t_count = c.steps, hidden = c.hidden_layers();
  if (b != ws.batch_) throw std::invalid_argument("batch size differs from the workspace's");
  if (first_currents && (c.conv() || c.coding != Coding::direct || first_currents->rows() != b || first_currents->cols() != c.sizes[1]))
    throw std::invalid_argument("given first-layer currents need a dense first layer under direct coding, [batch, units]");
  if (c.conv()) return forward_conv(net, x, labels, ws, rng);
  // Coded input and the first layer's currents.
  code_input(c, x, ws.input, rng);
  BatchStats stats;
  for (int64_t h = 0; h < hidden; ++h) {
    const Matrix& in = h == 0 ? ws.input : ws.spikes[static_cast<size_t>(h) - 1];
    Matrix& current = ws.current[static_cast<size_t>(h)];
    if (h == 0 && first_currents) {
      current = *first_currents;
    } else {
      product_nt(in, net.weight[static_cast<size_t>(h)], current);
      current.rowwise() += net.bias[static_cast<size_t>(h)].transpose();
    }
    Matrix& v = ws.potential[static_cast<size_t>(h)];
    const double fired = lif_forward(c, current, b, v, ws.spikes[static_cast<size_t>(h)]);
    const int64_t n = v.cols();
    stats.rate.push_back(fired / static_cast<double>(t_count * b * n));
  }
  const Matrix& last = ws.spikes[static_cast<size_t>(hidden) - 1];
  ws.rate_sum.setZero();
  for (int64_t t = 0; t < t_count; ++t) ws.rate_sum += last.middleRows(t * b, b);
  readout(net, labels, ws, stats);
  return stats;
}

void readout(const Network& net, const int64_t* labels, Workspace& ws, BatchStats& stats) {
  const int64_t b = ws.batch_;
  ws.logits.noalias() = (ws.rate_sum / static_cast<float>(net.config.steps)) * net.weight.back().transpose();
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
}

void backward(const Network& net, const int64_t* labels, Workspace& ws, const LayerSink& sink) {
  const Matrix g_logits = logits_gradient(ws.probabilities, labels);
  if (net.config.conv()) return backward_conv(net, g_logits, Output::logits, ws, &sink, nullptr);
  backward_dense(net, g_logits, Output::logits, ws, &sink, nullptr);
}

void input_gradient(const Network& net, Workspace& ws, Output at, const Matrix& g, Matrix& grad_x) {
  const Config& c = net.config;
  const int64_t b = ws.batch_;
  const int64_t width = at == Output::logits ? c.sizes.back() : c.sizes[static_cast<size_t>(c.hidden_layers())];
  if (g.rows() != b || g.cols() != width) throw std::invalid_argument("input_gradient: g is not [batch, outputs]");
  grad_x.resize(b, c.sizes[0]);
  if (c.conv()) return backward_conv(net, g, at, ws, nullptr, &grad_x);
  backward_dense(net, g, at, ws, nullptr, &grad_x);
}

void backward_dense(const Network& net, const Matrix& g_top, Output at, Workspace& ws, const LayerSink* sink, Matrix* grad_x) {
  const Config& c = net.config;
  const int64_t b = ws.batch_, t_count = c.steps, hidden = c.hidden_layers();
  // The readout, or the rates themselves: dL/ds of the last hidden layer is
  // the same at every step, so its B rows serve all T.
  {
    const int64_t n = c.sizes[static_cast<size_t>(hidden)];
    if (at == Output::logits) {
      if (sink) (*sink)(hidden, g_top, ws.rate_sum / static_cast<float>(t_count));
      ws.grad_s.block(0, 0, b, n).noalias() = (g_top * net.weight.back()) / static_cast<float>(t_count);
    } else {
      ws.grad_s.block(0, 0, b, n) = g_top / static_cast<float>(t_count);
    }
  }
  for (int64_t h = hidden - 1; h >= 0; --h) {
    const Matrix& v = ws.potential[static_cast<size_t>(h)];
    const int64_t n = v.cols();
    // The first layer's input is the same at every step under direct
    // coding: only dL/dV summed over the steps is needed there.
    const bool summed = h == 0 && c.coding == Coding::direct;
    lif_backward(c, v, ws.spikes[static_cast<size_t>(h)], b, {ws.grad_s.data(), h == hidden - 1, ws.grad_v.data(), summed, ws.grad_v.cols()});
    const auto gv = ws.grad_v.block(0, 0, summed ? b : t_count * b, n);
    if (sink) (*sink)(h, gv, h == 0 ? ws.input : ws.spikes[static_cast<size_t>(h) - 1]);
    if (h > 0) {
      const int64_t m = c.sizes[static_cast<size_t>(h)];
      product_nn(gv, net.weight[static_cast<size_t>(h)], ws.grad_s.block(0, 0, t_count * b, m));
    } else if (grad_x) {
      if (summed) {
        product_nn(gv, net.weight[0], *grad_x);
      } else {
        // Rate coding: the coded input's gradient summed over the steps
        // (straight through the Bernoulli draws, whose mean is x).
        const Matrix per_step = gv * net.weight[0];
        grad_x->setZero();
        for (int64_t t = 0; t < t_count; ++t) *grad_x += per_step.middleRows(t * b, b);
      }
    }
  }
}

namespace {

// Maps of 'frames' frames (a step of one example), rows (frame, y, x) and
// columns by channel, row-major.

/// The 3x3 neighbourhood of every position (zeros past the border), column
/// c*9 + 3*dy + dx for input channel c.
void im2col(const float* in, int64_t frames, int64_t height, int64_t width, int64_t channels, Matrix& patches) {
  const int64_t taps = 9 * channels;
#pragma omp parallel for schedule(static)
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t y = 0; y < height; ++y)
      for (int64_t x = 0; x < width; ++x) {
        float* row = patches.data() + ((f * height + y) * width + x) * taps;
        for (int64_t dy = 0; dy < 3; ++dy)
          for (int64_t dx = 0; dx < 3; ++dx) {
            const int64_t yy = y + dy - 1, xx = x + dx - 1;
            const bool inside = yy >= 0 && yy < height && xx >= 0 && xx < width;
            const float* pixel = inside ? in + ((f * height + yy) * width + xx) * channels : nullptr;
            for (int64_t c = 0; c < channels; ++c) row[c * 9 + dy * 3 + dx] = inside ? pixel[c] : 0.0f;
          }
      }
}

/// The adjoint of im2col: every patch entry's gradient added to its source.
void col2im(const Matrix& grad_patches, int64_t frames, int64_t height, int64_t width, int64_t channels, float* grad_in) {
  const int64_t taps = 9 * channels;
#pragma omp parallel for schedule(static)
  for (int64_t f = 0; f < frames; ++f) {
    std::fill(grad_in + f * height * width * channels, grad_in + (f + 1) * height * width * channels, 0.0f);
    for (int64_t y = 0; y < height; ++y)
      for (int64_t x = 0; x < width; ++x) {
        const float* row = grad_patches.data() + ((f * height + y) * width + x) * taps;
        for (int64_t dy = 0; dy < 3; ++dy)
          for (int64_t dx = 0; dx < 3; ++dx) {
            const int64_t yy = y + dy - 1, xx = x + dx - 1;
            if (yy < 0 || yy >= height || xx < 0 || xx >= width) continue;
            float* pixel = grad_in + ((f * height + yy) * width + xx) * channels;
            for (int64_t c = 0; c < channels; ++c) pixel[c] += row[c * 9 + dy * 3 + dx];
          }
      }
  }
}

/// 2x2 average pooling, and its adjoint (each input gets a quarter).
void pool(const Matrix& in, int64_t frames, int64_t height, int64_t width, Matrix& out) {
  const int64_t channels = in.cols(), h2 = height / 2, w2 = width / 2;
#pragma omp parallel for schedule(static)
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t y = 0; y < h2; ++y)
      for (int64_t x = 0; x < w2; ++x) {
        float* o = out.data() + ((f * h2 + y) * w2 + x) * channels;
        const float* a = in.data() + ((f * height + 2 * y) * width + 2 * x) * channels;
        const float* b = a + width * channels;
        for (int64_t c = 0; c < channels; ++c) o[c] = 0.25f * (a[c] + a[channels + c] + b[c] + b[channels + c]);
      }
}

void unpool(const Matrix& grad_out, int64_t frames, int64_t height, int64_t width, Matrix& grad_in) {
  const int64_t channels = grad_in.cols(), h2 = height / 2, w2 = width / 2;
#pragma omp parallel for schedule(static)
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t y = 0; y < height; ++y)
      for (int64_t x = 0; x < width; ++x) {
        const float* g = grad_out.data() + ((f * h2 + y / 2) * w2 + x / 2) * channels;
        float* o = grad_in.data() + ((f * height + y) * width + x) * channels;
        for (int64_t c = 0; c < channels; ++c) o[c] = 0.25f * g[c];
      }
}

}  // namespace

// The convolutional network: each block's currents for all steps come from
// one product of its patches with the kernels, the LIF recurrence runs per
// position and channel as in the dense layers, and the readout takes the
// last block's pooled spike counts, flattened channel-major (unit c * P + p
// for channel c at pooled position p).
BatchStats forward_conv(const Network& net, const Matrix& x, const int64_t* labels, Workspace& ws, nk::Rng* rng) {
  const Config& c = net.config;
  const int64_t b = x.rows(), t_count = c.steps, blocks = c.hidden_layers();
  const bool direct = c.coding == Coding::direct;
  code_input(c, x, ws.input, rng);
  BatchStats stats;
  const float* in = ws.input.data();
  for (int64_t h = 0; h < blocks; ++h) {
    const auto k = static_cast<size_t>(h);
    const int64_t height = c.map_height(h), width = c.map_width(h), frames = (h == 0 && direct) ? b : t_count * b;
    im2col(in, frames, height, width, c.map_channels(h), ws.patches[k]);
    product_nt(ws.patches[k], net.weight[k], ws.current[k]);
    ws.current[k].rowwise() += net.bias[k].transpose();
    const double fired = lif_forward(c, ws.current[k], b * height * width, ws.potential[k], ws.spikes[k]);
    stats.rate.push_back(fired / static_cast<double>(ws.spikes[k].size()));
    pool(ws.spikes[k], t_count * b, height, width, ws.pooled[k]);
    in = ws.pooled[k].data();
  }
  const Matrix& last = ws.pooled.back();
  const int64_t maps = last.cols(), positions = c.map_height(blocks) * c.map_width(blocks);
  ws.rate_sum.setZero();
  for (int64_t t = 0; t < t_count; ++t)
    for (int64_t r = 0; r < b; ++r)
      for (int64_t p = 0; p < positions; ++p)
        for (int64_t m = 0; m < maps; ++m) ws.rate_sum(r, m * positions + p) += last((t * b + r) * positions + p, m);
  readout(net, labels, ws, stats);
  return stats;
}

void backward_conv(const Network& net, const Matrix& g_top, Output at, Workspace& ws, const LayerSink* sink, Matrix* grad_x) {
  const Config& c = net.config;
  const int64_t b = ws.batch_, t_count = c.steps, blocks = c.hidden_layers();
  if (sink && at == Output::logits) (*sink)(blocks, g_top, ws.rate_sum / static_cast<float>(t_count));
  {
    const Matrix per_step = at == Output::logits ? Matrix((g_top * net.weight.back()) / static_cast<float>(t_count))
                                                 : Matrix(g_top / static_cast<float>(t_count));
    Matrix& g = ws.grad_pooled.back();
    const int64_t maps = g.cols(), positions = c.map_height(blocks) * c.map_width(blocks);
    for (int64_t t = 0; t < t_count; ++t)
      for (int64_t r = 0; r < b; ++r)
        for (int64_t p = 0; p < positions; ++p)
          for (int64_t m = 0; m < maps; ++m) g((t * b + r) * positions + p, m) = per_step(r, m * positions + p);
  }
  for (int64_t h = blocks - 1; h >= 0; --h) {
    const auto k = static_cast<size_t>(h);
    const int64_t height = c.map_height(h), width = c.map_width(h), rows = b * height * width;
    unpool(ws.grad_pooled[k], t_count * b, height, width, ws.conv_grad_s[k]);
    Matrix& gv = ws.conv_grad_v[k];
    // The input is the same at every step under direct coding: only dL/dV
    // summed over the steps is needed for the first block.
    const bool summed = h == 0 && c.coding == Coding::direct;
    lif_backward(c, ws.potential[k], ws.spikes[k], rows, {ws.conv_grad_s[k].data(), false, gv.data(), summed, gv.cols()});
    if (sink) (*sink)(h, summed ? gv.topRows(rows) : gv.topRows(t_count * rows), ws.patches[k]);
    if (h > 0) {
      product_nn(gv, net.weight[k], ws.grad_patches[k]);
      col2im(ws.grad_patches[k], t_count * b, height, width, c.map_channels(h), ws.grad_pooled[k - 1].data());
    } else if (grad_x) {
      // The image's gradient: the patches' gradient back onto the pixels
      // (summed over the steps under rate coding, straight through the draws).
      const int64_t frames = summed ? b : t_count * b, pixels = height * width * c.in_channels;
      const Matrix grad_patches = (summed ? gv.topRows(rows) : gv.topRows(t_count * rows)) * net.weight[0];
      Matrix per_frame(frames, pixels);
      col2im(grad_patches, frames, height, width, c.in_channels, per_frame.data());
      grad_x->setZero();
      for (int64_t f = 0; f < frames; ++f) grad_x->row(f % b) += per_frame.row(f);
    }
  }
}

void backward(const Network& net, const int64_t* labels, Workspace& ws, std::vector<Matrix>& gw, std::vector<Vector>& gb) {
  backward(net, labels, ws, [&](int64_t l, const Eigen::Ref<const Matrix>& gv, const Eigen::Ref<const Matrix>& x) {
    add_product_tn(gv, x, gw[static_cast<size_t>(l)]);
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

}  // namespace nk::snn
