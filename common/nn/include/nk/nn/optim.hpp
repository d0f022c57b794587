// optim.hpp - Adam and AdamW (over a flat parameter vector, or over float
// entries whose moments the caller keeps), and the cosine learning-rate decay.
#pragma once
#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <vector>

namespace nk {

struct AdamConfig {
  double learning_rate = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  /// Decoupled weight decay (AdamW, Loshchilov & Hutter); 0 gives plain Adam.
  double weight_decay = 0.0;
};

/// Adam (Kingma & Ba) with bias correction; AdamW when weight_decay > 0.
class Adam {
 public:
  Adam(Eigen::Index size, AdamConfig config);
  /// params -= update(grad); 'grad' must have the size given at construction.
  void step(Eigen::Ref<Eigen::VectorXd> params, const Eigen::Ref<const Eigen::VectorXd>& grad);
  /// For parameters that live elsewhere in float (masked entries, factors of
  /// a low-rank adapter): begin_step() once per optimisation step, then
  /// step_entries() for each block of n entries with the caller's moments m,
  /// v; param(e) is the entry's reference. The same update in float with the
  /// bias corrections folded into two constants (no weight decay).
  void begin_step() { ++t_; }
  template <class Param>
  void step_entries(int64_t n, const float* g, float* m, float* v, Param&& param) const;
  void set_learning_rate(double rate) { config_.learning_rate = rate; }
  double learning_rate() const { return config_.learning_rate; }
  /// Rearranges the moments in blocks of 'block' values when the parameter
  /// vector is reordered, shrunk or partly re-initialised: new block j takes
  /// old block source[j], or fresh zero moments where source[j] < 0.
  void reorder_blocks(const std::vector<Eigen::Index>& source, Eigen::Index block);
  long steps() const { return t_; }

 private:
  AdamConfig config_;
  Eigen::VectorXd m_, v_;
  long t_ = 0;
};

template <class Param>
void Adam::step_entries(int64_t n, const float* g, float* m, float* v, Param&& param) const {
  const double c1 = 1.0 - std::pow(config_.beta1, static_cast<double>(t_));
  const double c2 = 1.0 - std::pow(config_.beta2, static_cast<double>(t_));
  const auto b1 = static_cast<float>(config_.beta1), b2 = static_cast<float>(config_.beta2);
  const auto k1 = static_cast<float>(1 - config_.beta1), k2 = static_cast<float>(1 - config_.beta2);
  const auto rate = static_cast<float>(config_.learning_rate / c1), unbias = static_cast<float>(1 / std::sqrt(c2));
  const auto eps = static_cast<float>(config_.epsilon);
#pragma omp parallel for simd schedule(static)
  for (int64_t e = 0; e < n; ++e) {
    const float ge = g[e];
    const float me = b1 * m[e] + k1 * ge, ve = b2 * v[e] + k2 * ge * ge;
    m[e] = me;
    v[e] = ve;
    param(e) -= rate * me / (std::sqrt(ve) * unbias + eps);
  }
}

/// Cosine decay (SGDR without restarts): 'rate' at progress 0 down to
/// floor * rate at progress 1; progress is clamped to [0, 1].
inline double cosine_rate(double rate, double progress, double floor = 0.0) {
  const double p = progress < 0 ? 0.0 : progress > 1 ? 1.0 : progress;
  return rate * (floor + (1 - floor) * 0.5 * (1 + std::cos(3.14159265358979323846 * p)));
}

}  // namespace nk
