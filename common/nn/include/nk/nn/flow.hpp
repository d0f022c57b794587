// flow.hpp - flow matching with a Gaussian source (rectified flow): the
// path x_t = (1 - t) x0 + t x1, x0 ~ N(0, I), x1 ~ data, regressed on the
// velocity x1 - x0 by a U-Net v(x, t [, cond]); and the samplers that carry
// noise at t = 0 to data at t = 1: Euler and Heun on the ODE dx = v dt, and
// Euler-Maruyama on an SDE with the same marginals.
#pragma once
#include <cstdint>
#include <functional>

#include "nk/nn/unet.hpp"

namespace nk::nn {

struct FlowReport {
  int64_t step = 0;        ///< 1-based
  double loss = 0;         ///< mean over the last report interval of the per-value squared error
  double grad_norm = 0;    ///< before clipping, last step
  double seconds = 0;      ///< of training since the start (reports and stop checks left out)
  bool last = false;       ///< the last step (of steps, or the one max_seconds stops at)
};

struct FlowTraining {
  int64_t steps = 10000;
  int64_t batch = 64;
  double learning_rate = 2e-4;  ///< AdamW peak; linear warm-up over 'warmup' steps, then cosine decay to 10%
  int64_t warmup = 200;
  double weight_decay = 0.0;    ///< decoupled, on conv/linear weights
  double ema = 0.999;           ///< decay of the parameter average kept in 'ema' (when given)
  double grad_clip = 1.0;       ///< global L2 norm clip (0: none)
  uint64_t seed = 0;            ///< batches, times and source noise
  double max_seconds = 0;       ///< > 0: stop after the step that passes this wall time (reported as the last)
  /// Called after each report; true ends the training there (e.g. a
  /// validation target met). Time spent in the report and here is not
  /// training time: FlowReport::seconds and max_seconds leave it out.
  std::function<bool(const FlowReport&)> stop;
};


/// Trains 'net' in place on data x1 [n, H, W, C] (with cond [n, cond_dim]
/// when the net is conditional); 'ema' (same configuration) receives the
/// exponential moving average of the parameters (initialised to 'net').
/// 'report' is called every 'every' steps and after the last.
void train_flow(UNet<float>& net, UNet<float>* ema, const float* data, const float* cond, int64_t n,
                const FlowTraining& config, int64_t every, const std::function<void(const FlowReport&)>& report);

/// The flow-matching loss of 'net' on a fixed seeded draw of (x0, t) for
/// the given x1 (mean squared error per value): evaluation and tests.
double flow_loss(const UNet<float>& net, const float* data, const float* cond, int64_t n, uint64_t seed);

/// v [batch, D] = velocity at (x [batch, D], t) (one t for the batch).
using Velocity = std::function<void(const float* x, float t, int64_t batch, float* v)>;

enum class Solver { euler, heun, sde };

/// Integrates x (noise on entry, [batch, D]) from t = 0 to 1 in 'steps'
/// uniform steps. heun: the trapezoid corrector on all but the last step
/// (2 steps - 1 evaluations); sde: Euler-Maruyama on
///   dx = [v + gamma (t v - x)] dt + sqrt(2 gamma (1 - t)) dW,
/// the ODE plus gamma (1 - t) times the score (t v - x)/(1 - t) of the
/// linear path, with the matching noise: the same marginals for any gamma.
/// Returns the number of velocity evaluations.
int64_t integrate(const Velocity& v, float* x, int64_t batch, int64_t dim, int64_t steps, Solver solver, double gamma = 1.0,
                  uint64_t seed = 0);

}  // namespace nk::nn
