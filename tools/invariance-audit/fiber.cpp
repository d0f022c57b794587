// fiber.cpp - the fiber loss (fiber.hpp).
#include "invariance-audit/fiber.hpp"

#include <algorithm>
#include <cmath>

#include "invariance-audit/prior.hpp"

namespace ia {

FiberCost::FiberCost(Extractor& extractor, const float* query, int64_t capacity) : e_(extractor) {
  const int64_t d = e_.input().size(), f = e_.dim();
  fq_.assign(static_cast<size_t>(f), 0.0f);
  e_.features(query, 1, fq_.data());
  for (float v : fq_) norm2_ += static_cast<double>(v) * v;
  // A query whose features are all zero: the loss stays absolute.
  if (!(norm2_ > 1e-24)) norm2_ = 1.0;
  pixels_.assign(static_cast<size_t>(capacity * d), 0.0f);
  f_.assign(static_cast<size_t>(capacity * f), 0.0f);
  g_.assign(static_cast<size_t>(capacity * f), 0.0f);
}

void FiberCost::evaluate(const float* x, int64_t batch, double* cost, float* grad) {
  const int64_t d = e_.input().size(), f = e_.dim();
  // The loss of the image a user gets: pixels clipped to [0,1]; the gradient
  // passes the clip unchanged (straight through), so a pixel pushed past the
  // box by the prior is pulled back by the loss it causes.
  for (int64_t j = 0; j < batch * d; ++j) pixels_[j] = std::clamp(to_pixel(x[j]), 0.0f, 1.0f);
  e_.features(pixels_.data(), batch, f_.data());
  for (int64_t b = 0; b < batch; ++b) {
    double sum = 0;
    for (int64_t k = 0; k < f; ++k) {
      const double r = static_cast<double>(f_[b * f + k]) - fq_[k];
      sum += r * r;
      // d c / d f = 2 r / |f_q|^2; d p / d x = 1/2.
      g_[b * f + k] = static_cast<float>(r / norm2_);
    }
    cost[b] = sum / norm2_;
  }
  if (grad) e_.vjp(g_.data(), batch, grad);
}

std::vector<double> FiberCost::mismatch(const float* pixels, int64_t batch) {
  const int64_t f = e_.dim();
  std::vector<double> out(static_cast<size_t>(batch));
  e_.features(pixels, batch, f_.data());
  for (int64_t b = 0; b < batch; ++b) {
    double sum = 0;
    for (int64_t k = 0; k < f; ++k) sum += std::pow(static_cast<double>(f_[b * f + k]) - fq_[k], 2);
    out[b] = std::sqrt(sum / norm2_);
  }
  return out;
}

}  // namespace ia
