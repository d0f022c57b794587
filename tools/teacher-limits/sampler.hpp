// sampler.hpp - Hamiltonian Monte Carlo on the teacher's first layer W given
// (X, y), with v, sigma and Delta known: the Bayes-optimal posterior, whose
// mean is the Bayes-optimal predictor.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nk/device.hpp"
#include "nk/rng.hpp"
#include "teacher-limits/committee.hpp"
#include "teacher-limits/model.hpp"

namespace tl {

struct HmcConfig {
  int chains = 4;
  int64_t samples = 200, warmup = 200;
  int leapfrog = 20;
  double target_acceptance = 0.7;
  bool informed = true;  ///< start at the teacher (else W ~ N(0, I), the algorithmic branch)
  int batches = 10;      ///< batch means per chain (the standard errors)
  nk::DeviceKind device = nk::DeviceKind::cpu;  ///< where the gradients run (cuda: the committee family)
};

struct HmcResult {
  double eps_bo = 0;            ///< (f* - posterior mean)^2 on the test set, Var/S-corrected
  double eps_bo_se = 0;         ///< its standard error: jackknife over the batches
  double eps_gibbs = 0;         ///< (f* - f_W)^2 averaged over single samples
  double acceptance = 0;        ///< mean acceptance probability while sampling
  double step = 0;              ///< the adapted leapfrog step, averaged over chains
  std::vector<double> overlap;  ///< [k] matched |cos| per teacher feature, averaged over samples
  Vector pred_test;             ///< [m] posterior mean on /test/X
  int64_t gradients = 0;
  double seconds = 0;  ///< time spent in gradients
};

/// The potential U(W) = ||W||^2/2 + ||y - f_W(X)||^2 / (2 Delta) and its gradient.
class Posterior {
 public:
  /// On cuda the training data move to the device once (nk_cuda_committee).
  explicit Posterior(const Data& data, nk::DeviceKind device = nk::DeviceKind::cpu);
  ~Posterior();
  Posterior(const Posterior&) = delete;
  Posterior& operator=(const Posterior&) = delete;
  /// U(W); with grad, dU/dW [k, d].
  double potential(const Matrix& W, Matrix* grad);
  int64_t gradients() const { return gradients_; }
  double gradient_seconds() const { return seconds_; }
  const Data& data() const { return data_; }
  Committee& committee() { return committee_; }

 private:
  const Data& data_;
  Committee committee_;
  MatrixF X_;
  void* gpu_ = nullptr;  // the committee family's state
  Matrix gpu_grad_;      // the gradient when the caller wants none
  int64_t gradients_ = 0;
  double seconds_ = 0;
};

/// Runs config.chains chains (warm-up with dual-averaging step adaptation,
/// then samples) from 'rng'.split(chain); 'label' prefixes the progress line.
HmcResult sample_posterior(const Data& data, const HmcConfig& config, const nk::Rng& rng, const std::string& label);

/// The Bayes-optimal error from batch means of the prediction: batch b holds
/// counts[b] samples whose mean prediction is means.row(b) [m]. Returns
/// mean_x (f*(x) - fbar(x))^2 - Var(fbar(x)), the variance by batch means, over
/// every batch but 'skip' (-1: all).
double corrected_error(const Matrix& means, const std::vector<double>& counts, const Vector& f_star, int64_t skip = -1);

}  // namespace tl
