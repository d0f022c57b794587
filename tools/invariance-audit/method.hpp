// method.hpp - one way of filling a query's fiber with samples: the prior
// guided by the fiber loss (ndtm, dps), the prior alone (none), or feature
// inversion without a prior (invert). The sample and eval verbs share it.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "invariance-audit/extractor.hpp"
#include "invariance-audit/prior.hpp"
#include "nk/nn/guidance.hpp"
#include "nk/rng.hpp"

namespace ia {

struct MethodConfig {
  std::string name = "ndtm";  ///< ndtm, dps, none, invert or dedicated
  nk::nn::GuideConfig guide;  ///< steps, inner and the guides' constants
  double invert_rate = 0.02;  ///< invert: Adam rate on the pixels (steps x inner iterations)
};

struct MethodRun {
  double seconds = 0;
  int64_t prior_forwards = 0, prior_backwards = 0;          ///< batched passes
  int64_t extractor_forwards = 0, extractor_backwards = 0;  ///< batched passes
  std::vector<double> mismatch;                             ///< [S] ||f(x) - f(x_q)|| / ||f(x_q)||
};

class Method {
 public:
  /// 'prior' (batches of at least S) may be null only for invert and
  /// dedicated; dedicated samples the conditional model 'dedicated' instead
  /// (Euler, guide.steps); batches of up to 'capacity' samples.
  Method(MethodConfig config, nk::nn::FlowField* prior, int64_t capacity, const Dedicated* dedicated = nullptr);
  const MethodConfig& config() const { return config_; }
  /// x [S, H, W, C] <- S pixel images in [0,1] in the fiber of 'query'
  /// [H, W, C] under 'extractor', from the noise of 'rng'.
  MethodRun run(Extractor& extractor, const float* query, float* x, int64_t S, nk::Rng& rng);

 private:
  MethodConfig config_;
  nk::nn::FlowField* prior_ = nullptr;
  std::unique_ptr<nk::nn::UNetField> field_;  ///< dedicated
  const Dedicated* dedicated_ = nullptr;
  std::vector<float> cond_;
};

/// A PNG: per query a row of the query, its S samples and their per-pixel
/// variance map (scaled to its maximum).
void write_fiber_grid(const std::string& path, const std::vector<float>& queries, const std::vector<float>& samples,
                      const std::vector<float>& variance, int64_t q, int64_t s, nk::nn::Shape shape, bool no_clobber);

/// Per-pixel variance over S samples [S, H, W, C] (mean over channels) into var [H, W].
void pixel_variance(const float* x, int64_t S, nk::nn::Shape shape, float* var);

/// Mean pairwise L2 distance of S images [S, d].
double mean_pairwise_distance(const float* x, int64_t S, int64_t d);

}  // namespace ia
