// invariance_audit.hpp - the verbs of invariance-audit: train a flow-matching
// prior and feature extractors, compute features and fiber losses, and sample
// diverse inputs in a query's fiber {x : f(x) = f(x_q)} by guiding the prior
// with the fiber loss (NDTM), against DPS, feature inversion and the prior
// alone.
#pragma once
#include <cstdint>
#include <string>

#include "nk/run_env.hpp"

namespace ia {

inline constexpr const char* kPriorSchema = "invariance-audit.prior/1";
inline constexpr const char* kFeaturesSchema = "invariance-audit.features/1";
inline constexpr const char* kFiberSchema = "invariance-audit.fiber/1";

struct TrainPriorOptions {
  std::string input, output;
  bool no_clobber = false;
  std::string channels = "32,64,128";
  int64_t steps = 20000, batch = 64, time_dim = 128, groups = 8;
  double learning_rate = 2e-4, ema = 0.999;
};
void train_prior(const TrainPriorOptions& o, const nk::RunEnv& env);

struct TrainExtractorOptions {
  std::string input, output, kind = "cnn";
  bool no_clobber = false;
  int64_t components = 32, epochs = 5, batch = 128;
  double learning_rate = 1e-3;
};
void train_extractor(const TrainExtractorOptions& o, const nk::RunEnv& env);

struct FeaturesOptions {
  std::string input, output, extractor, query;
  bool no_clobber = false;
  int64_t index = 0;
};
void features(const FeaturesOptions& o, const nk::RunEnv& env);

struct SampleOptions {
  std::string query, output, extractor, prior, guidance = "ndtm", grid;
  bool no_clobber = false, all = false;
  int64_t index = 0, samples = 8, steps = 40, inner = 4;
  double lambda = 1e5, kappa = 1.0, kappa_min = 0.05, eta = 0.03, zeta = 0.1, invert_rate = 0.02;
};
void sample(const SampleOptions& o, const nk::RunEnv& env);

}  // namespace ia
