// block_select.cpp - the InfLLM-v2 block selector (see block_select.hpp).
#include "nk/lm/block_select.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace nk::lm {

void pool_keys_strided(const float* k, int64_t head_stride, int64_t row_stride, int64_t heads, int64_t T, int64_t d,
                       int64_t block, float* pooled) {
  const int64_t nb = T / block;
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t j = 0; j < nb; ++j) {
      float* out = pooled + (h * nb + j) * d;
      for (int64_t i = 0; i < d; ++i) {
        double sum = 0;
        for (int64_t s = j * block; s < (j + 1) * block; ++s) sum += k[h * head_stride + s * row_stride + i];
        out[i] = static_cast<float>(sum / static_cast<double>(block));
      }
    }
}

void pool_keys(const float* k, int64_t heads, int64_t T, int64_t d, int64_t block, float* pooled) {
  pool_keys_strided(k, T * d, d, heads, T, d, block, pooled);
}

int64_t forced_blocks(const BlockSelectorConfig& c, int64_t t, int32_t* out) {
  const int64_t own = t / c.block;
  int64_t n = 0;
  for (int64_t j = 0; j < std::min(c.init_blocks, own + 1); ++j) out[n++] = static_cast<int32_t>(j);
  for (int64_t j = std::max<int64_t>(own - c.local_blocks + 1, 0); j <= own && c.local_blocks > 0; ++j)
    if (j >= std::min(c.init_blocks, own + 1)) out[n++] = static_cast<int32_t>(j);
  return n;
}

int64_t select_blocks(const BlockSelectorConfig& c, int64_t t, const double* scores, int32_t* out) {
  const int64_t forced = forced_blocks(c, t, out), nc = c.candidates(t);
  // Non-forced candidates: complete blocks past the init blocks and before the local window.
  const int64_t lo = std::min(c.init_blocks, nc), hi = std::max(lo, std::min(nc, t / c.block - c.local_blocks + 1));
  thread_local std::vector<int32_t> order;
  order.resize(static_cast<size_t>(hi - lo));
  std::iota(order.begin(), order.end(), static_cast<int32_t>(lo));
  const int64_t take = std::min(c.topk, hi - lo);
  std::partial_sort(order.begin(), order.begin() + take, order.end(),
                    [&](int32_t a, int32_t b) { return scores[a] > scores[b] || (scores[a] == scores[b] && a < b); });
  std::copy_n(order.begin(), take, out + forced);
  std::fill(out + forced + take, out + c.width(), -1);
  return forced + take;
}

namespace {

// Eight independent partial sums: one accumulator made the loop wait on the
// latency of each add, and the compiler vectorises the eight lanes.
template <class A>
double dot8(const A* a, const float* b, int64_t n) {
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) s[k] += static_cast<double>(a[i + k]) * static_cast<double>(b[i + k]);
  double tail = 0;
  for (; i < n; ++i) tail += static_cast<double>(a[i]) * static_cast<double>(b[i]);
  return (((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]))) + tail;
}

}  // namespace

double dot(const float* a, const float* b, int64_t n) { return dot8(a, b, n); }
double dot(const double* a, const float* b, int64_t n) { return dot8(a, b, n); }

void block_softmax(const float* q, const float* pooled, int64_t n, int64_t d, double* p) {
  if (n <= 0) return;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  double most = -INFINITY;
  for (int64_t j = 0; j < n; ++j) {
    p[j] = dot(q, pooled + j * d, d) * scale;
    most = std::max(most, p[j]);
  }
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += (p[j] = std::exp(p[j] - most));
  for (int64_t j = 0; j < n; ++j) p[j] /= sum;
}

void group_scores_at(const BlockSelectorConfig& c, const float* q, int64_t head_stride, int64_t Hq, int64_t t,
                     const float* pooled, int64_t Hkv, int64_t nb, int64_t d, int64_t g, double* scores,
                     double* scratch) {
  const int64_t G = Hq / Hkv, n = std::min(c.candidates(t), nb);
  std::fill(scores, scores + n, 0.0);
  for (int64_t h = g * G; h < (g + 1) * G; ++h) {
    block_softmax(q + h * head_stride, pooled + g * nb * d, n, d, scratch);
    for (int64_t j = 0; j < n; ++j) scores[j] += scratch[j];
  }
}

void group_scores(const BlockSelectorConfig& c, const float* q, int64_t Hq, int64_t T, int64_t t, const float* pooled,
                  int64_t Hkv, int64_t nb, int64_t d, int64_t g, double* scores, double* scratch) {
  group_scores_at(c, q + t * d, T * d, Hq, t, pooled, Hkv, nb, d, g, scores, scratch);
}

}  // namespace nk::lm
