// invariance_audit.hpp - the verbs of invariance-audit: train a flow-matching
// prior and feature extractors, compute features and fiber losses, and sample
// diverse inputs in a query's fiber {x : f(x) = f(x_q)} by guiding the prior
// with the fiber loss (NDTM), against DPS, feature inversion and the prior
// alone.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nk/run_env.hpp"

namespace ia {

inline constexpr const char* kPriorSchema = "invariance-audit.prior/1";
inline constexpr const char* kFeaturesSchema = "invariance-audit.features/1";
inline constexpr const char* kFiberSchema = "invariance-audit.fiber/1";
inline constexpr const char* kEvalSchema = "invariance-audit.eval/1";
inline constexpr const char* kDedicatedSchema = "invariance-audit.dedicated/1";

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
  std::string input, output, extractor, extractor_cmd, query;
  bool no_clobber = false;
  int64_t index = 0;
};
void features(const FeaturesOptions& o, const nk::RunEnv& env);

struct TrainDedicatedOptions {
  std::string input, output, extractor;
  bool no_clobber = false;
  std::string channels = "24,48,96";
  int64_t steps = 5000, batch = 64, time_dim = 64, groups = 8;
  double learning_rate = 1e-3, ema = 0.999, max_seconds = 0;
  // Train until realism (eval's measure): every check_every steps the EMA
  // model's samples for the first check_count images of 'queries'
  // (check_samples each, check_steps Euler steps) against 'reference' in
  // the evaluator's features; stop at Frechet distance <= until_frechet.
  double until_frechet = 0;
  std::string queries, reference, evaluator;
  int64_t check_every = 500, check_count = 0, check_samples = 8, check_steps = 40;
};
void train_dedicated(const TrainDedicatedOptions& o, const nk::RunEnv& env);

struct SampleOptions {
  std::string query, output, extractor, extractor_cmd, prior, prior_cmd, guidance = "ndtm", grid, dedicated;
  bool no_clobber = false, all = false;
  int64_t index = 0, samples = 8, steps = 40, inner = 4;
  double lambda = 1e5, kappa = 1.0, kappa_min = 0.05, eta = 0.1, zeta = 0.1, invert_rate = 0.02;
};
void sample(const SampleOptions& o, const nk::RunEnv& env);

struct EvalOptions {
  std::string queries, reference, output, prior, prior_cmd, evaluator, grid_dir;
  std::vector<std::string> dedicated;  ///< SPEC=FILE: the dedicated model of extractor SPEC
  std::string methods = "ndtm,dps,none,invert", extractors = "planted:mask-left,planted:down4,planted:pca32";
  bool no_clobber = false;
  int64_t count = 0, samples = 8, steps = 40, inner = 4, bits_steps = 32, probes = 1, neighbours = 5;
  double lambda = 1e5, kappa = 1.0, kappa_min = 0.05, eta = 0.1;
};
void eval(const EvalOptions& o, const nk::RunEnv& env);
/// The evaluator network's spec: the shipped evaluator CNN's penultimate
/// features when 'evaluator' is empty.
std::string evaluator_spec(const std::string& evaluator);

}  // namespace ia
