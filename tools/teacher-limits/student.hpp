// student.hpp - the algorithmic side: a width-w student sum_j a_j
// sigma(what_j.x/sqrt d) trained by Adam on the squared loss (the teacher's
// activation, no biases), early-stopped on a validation split; and the
// baseline without feature learning, ridge regression on random features.
#pragma once
#include <cstdint>
#include <vector>

#include "nk/rng.hpp"
#include "teacher-limits/model.hpp"

namespace tl {

struct AdamTraining {
  int64_t epochs = 200, batch = 64, patience = 20;
  std::vector<double> learning_rates{3e-3, 1e-2};
  int restarts = 2;
  double validation = 0.1;  ///< share of the training rows held out for early stopping and lr
  bool teacher_readout = false;  ///< a_j fixed to the teacher's v_j (j < width <= k), only W trained
};

struct StudentFit {
  Matrix W;            ///< [w, d]
  Vector a;            ///< [w]
  double eps = 0;      ///< test error against the noiseless teacher
  double val_mse = 0;  ///< validation mean squared error (noisy labels)
  double eps_ensemble = 0;  ///< test error of the restarts' mean prediction at the kept rate
  double learning_rate = 0;
  int64_t epochs = 0;           ///< epochs until the best validation loss
  std::vector<double> overlap;  ///< [k] matched |cos|
};

/// The rows [0, n - n_val) train, [n - n_val, n) validate.
int64_t validation_rows(int64_t n, double share);

/// Trains width 'width' for every learning rate x restart and keeps the one
/// of least validation error.
StudentFit train_student(const Data& data, int64_t width, const AdamTraining& t, const nk::Rng& rng);

/// Ridge regression on 'features' random features sigma(F x / sqrt d), F ~
/// N(0, 1), the ridge chosen on the same validation split; returns the test error.
double random_features_ridge(const Data& data, int64_t features, double validation_share, const nk::Rng& rng);

}  // namespace tl
