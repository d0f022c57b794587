// attention.hpp - exact softmax attention of one segment and one query head,
// forward and explicit backward, with grouped KV heads (GQA; MHA is group 1).
// Rows are token-major with a stride (q [N, Hq*hd], k and v [N, Hkv*hd]), as
// the projections write them. Memory is O(keys) per call: a row of scores in
// the caller's scratch and one log-sum-exp per query, never T x T, so the same
// code serves 16K-token contexts. Templated on the scalar so that the tests
// check the backward against finite differences in double.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace nk::lm {

/// One head over one segment. Query i (0..nq) sits at key position
/// first + i: causal attention lets it see keys 0..first+i, bidirectional all
/// nk keys. out[i] = sum_j p_ij v_j with p = softmax(scale q_i.k_j); lse[i] =
/// log sum_j exp(scale q_i.k_j) (kept for the backward). key(j) and value(j)
/// give row j's hd values (contiguous rows, or a paged KV cache's); 'scores'
/// is scratch of nk values. Reassociate: the q.k dot products are summed in
/// SIMD lanes (another rounding order; decoding through the KV cache uses
/// it), else strictly left to right (the reference order).
template <class T, class KeyRow, class ValueRow, bool Reassociate = false>
void attend_rows(const T* q, int64_t q_stride, int64_t nq, const KeyRow& key, const ValueRow& value, int64_t nk,
                 int64_t first, bool causal, int64_t hd, double scale, T* out, int64_t out_stride, T* lse,
                 int64_t lse_stride, T* scores) {
  for (int64_t i = 0; i < nq; ++i) {
    const T* qi = q + i * q_stride;
    const int64_t seen = causal ? std::min(nk, first + i + 1) : nk;
    T best = -std::numeric_limits<T>::infinity();
    for (int64_t j = 0; j < seen; ++j) {
      const T* kj = key(j);
      T dot = 0;
      if constexpr (Reassociate) {
#pragma omp simd reduction(+ : dot)
        for (int64_t e = 0; e < hd; ++e) dot += qi[e] * kj[e];
      } else {
        for (int64_t e = 0; e < hd; ++e) dot += qi[e] * kj[e];
      }
      scores[j] = dot * static_cast<T>(scale);
      best = std::max(best, scores[j]);
    }
    T* oi = out + i * out_stride;
    std::fill(oi, oi + hd, T(0));
    if (seen == 0) {
      lse[i * lse_stride] = -std::numeric_limits<T>::infinity();
      continue;
    }
    T sum = 0;
    for (int64_t j = 0; j < seen; ++j) {
      scores[j] = std::exp(scores[j] - best);
      sum += scores[j];
    }
    const T inv = T(1) / sum;
    for (int64_t j = 0; j < seen; ++j) {
      const T p = scores[j] * inv;
      const T* vj = value(j);
      for (int64_t e = 0; e < hd; ++e) oi[e] += p * vj[e];
    }
    lse[i * lse_stride] = best + std::log(sum);
  }
}

/// attend_rows over contiguous key and value rows of kv_stride values.
template <class T>
void attend_head(const T* q, int64_t q_stride, int64_t nq, const T* k, const T* v, int64_t kv_stride, int64_t nk,
                 int64_t first, bool causal, int64_t hd, double scale, T* out, int64_t out_stride, T* lse,
                 int64_t lse_stride, T* scores) {
  attend_rows(q, q_stride, nq, [&](int64_t j) { return k + j * kv_stride; }, [&](int64_t j) { return v + j * kv_stride; },
              nk, first, causal, hd, scale, out, out_stride, lse, lse_stride, scores);
}

/// The backward of attend_head (FlashAttention-2's recurrence, recomputing p
/// from lse): dq (overwritten), dk and dv (accumulated: query heads of one
/// group add into the same KV head). 'scores' is scratch of nk values.
template <class T>
void attend_head_backward(const T* dout, int64_t dout_stride, const T* out, const T* q, int64_t q_stride, int64_t nq,
                          const T* k, const T* v, int64_t kv_stride, int64_t nk, int64_t first, bool causal, int64_t hd,
                          double scale, const T* lse, int64_t lse_stride, T* dq, T* dk, T* dv, T* scores) {
  const T s = static_cast<T>(scale);
  for (int64_t i = 0; i < nq; ++i) {
    const T* qi = q + i * q_stride;
    const T* gi = dout + i * dout_stride;
    const T* oi = out + i * dout_stride;
    T* dqi = dq + i * q_stride;
    std::fill(dqi, dqi + hd, T(0));
    const int64_t seen = causal ? std::min(nk, first + i + 1) : nk;
    if (seen == 0) continue;
    T delta = 0;  // D_i = dout_i . out_i = sum_j p_ij (dout_i . v_j)
    for (int64_t e = 0; e < hd; ++e) delta += gi[e] * oi[e];
    const T l = lse[i * lse_stride];
    for (int64_t j = 0; j < seen; ++j) {
      const T* kj = k + j * kv_stride;
      const T* vj = v + j * kv_stride;
      T dot = 0, dp = 0;
      for (int64_t e = 0; e < hd; ++e) {
        dot += qi[e] * kj[e];
        dp += gi[e] * vj[e];
      }
      const T p = std::exp(dot * s - l);
      const T ds = p * (dp - delta) * s;
      T* dkj = dk + j * kv_stride;
      T* dvj = dv + j * kv_stride;
      for (int64_t e = 0; e < hd; ++e) {
        dvj[e] += p * gi[e];
        dkj[e] += ds * qi[e];
        dqi[e] += ds * kj[e];
      }
    }
  }
  (void)scores;
}

/// Segmented multi-head attention over a packed batch: segment s is rows
/// [offsets[s], offsets[s+1]); every head of every segment, queries and keys
/// from the same rows (no cache). q [N, heads*hd], k and v [N, kv_heads*hd],
/// out [N, heads*hd], lse [N, heads]. 'scratch' holds max_segment values per
/// OpenMP thread (attention_scratch()).
template <class T>
void attention_forward(const T* q, const T* k, const T* v, const int64_t* offsets, int64_t segments, int64_t heads,
                       int64_t kv_heads, int64_t hd, bool causal, T* out, T* lse, T* scratch, int64_t max_segment);

template <class T>
void attention_backward(const T* dout, const T* out, const T* q, const T* k, const T* v, const T* lse,
                        const int64_t* offsets, int64_t segments, int64_t heads, int64_t kv_heads, int64_t hd,
                        bool causal, T* dq, T* dk, T* dv, T* scratch, int64_t max_segment);

/// Values of scratch attention_forward/backward need: max_segment per thread.
int64_t attention_scratch(int64_t max_segment);

}  // namespace nk::lm
