// train.cpp - AdamW, the schedule, clipping and the Trainer's step.
#include "nk/lm/train.hpp"

#include <cmath>

#include "nk/error.hpp"
#include "nk/nn/optim.hpp"
#include "nk/rng.hpp"
#include "nk/timer.hpp"

namespace nk::lm {

double learning_rate(const Schedule& s, int64_t step) {
  if (step < s.warmup) return s.lr * static_cast<double>(step + 1) / static_cast<double>(s.warmup);
  const double span = static_cast<double>(std::max<int64_t>(1, s.total - s.warmup));
  return cosine_rate(s.lr, static_cast<double>(step - s.warmup) / span, s.floor);
}

double gradient_norm(const ParameterStore& grads, const ParameterMask& mask) {
  // Chunks of a fixed size, each summed in order, then the chunk sums in
  // order: the same bits whatever the number of threads.
  constexpr int64_t kChunk = 1 << 14;
  const auto& ts = grads.tensors();
  double total = 0;
  for (size_t t = 0; t < ts.size(); ++t) {
    if (!mask.trainable(t)) continue;
    const float* g = grads.data() + ts[t].offset;
    const int64_t n = ts[t].size, chunks = (n + kChunk - 1) / kChunk;
    std::vector<double> part(static_cast<size_t>(chunks));
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < chunks; ++c) {
      double s = 0;
      for (int64_t i = c * kChunk; i < std::min(n, (c + 1) * kChunk); ++i) s += static_cast<double>(g[i]) * g[i];
      part[static_cast<size_t>(c)] = s;
    }
    for (double p : part) total += p;
  }
  return std::sqrt(total);
}

void diffusion_mask(const int32_t* tokens, int64_t B, int64_t T, int32_t mask, uint64_t seed, int64_t step,
                    DiffusionBatch& out) {
  out.noisy.assign(tokens, tokens + B * T);
  out.rows.clear(), out.targets.clear(), out.weights.clear();
  const Rng root = Rng(seed).split(static_cast<uint64_t>(step));
  for (int64_t b = 0; b < B; ++b) {
    Rng rng = root.split(static_cast<uint64_t>(b));
    const double t = (1 - 1e-3) * rng.uniform() + 1e-3;
    const auto w = static_cast<float>(1.0 / (t * static_cast<double>(B * T)));
    for (int64_t i = 0; i < T; ++i)
      if (rng.uniform() < t) {
        const int64_t r = b * T + i;
        out.noisy[static_cast<size_t>(r)] = mask;
        out.rows.push_back(r);
        out.targets.push_back(tokens[r]);
        out.weights.push_back(w);
      }
  }
}

AdamW::AdamW(const ParameterStore& like, AdamWConfig config)
    : config_(config), m_(static_cast<size_t>(like.size()), 0.0f), v_(static_cast<size_t>(like.size()), 0.0f) {}

double AdamW::step(ParameterStore& weights, ParameterStore& grads, const ParameterMask& mask, double lr) {
  const double norm = gradient_norm(grads, mask);
  const double clip = config_.clip_norm > 0 && norm > config_.clip_norm ? config_.clip_norm / (norm + 1e-6) : 1.0;
  ++t_;
  // torch.optim.AdamW: w -= lr wd w; m, v updated; w -= (lr / bc1) m / (sqrt(v) / sqrt(bc2) + eps).
  const double bc1 = 1 - std::pow(config_.beta1, static_cast<double>(t_));
  const double bc2 = 1 - std::pow(config_.beta2, static_cast<double>(t_));
  const auto b1 = static_cast<float>(config_.beta1), b2 = static_cast<float>(config_.beta2);
  const auto step_size = static_cast<float>(lr / bc1), root_bc2 = static_cast<float>(std::sqrt(bc2));
  const auto eps = static_cast<float>(config_.eps), scale = static_cast<float>(clip);
  const auto& ts = weights.tensors();
  for (size_t t = 0; t < ts.size(); ++t) {
    if (!mask.trainable(t)) continue;
    const float decay = ts[t].decay ? static_cast<float>(1 - lr * config_.weight_decay) : 1.0f;
    float* w = weights.data() + ts[t].offset;
    const float* g = grads.data() + ts[t].offset;
    float* m = m_.data() + ts[t].offset;
    float* v = v_.data() + ts[t].offset;
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < ts[t].size; ++i) {
      const float gi = g[i] * scale;
      m[i] = b1 * m[i] + (1 - b1) * gi;
      v[i] = b2 * v[i] + (1 - b2) * gi * gi;
      w[i] = w[i] * decay - step_size * m[i] / (std::sqrt(v[i]) / root_bc2 + eps);
    }
  }
  return norm;
}

void AdamW::save(TrainState& state) const {
  state.step = t_;
  state.m = m_;
  state.v = v_;
}

void AdamW::load(const TrainState& state, const std::string& file) {
  if (state.m.size() != m_.size() || state.v.size() != v_.size())
    throw input_error(file, "/train", "optimiser moments of another model's size");
  m_ = state.m;
  v_ = state.v;
  t_ = state.step;
}

Trainer::Trainer(ParameterStore& weights, ParameterMask mask, Schedule schedule, AdamWConfig adamw, WorkspaceLimits limits)
    : weights_(weights),
      grads_(weights.config()),
      mask_(std::move(mask)),
      schedule_(schedule),
      adamw_(weights, adamw),
      ws_(weights.config(), {limits.max_tokens, limits.max_segment, true}),
      model_(weights) {}

StepStats Trainer::step(int64_t micro_batches, const Micro& micro) {
  Stopwatch clock;
  StepStats st;
  grads_.zero();
  for (int64_t k = 0; k < micro_batches; ++k) {
    TokenBatch batch;
    const auto [loss, tokens] = micro(k, ws_, batch);
    model_.backward(batch, ws_, mask_, grads_);
    st.loss += loss;
    st.tokens += tokens;
  }
  st.lr = learning_rate(schedule_, adamw_.steps());
  st.grad_norm = adamw_.step(weights_, grads_, mask_, st.lr);
  st.seconds = clock.seconds();
  return st;
}

}  // namespace nk::lm
