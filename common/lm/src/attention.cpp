// attention.cpp - segmented multi-head attention over a packed batch: the
// OpenMP loops around attend_head and attend_head_backward.
#include "nk/lm/attention.hpp"

#include <omp.h>

namespace nk::lm {

// Room for the tiled float kernels of dense.cpp too: [2 tiles + 1, keys] per thread.
int64_t attention_scratch(int64_t max_segment) { return (2 * 64 + 1) * max_segment * omp_get_max_threads(); }

template <class T>
void attention_forward(const T* q, const T* k, const T* v, const int64_t* offsets, int64_t segments, int64_t heads,
                       int64_t kv_heads, int64_t hd, bool causal, T* out, T* lse, T* scratch, int64_t max_segment) {
  const int64_t group = heads / kv_heads, qs = heads * hd, kvs = kv_heads * hd;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  // One task per (segment, head): tasks write disjoint rows and columns.
#pragma omp parallel for schedule(static)
  for (int64_t task = 0; task < segments * heads; ++task) {
    const int64_t s = task / heads, h = task % heads, g = h / group;
    const int64_t begin = offsets[s], n = offsets[s + 1] - begin;
    T* scores = scratch + omp_get_thread_num() * max_segment;
    attend_head(q + begin * qs + h * hd, qs, n, k + begin * kvs + g * hd, v + begin * kvs + g * hd, kvs, n, 0,
                causal, hd, scale, out + begin * qs + h * hd, qs, lse + begin * heads + h, heads, scores);
  }
}

template <class T>
void attention_backward(const T* dout, const T* out, const T* q, const T* k, const T* v, const T* lse,
                        const int64_t* offsets, int64_t segments, int64_t heads, int64_t kv_heads, int64_t hd,
                        bool causal, T* dq, T* dk, T* dv, T* scratch, int64_t max_segment) {
  const int64_t group = heads / kv_heads, qs = heads * hd, kvs = kv_heads * hd;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  // One task per (segment, KV head): it owns that head's dk, dv rows and the
  // dq of the query heads of its group, so no two threads add to one value.
#pragma omp parallel for schedule(static)
  for (int64_t task = 0; task < segments * kv_heads; ++task) {
    const int64_t s = task / kv_heads, g = task % kv_heads;
    const int64_t begin = offsets[s], n = offsets[s + 1] - begin;
    T* dkg = dk + begin * kvs + g * hd;
    T* dvg = dv + begin * kvs + g * hd;
    for (int64_t j = 0; j < n; ++j)
      for (int64_t e = 0; e < hd; ++e) dkg[j * kvs + e] = dvg[j * kvs + e] = T(0);
    T* scores = scratch + omp_get_thread_num() * max_segment;
    for (int64_t h = g * group; h < (g + 1) * group; ++h) {
      const int64_t qo = begin * qs + h * hd;
      attend_head_backward(dout + qo, qs, out + qo, q + qo, qs, n, k + begin * kvs + g * hd, v + begin * kvs + g * hd,
                           kvs, n, 0, causal, hd, scale, lse + begin * heads + h, heads, dq + qo, dkg, dvg, scores);
    }
  }
}

#define NK_LM_ATTENTION(T)                                                                                           \
  template void attention_forward<T>(const T*, const T*, const T*, const int64_t*, int64_t, int64_t, int64_t,         \
                                     int64_t, bool, T*, T*, T*, int64_t);                                             \
  template void attention_backward<T>(const T*, const T*, const T*, const T*, const T*, const T*, const int64_t*,      \
                                      int64_t, int64_t, int64_t, int64_t, bool, T*, T*, T*, T*, int64_t);
NK_LM_ATTENTION(float)
NK_LM_ATTENTION(double)
#undef NK_LM_ATTENTION

}  // namespace nk::lm
