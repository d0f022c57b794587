// flow.cpp - flow-matching training of a U-Net, its loss, and the samplers
// (flow.hpp).
#include "nk/nn/flow.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "nk/kernels/vector.hpp"
#include "nk/nn/optim.hpp"
#include "nk/rng.hpp"
#include "nk/timer.hpp"

namespace nk::nn {

namespace {

// One trainable tensor of the U-Net: its values, gradient and Adam moments.
struct Tensor {
  std::vector<float>* value;
  std::vector<float>* grad;
  std::vector<float> m, v;
  bool decays;
};

std::vector<Tensor> tensors_of(UNet<float>& net, UNetGradients<float>& grads) {
  std::vector<Tensor> out;
  for (size_t p = 0; p < net.parts.size(); ++p)
    for (size_t i = 0; i < net.parts[p].layers.size(); ++i) {
      Layer<float>& L = net.parts[p].layers[i];
      const bool weights = L.spec.op == Op::linear || L.spec.op == Op::conv2d;
      if (!L.weight.empty()) {
        out.push_back({&L.weight, &grads.parts[p].weight[i], std::vector<float>(L.weight.size()),
                       std::vector<float>(L.weight.size()), weights});
      }
      if (!L.bias.empty()) {
        out.push_back({&L.bias, &grads.parts[p].bias[i], std::vector<float>(L.bias.size()), std::vector<float>(L.bias.size()),
                       false});
      }
    }
  return out;
}

// A batch of the path: x_t = (1 - t) x0 + t x1 and the target x1 - x0, for
// items 'items' of data; t and x0 from rng.
void draw_batch(const float* data, const float* cond, int64_t cond_dim, const std::vector<int64_t>& items, int64_t values,
                Rng& rng, float* xt, float* target, float* t, float* batch_cond) {
  const auto batch = static_cast<int64_t>(items.size());
  kernels::fill_normal(rng, target, batch * values);  // x0 for now
  for (int64_t b = 0; b < batch; ++b) {
    t[b] = static_cast<float>(rng.uniform());
    const float* x1 = data + items[b] * values;
    float* x0 = target + b * values;
    float* out = xt + b * values;
    for (int64_t j = 0; j < values; ++j) {
      out[j] = (1 - t[b]) * x0[j] + t[b] * x1[j];
      x0[j] = x1[j] - x0[j];
    }
    if (cond) std::memcpy(batch_cond + b * cond_dim, cond + items[b] * cond_dim, sizeof(float) * static_cast<size_t>(cond_dim));
  }
}

}  // namespace

void train_flow(UNet<float>& net, UNet<float>* ema, const float* data, const float* cond, int64_t n,
                const FlowTraining& config, int64_t every, const std::function<void(const FlowReport&)>& report) {
  if (n <= 0 || config.batch <= 0 || config.steps <= 0) throw std::invalid_argument("train_flow: empty data, batch or steps");
  const int64_t batch = config.batch, values = net.config().image.size(), cond_dim = net.config().cond_dim;
  if (cond_dim > 0 && !cond) throw std::invalid_argument("train_flow: a conditional U-Net needs its conditions");
  UNetWorkspace<float> ws(net, batch);
  UNetGradients<float> grads;
  grads.resize(net);
  std::vector<Tensor> tensors = tensors_of(net, grads);
  if (ema) *ema = net;
  std::vector<std::vector<float>*> ema_values;
  if (ema) {
    UNetGradients<float> unused;
    unused.resize(*ema);
    for (auto& t : tensors_of(*ema, unused)) ema_values.push_back(t.value);
  }
  AdamConfig adam_config;
  adam_config.learning_rate = config.learning_rate;
  Adam adam(0, adam_config);
  std::vector<float> xt(static_cast<size_t>(batch * values)), target(xt.size()), dv(xt.size());
  std::vector<float> t(static_cast<size_t>(batch)), batch_cond(static_cast<size_t>(batch * std::max<int64_t>(cond_dim, 1)));
  std::vector<int64_t> items(static_cast<size_t>(batch));
  const Rng root(config.seed);
  Stopwatch clock;
  double outside = 0;  // seconds in report and stop (not training)
  double loss_sum = 0;
  int64_t loss_count = 0;
  for (int64_t step = 1; step <= config.steps; ++step) {
    Rng rng = root.split(static_cast<uint64_t>(step));
    for (auto& item : items) item = static_cast<int64_t>(rng.below(static_cast<uint64_t>(n)));
    draw_batch(data, cond, cond_dim, items, values, rng, xt.data(), target.data(), t.data(), batch_cond.data());
    forward(net, xt.data(), t.data(), cond_dim > 0 ? batch_cond.data() : nullptr, batch, ws);
    const float* v = ws.output();
    double loss = 0;
    const auto scale = static_cast<float>(2.0 / static_cast<double>(batch * values));
    for (int64_t j = 0; j < batch * values; ++j) {
      const float d = v[j] - target[j];
      loss += static_cast<double>(d) * d;
      dv[j] = scale * d;
    }
    loss_sum += loss / static_cast<double>(batch * values);
    ++loss_count;
    backward(net, dv.data(), ws, &grads, static_cast<float*>(nullptr));
    double norm2 = 0;
    for (const auto& tensor : tensors)
      for (float g : *tensor.grad) norm2 += static_cast<double>(g) * g;
    const double norm = std::sqrt(norm2);
    if (config.grad_clip > 0 && norm > config.grad_clip) {
      const auto shrink = static_cast<float>(config.grad_clip / norm);
      for (auto& tensor : tensors)
        for (float& g : *tensor.grad) g *= shrink;
    }
    const double progress = static_cast<double>(step - config.warmup) / static_cast<double>(std::max<int64_t>(1, config.steps - config.warmup));
    const double rate = step <= config.warmup ? config.learning_rate * static_cast<double>(step) / static_cast<double>(config.warmup)
                                              : cosine_rate(config.learning_rate, progress, 0.1);
    adam.set_learning_rate(rate);
    adam.begin_step();
    for (auto& tensor : tensors) {
      std::vector<float>& value = *tensor.value;
      if (tensor.decays && config.weight_decay > 0) {
        const auto shrink = static_cast<float>(1 - rate * config.weight_decay);
        for (float& w : value) w *= shrink;
      }
      adam.step_entries(static_cast<int64_t>(value.size()), tensor.grad->data(), tensor.m.data(), tensor.v.data(),
                        [&](int64_t e) -> float& { return value[e]; });
    }
    if (ema) {
      // The average starts at the first steps' mean (warm-up of the decay, as in common EMA code).
      const auto d = static_cast<float>(std::min(config.ema, (1.0 + static_cast<double>(step)) / (10.0 + static_cast<double>(step))));
      for (size_t k = 0; k < tensors.size(); ++k) {
        std::vector<float>& avg = *ema_values[k];
        const std::vector<float>& now = *tensors[k].value;
        for (size_t e = 0; e < avg.size(); ++e) avg[e] = d * avg[e] + (1 - d) * now[e];
      }
    }
    const double trained = clock.seconds() - outside;
    const bool out_of_time = config.max_seconds > 0 && trained >= config.max_seconds;
    if ((report || config.stop) && (step % std::max<int64_t>(every, 1) == 0 || step == config.steps || out_of_time)) {
      FlowReport r;
      r.step = step;
      r.loss = loss_sum / static_cast<double>(std::max<int64_t>(loss_count, 1));
      r.grad_norm = norm;
      r.seconds = trained;
      r.last = step == config.steps || out_of_time;
      const double before = clock.seconds();
      if (report) report(r);
      const bool stop = config.stop && config.stop(r);
      outside += clock.seconds() - before;
      loss_sum = 0;
      loss_count = 0;
      if (stop) break;
    }
    if (out_of_time) break;
  }
}

double flow_loss(const UNet<float>& net, const float* data, const float* cond, int64_t n, uint64_t seed) {
  const int64_t values = net.config().image.size(), cond_dim = net.config().cond_dim, chunk = 64;
  UNetWorkspace<float> ws(net, std::min(chunk, n));
  std::vector<float> xt(static_cast<size_t>(chunk * values)), target(xt.size());
  std::vector<float> t(static_cast<size_t>(chunk)), batch_cond(static_cast<size_t>(chunk * std::max<int64_t>(cond_dim, 1)));
  double total = 0;
  for (int64_t start = 0; start < n; start += chunk) {
    const int64_t rows = std::min(chunk, n - start);
    std::vector<int64_t> items(static_cast<size_t>(rows));
    for (int64_t b = 0; b < rows; ++b) items[b] = start + b;
    Rng rng = Rng(seed).split(static_cast<uint64_t>(start));
    draw_batch(data, cond, cond_dim, items, values, rng, xt.data(), target.data(), t.data(), batch_cond.data());
    forward(net, xt.data(), t.data(), cond_dim > 0 ? batch_cond.data() : nullptr, rows, ws);
    for (int64_t j = 0; j < rows * values; ++j) {
      const double d = static_cast<double>(ws.output()[j]) - target[j];
      total += d * d;
    }
  }
  return total / static_cast<double>(n * values);
}

int64_t integrate(const Velocity& v, float* x, int64_t batch, int64_t dim, int64_t steps, Solver solver, double gamma,
                  uint64_t seed) {
  if (steps <= 0) throw std::invalid_argument("integrate: steps must be positive");
  const int64_t n = batch * dim;
  std::vector<float> k1(static_cast<size_t>(n)), k2(static_cast<size_t>(n)), y(static_cast<size_t>(n));
  const double h = 1.0 / static_cast<double>(steps);
  int64_t evaluations = 0;
  Rng root(seed);
  for (int64_t s = 0; s < steps; ++s) {
    const double t = static_cast<double>(s) * h;
    v(x, static_cast<float>(t), batch, k1.data());
    ++evaluations;
    if (solver == Solver::euler || (solver == Solver::heun && s + 1 == steps)) {
      for (int64_t j = 0; j < n; ++j) x[j] += static_cast<float>(h) * k1[j];
    } else if (solver == Solver::heun) {
      for (int64_t j = 0; j < n; ++j) y[j] = x[j] + static_cast<float>(h) * k1[j];
      v(y.data(), static_cast<float>(t + h), batch, k2.data());
      ++evaluations;
      for (int64_t j = 0; j < n; ++j) x[j] += static_cast<float>(0.5 * h) * (k1[j] + k2[j]);
    } else {
      Rng rng = root.split(static_cast<uint64_t>(s));
      kernels::fill_normal(rng, y.data(), n);
      const double noise = std::sqrt(2 * gamma * (1 - t) * h);
      for (int64_t j = 0; j < n; ++j) {
        const double drift = k1[j] + gamma * (t * k1[j] - x[j]);
        x[j] = static_cast<float>(x[j] + h * drift + noise * y[j]);
      }
    }
  }
  return evaluations;
}

}  // namespace nk::nn
