// attention.cpp - exact float64 softmax attention of one query.
#include "nk/kernels/attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace nk::kernels {

double softmax_combine(const double* logits, int64_t count, const float* values, int64_t dv, const int64_t* ids,
                       double* out) {
  std::fill(out, out + dv, 0.0);
  if (count <= 0) return -std::numeric_limits<double>::infinity();
  const double top = *std::max_element(logits, logits + count);
  double total = 0;
  for (int64_t r = 0; r < count; ++r) {
    const double weight = std::exp(logits[r] - top);
    total += weight;
    const float* v = values + (ids ? ids[r] : r) * dv;
    for (int64_t j = 0; j < dv; ++j) out[j] += weight * v[j];
  }
  for (int64_t j = 0; j < dv; ++j) out[j] /= total;
  return top + std::log(total);
}

double attention_row(const float* q, const float* keys, const float* values, int64_t d, int64_t dv, double scale,
                     const int64_t* ids, int64_t count, double* logits, double* out) {
  for (int64_t r = 0; r < count; ++r) {
    const float* k = keys + (ids ? ids[r] : r) * d;
    double dot = 0;
    for (int64_t c = 0; c < d; ++c) dot += static_cast<double>(q[c]) * k[c];
    logits[r] = dot * scale;
  }
  return softmax_combine(logits, count, values, dv, ids, out);
}

}  // namespace nk::kernels
