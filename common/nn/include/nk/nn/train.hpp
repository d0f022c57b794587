// train.hpp - supervised training of a classifier network: AdamW with cosine
// decay, mini-batches in a seeded order, optional Gaussian input noise (the
// augmentation randomized smoothing needs). No allocation inside a step.
#pragma once
#include <cstdint>
#include <functional>

#include "nk/nn/network.hpp"

namespace nk::nn {

struct ClassifierTraining {
  int64_t epochs = 10;
  int64_t batch = 128;
  double learning_rate = 1e-3;  ///< peak; cosine decay to 0 over all steps
  double weight_decay = 0;      ///< decoupled (AdamW) on linear/conv2d weights
  double noise_sigma = 0;       ///< x + sigma N(0, I) on every training input (0: none)
  uint64_t seed = 0;            ///< order of the examples and the noise
};

struct EpochReport {
  int64_t epoch = 0;      ///< 1-based
  double loss = 0;        ///< mean training loss (on the noisy inputs)
  double accuracy = 0;    ///< training accuracy on the same inputs
  double seconds = 0;     ///< wall time of the epoch
};

/// Trains 'network' in place on x [n, input] with labels in [0, classes);
/// calls on_epoch after each epoch (progress, logging).
void train_classifier(Network<float>& network, const float* x, const int64_t* labels, int64_t n,
                      const ClassifierTraining& config, const std::function<void(const EpochReport&)>& on_epoch);

/// Arg-max predictions of 'network' on x [n, input], in batches of 'batch'.
std::vector<int64_t> predict_classes(const Network<float>& network, const float* x, int64_t n, int64_t batch = 256);

}  // namespace nk::nn
