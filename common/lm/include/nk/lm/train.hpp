// train.hpp - AdamW over a ParameterStore (torch.optim.AdamW's update, float
// moments), the learning-rate schedule (linear warm-up, then cosine to a
// floor), global-norm gradient clipping, and a Trainer that runs one step of
// a caller's loss over the model.
#pragma once
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "nk/lm/checkpoint.hpp"
#include "nk/lm/model.hpp"

namespace nk::lm {

struct Schedule {
  double lr = 3e-3;        ///< peak learning rate
  double floor = 0.1;      ///< the cosine ends at floor * lr
  int64_t warmup = 100;    ///< steps of linear warm-up (from lr / warmup)
  int64_t total = 1000;    ///< the step at which the cosine reaches the floor
};
/// lr * (step + 1) / warmup during warm-up, then nk::cosine_rate over [warmup, total].
double learning_rate(const Schedule& schedule, int64_t step);

struct AdamWConfig {
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.1;
  double clip_norm = 1.0;   ///< global gradient norm clipped to this; 0: no clipping
};

class AdamW {
 public:
  AdamW(const ParameterStore& like, AdamWConfig config);
  /// Clips grads (trainable tensors only) to clip_norm, then for each
  /// trainable tensor: w -= lr wd w (decay tensors), then Adam's bias-corrected
  /// step. Returns the gradient norm before clipping. Frozen tensors are not
  /// touched (neither weights nor moments). Deterministic for any thread count.
  double step(ParameterStore& weights, ParameterStore& grads, const ParameterMask& mask, double lr);
  int64_t steps() const { return t_; }
  void save(TrainState& state) const;
  /// Moments of the wrong size: exit 3 (a checkpoint of another shape).
  void load(const TrainState& state, const std::string& file);

 private:
  AdamWConfig config_;
  std::vector<float> m_, v_;
  int64_t t_ = 0;
};

/// sqrt(sum of squares) of the trainable tensors, summed in fixed chunks (the
/// same value for any thread count).
double gradient_norm(const ParameterStore& grads, const ParameterMask& mask);

/// LLaDA's forward process on a batch [B, T] of clean tokens: per row, t =
/// (1 - 1e-3) u + 1e-3 with u ~ U(0,1) from Rng(seed).split(step).split(b);
/// each token becomes [MASK] with probability t. The loss rows are the masked
/// positions (the model predicts each position's clean token from that same
/// position's logits, no shift), weighted 1 / (t B T): the Monte-Carlo form of
/// LLaDA's bound E_t[(1/t) sum over masked tokens of -log p].
struct DiffusionBatch {
  std::vector<int32_t> noisy;      ///< [B*T]
  std::vector<int64_t> rows;       ///< masked positions
  std::vector<int32_t> targets;    ///< their clean tokens
  std::vector<float> weights;      ///< 1 / (t B T)
};
void diffusion_mask(const int32_t* tokens, int64_t B, int64_t T, int32_t mask, uint64_t seed, int64_t step,
                    DiffusionBatch& out);

struct StepStats {
  double loss = 0, grad_norm = 0, lr = 0, seconds = 0;
  int64_t tokens = 0;
};

/// One optimiser step: zero the gradients; for each micro-batch, micro(k, ws)
/// runs the forward, writes the loss's gradient into ws.dlogits() and returns
/// {loss, tokens}; backward after each; then AdamW at the schedule's rate.
class Trainer {
 public:
  Trainer(ParameterStore& weights, ParameterMask mask, Schedule schedule, AdamWConfig adamw, WorkspaceLimits limits);
  using Micro = std::function<std::pair<double, int64_t>(int64_t micro, Workspace& ws, TokenBatch& batch)>;
  StepStats step(int64_t micro_batches, const Micro& micro);
  const Model& model() const { return model_; }
  AdamW& optimiser() { return adamw_; }
  int64_t steps() const { return adamw_.steps(); }

 private:
  ParameterStore& weights_;
  ParameterStore grads_;
  ParameterMask mask_;
  Schedule schedule_;
  AdamW adamw_;
  Workspace ws_;
  Model model_;
};

}  // namespace nk::lm
