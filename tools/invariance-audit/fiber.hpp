// fiber.hpp - the fiber loss of a query: c(x) = ||f(p) - f(p_q)||^2 /
// ||f(p_q)||^2 with p = (x + 1) / 2 the pixels of a prior-space x, and its
// gradient in x, for the guides of nk/nn/guidance.hpp.
#pragma once
#include <vector>

#include "invariance-audit/extractor.hpp"
#include "nk/nn/guidance.hpp"

namespace ia {

class FiberCost : public nk::nn::TerminalCost {
 public:
  /// 'query' [H, W, C] pixels; buffers for batches up to 'capacity'.
  FiberCost(Extractor& extractor, const float* query, int64_t capacity);
  void evaluate(const float* x, int64_t batch, double* cost, float* grad) override;
  /// ||f(p) - f(p_q)|| / ||f(p_q)|| of pixel images p [batch, H, W, C].
  std::vector<double> mismatch(const float* pixels, int64_t batch);
  const std::vector<float>& query_features() const { return fq_; }

 private:
  Extractor& e_;
  std::vector<float> fq_, pixels_, f_, g_;
  double norm2_ = 0;
};

}  // namespace ia
