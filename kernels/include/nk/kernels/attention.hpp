// attention.hpp - exact softmax attention of one query in float64: the
// reference that fast kernels (block-sparse, retrieval-restricted) are judged
// against, and the combine step of attention over a chosen set of keys.
#pragma once
#include <cstdint>

namespace nk::kernels {

/// out[dv] = sum_r p_r values[id_r], p = softmax(logits[0..count)), with
/// id_r = ids[r] (r itself when ids is null); values are rows of dv floats.
/// Returns log sum_r exp(logits[r]) (the log normaliser; -inf for no keys,
/// when out is all zeros). Max-subtracted, accumulated in float64.
double softmax_combine(const double* logits, int64_t count, const float* values, int64_t dv, const int64_t* ids,
                       double* out);

/// One query's attention over keys/values rows (d and dv floats) in float64:
/// logits scale * q.k_r (the dot product in float64), then softmax_combine.
/// 'logits' is scratch of count doubles. Returns the log normaliser.
double attention_row(const float* q, const float* keys, const float* values, int64_t d, int64_t dv, double scale,
                     const int64_t* ids, int64_t count, double* logits, double* out);

}  // namespace nk::kernels
