// optim.hpp - Adam and AdamW over a flat parameter vector.
#pragma once
#include <Eigen/Core>
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
  void set_learning_rate(double rate) { config_.learning_rate = rate; }
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

}  // namespace nk
