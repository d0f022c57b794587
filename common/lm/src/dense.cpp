// dense.cpp - the matrix products and tiled attention of dense.hpp. This file
// is compiled once as it is (namespace dense_generic) and once by
// dense_avx2.cpp with -mavx2 -mfma (namespace dense_avx2, Eigen renamed).
// Keep it free of std containers: only raw pointers cross between the copies.
#ifndef NK_LM_DENSE_NAMESPACE
#define NK_LM_DENSE_NAMESPACE dense_generic
#define NK_LM_DENSE_ISA "generic"
#endif

#include <omp.h>

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <limits>

#include "dense.hpp"

namespace nk::lm::NK_LM_DENSE_NAMESPACE {

namespace {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Map = Eigen::Map<Matrix>;
using ConstMap = Eigen::Map<const Matrix>;
using Strided = Eigen::Map<Matrix, 0, Eigen::OuterStride<>>;
using ConstStrided = Eigen::Map<const Matrix, 0, Eigen::OuterStride<>>;

// No std:: algorithm templates in this file: their out-of-line instances are
// shared at link time with the other copies', and one compiled here for
// AVX-512 could stand in for the baseline's. These have internal linkage.
template <class T>
inline T lo(T a, T b) { return b < a ? b : a; }
template <class T>
inline T hi(T a, T b) { return a < b ? b : a; }
constexpr float kInf = std::numeric_limits<float>::infinity();  // evaluated here: no call
inline void fill_zero(float* from, float* to) {
  for (; from < to; ++from) *from = 0.0f;
}
inline void copy(const float* from, const float* to, float* out) {
  for (; from < to; ++from, ++out) *out = *from;
}

/// x = exp(x) through this copy's packet exp, every element alike (see
/// nk::lm::detail::exp_inplace in layers.hpp, not included here: its
/// instances would clash with this copy's at link time).
void exp_inplace(float* x, int64_t n) {
  namespace ei = Eigen::internal;
  using Packet = ei::packet_traits<float>::type;
  constexpr int64_t P = sizeof(Packet) / sizeof(float);
  int64_t i = 0;
  for (; i + P <= n; i += P) ei::pstoreu(x + i, ei::pexp(ei::ploadu<Packet>(x + i)));
  if (i < n) {
    float pad[P] = {};
    copy(x + i, x + n, pad);
    ei::pstoreu(pad, ei::pexp(ei::ploadu<Packet>(pad)));
    copy(pad, pad + (n - i), x + i);
  }
}

/// Below this many rows (decoding: one token per sequence) the GEMM's packing
/// of W, a full copy per call, costs more than the product: linear_few.
constexpr int64_t kFewRows = 32;

/// RR rows of x against WR consecutive rows of W: RR * WR dot products whose
/// loads are shared (each packet of W feeds RR FMAs, each packet of x WR),
/// with Eigen's packets (8 floats with AVX2, 4 with SSE) so that both copies
/// of this file vectorize. RR * WR <= 8 keeps the accumulators in registers.
/// W is prefetched kAhead floats ahead of each load (never past 'limit',
/// the end of this thread's rows): with compute between the loads the
/// hardware prefetcher alone keeps too few lines in flight.
constexpr int64_t kAhead = 2048;
template <int RR, int WR>
void dots(const float* x, int64_t in, const float* w, const float* limit, float* y, int64_t out) {
  namespace ei = Eigen::internal;
  using Packet = ei::packet_traits<float>::type;
  constexpr int64_t P = sizeof(Packet) / sizeof(float);
  Packet acc[RR][WR];
#pragma GCC unroll 8
  for (int r = 0; r < RR; ++r)
#pragma GCC unroll 8
    for (int k = 0; k < WR; ++k) acc[r][k] = ei::pset1<Packet>(0.0f);
  int64_t i = 0;
  for (; i + P <= in; i += P) {
    Packet wk[WR];
#pragma GCC unroll 8
    for (int k = 0; k < WR; ++k) {
      ei::prefetch(lo(w + k * in + i + kAhead, limit));  // unconditional: a branch here spills the accumulators
      wk[k] = ei::ploadu<Packet>(w + k * in + i);
    }
#pragma GCC unroll 8
    for (int r = 0; r < RR; ++r) {
      const Packet xr = ei::ploadu<Packet>(x + r * in + i);
#pragma GCC unroll 8
      for (int k = 0; k < WR; ++k) acc[r][k] = ei::pmadd(xr, wk[k], acc[r][k]);
    }
  }
  for (int r = 0; r < RR; ++r)
    for (int k = 0; k < WR; ++k) {
      float sum = ei::predux(acc[r][k]);
      for (int64_t j = i; j < in; ++j) sum += x[r * in + j] * w[k * in + j];
      y[r * out + k] = sum;
    }
}

/// dots over W rows [o0, o1) for RR rows of x: WR rows of W at a time, the
/// largest with RR * WR <= 8, then the remainder one by one.
template <int RR>
void dot_rows(const float* x, int64_t in, const float* w, int64_t o0, int64_t o1, const float* limit, float* y,
              int64_t out) {
  constexpr int WR = RR >= 5 ? 1 : RR >= 3 ? 2 : 4;
  int64_t o = o0;
  for (; o + WR <= o1; o += WR) {
    dots<RR, WR>(x, in, w + o * in, limit, y + o, out);
  }
  for (; o < o1; ++o) dots<RR, 1>(x, in, w + o * in, limit, y + o, out);
}

/// y = x W^T for few rows: each thread takes an equal share of W's rows and
/// streams it once per 8 rows of x, in chunks of ~256 KB (L2), while the
/// rows of x pass over each row of W from L1 (dots). Memory-bound at one
/// row, FMA-bound from ~4.
void linear_few(const float* x, const float* w, int64_t n, int64_t in, int64_t out, float* y) {
  const int64_t chunk = hi<int64_t>(8, (int64_t{64} << 10) / in / 8 * 8);
#pragma omp parallel
  {
    const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t begin = out * t / threads, end = out * (t + 1) / threads;
    const float* limit = w + hi<int64_t>(begin, end - 1) * in;  // the last row's start: in bounds
    for (int64_t o0 = begin; o0 < end; o0 += chunk) {
      const int64_t o1 = lo(end, o0 + chunk);
      for (int64_t r = 0; r < n; r += 8) {
        const float* xr = x + r * in;
        float* yr = y + r * out;
        switch (lo<int64_t>(8, n - r)) {
          case 8: dot_rows<8>(xr, in, w, o0, o1, limit, yr, out); break;
          case 7: dot_rows<7>(xr, in, w, o0, o1, limit, yr, out); break;
          case 6: dot_rows<6>(xr, in, w, o0, o1, limit, yr, out); break;
          case 5: dot_rows<5>(xr, in, w, o0, o1, limit, yr, out); break;
          case 4: dot_rows<4>(xr, in, w, o0, o1, limit, yr, out); break;
          case 3: dot_rows<3>(xr, in, w, o0, o1, limit, yr, out); break;
          case 2: dot_rows<2>(xr, in, w, o0, o1, limit, yr, out); break;
          default: dot_rows<1>(xr, in, w, o0, o1, limit, yr, out);
        }
      }
    }
  }
}

void linear(const float* x, const float* w, int64_t n, int64_t in, int64_t out, float* y) {
  if (n < kFewRows) return linear_few(x, w, n, in, out, y);
  Map(y, n, out).noalias() = ConstMap(x, n, in) * ConstMap(w, out, in).transpose();
}

void linear_dx(const float* dy, const float* w, int64_t n, int64_t in, int64_t out, float* dx, bool accumulate) {
  if (accumulate)
    Map(dx, n, in).noalias() += ConstMap(dy, n, out) * ConstMap(w, out, in);
  else
    Map(dx, n, in).noalias() = ConstMap(dy, n, out) * ConstMap(w, out, in);
}

void linear_dw(const float* dy, const float* x, int64_t n, int64_t in, int64_t out, float* dw) {
  Map(dw, out, in).noalias() += ConstMap(dy, n, out).transpose() * ConstMap(x, n, in);
}

constexpr int64_t T = kAttentionTile;

/// Scores of query rows [i0, i0 + rows) against keys [0, keys): scaled, with
/// the causal mask as -inf. S is [rows, keys] (row stride keys).
void scores(const float* q, int64_t qs, const float* k, int64_t kvs, int64_t i0, int64_t rows, int64_t keys, int64_t hd,
            float scale, bool causal, float* S) {
  Map s(S, rows, keys);
  s.noalias() = ConstStrided(q + i0 * qs, rows, hd, Eigen::OuterStride<>(qs)) *
                ConstStrided(k, keys, hd, Eigen::OuterStride<>(kvs)).transpose();
  s *= scale;
  if (causal)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = i0 + r + 1; j < keys; ++j) S[r * keys + j] = -kInf;
}

void attention_forward(const float* q, const float* k, const float* v, const int64_t* offsets, int64_t segments,
                       int64_t heads, int64_t kv_heads, int64_t hd, bool causal, float* out, float* lse, float* scratch,
                       int64_t max_keys) {
  const int64_t group = heads / kv_heads, qs = heads * hd, kvs = kv_heads * hd;
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  // Tasks: (segment, head, query tile); each writes its own rows of out and lse.
  int64_t tasks = 0;
  for (int64_t s = 0; s < segments; ++s) tasks += heads * ((offsets[s + 1] - offsets[s] + T - 1) / T);
#pragma omp parallel
  {
    float* S = scratch + static_cast<int64_t>(omp_get_thread_num()) * (2 * T + 1) * max_keys;
    // Static assignment of tasks to threads, by walking the same enumeration.
#pragma omp for schedule(static)
    for (int64_t task = 0; task < tasks; ++task) {
      int64_t rest = task, s = 0;
      for (;; ++s) {
        const int64_t here = heads * ((offsets[s + 1] - offsets[s] + T - 1) / T);
        if (rest < here) break;
        rest -= here;
      }
      const int64_t begin = offsets[s], n = offsets[s + 1] - begin, tiles = (n + T - 1) / T;
      const int64_t h = rest / tiles, tile = rest % tiles, g = h / group;
      const int64_t i0 = tile * T, rows = lo(T, n - i0), keys = causal ? i0 + rows : n;
      const float* qh = q + begin * qs + h * hd;
      const float* kg = k + begin * kvs + g * hd;
      const float* vg = v + begin * kvs + g * hd;
      scores(qh, qs, kg, kvs, i0, rows, keys, hd, scale, causal, S);
      for (int64_t r = 0; r < rows; ++r) {
        float* row = S + r * keys;
        const int64_t seen = causal ? i0 + r + 1 : keys;  // the masked rest is -inf: probability 0
        float best = -kInf;
        for (int64_t j = 0; j < seen; ++j) best = hi(best, row[j]);
        for (int64_t j = 0; j < seen; ++j) row[j] -= best;
        exp_inplace(row, seen);
        float sum = 0;
        for (int64_t j = 0; j < seen; ++j) sum += row[j];
        const float inv = 1.0f / sum;
        for (int64_t j = 0; j < seen; ++j) row[j] *= inv;
        fill_zero(row + seen, row + keys);
        lse[(begin + i0 + r) * heads + h] = best + std::log(sum);
      }
      Strided(out + (begin + i0) * qs + h * hd, rows, hd, Eigen::OuterStride<>(qs)).noalias() =
          ConstMap(S, rows, keys) * ConstStrided(vg, keys, hd, Eigen::OuterStride<>(kvs));
    }
  }
}

void attention_backward(const float* dout, const float* out, const float* q, const float* k, const float* v,
                        const float* lse, const int64_t* offsets, int64_t segments, int64_t heads, int64_t kv_heads,
                        int64_t hd, bool causal, float* dq, float* dk, float* dv, float* scratch, int64_t max_keys) {
  const int64_t group = heads / kv_heads, qs = heads * hd, kvs = kv_heads * hd;
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  // One task per (segment, KV head): it owns that head's dk, dv rows and the
  // dq of its group's query heads, so no two threads add to one value.
#pragma omp parallel
  {
    float* P = scratch + static_cast<int64_t>(omp_get_thread_num()) * (2 * T + 1) * max_keys;
    float* dP = P + T * max_keys;
    float* D = dP + T * max_keys;
#pragma omp for schedule(static)
    for (int64_t task = 0; task < segments * kv_heads; ++task) {
      const int64_t s = task / kv_heads, g = task % kv_heads;
      const int64_t begin = offsets[s], n = offsets[s + 1] - begin;
      const float* kg = k + begin * kvs + g * hd;
      const float* vg = v + begin * kvs + g * hd;
      Strided dK(dk + begin * kvs + g * hd, n, hd, Eigen::OuterStride<>(kvs));
      Strided dV(dv + begin * kvs + g * hd, n, hd, Eigen::OuterStride<>(kvs));
      dK.setZero();
      dV.setZero();
      for (int64_t h = g * group; h < (g + 1) * group; ++h) {
        const float* qh = q + begin * qs + h * hd;
        const float* oh = out + begin * qs + h * hd;
        const float* gh = dout + begin * qs + h * hd;
        float* dqh = dq + begin * qs + h * hd;
        for (int64_t i0 = 0; i0 < n; i0 += T) {
          const int64_t rows = lo(T, n - i0), keys = causal ? i0 + rows : n;
          scores(qh, qs, kg, kvs, i0, rows, keys, hd, scale, causal, P);
          for (int64_t r = 0; r < rows; ++r) {
            const float l = lse[(begin + i0 + r) * heads + h];
            float* row = P + r * keys;
            const int64_t seen = causal ? i0 + r + 1 : keys;
            for (int64_t j = 0; j < seen; ++j) row[j] -= l;
            exp_inplace(row, seen);
            fill_zero(row + seen, row + keys);
            float delta = 0;  // D_i = dout_i . out_i
            for (int64_t e = 0; e < hd; ++e) delta += gh[(i0 + r) * qs + e] * oh[(i0 + r) * qs + e];
            D[r] = delta;
          }
          const ConstStrided dO(gh + i0 * qs, rows, hd, Eigen::OuterStride<>(qs));
          const ConstStrided Q(qh + i0 * qs, rows, hd, Eigen::OuterStride<>(qs));
          const ConstStrided K(kg, keys, hd, Eigen::OuterStride<>(kvs));
          const ConstStrided V(vg, keys, hd, Eigen::OuterStride<>(kvs));
          Map dp(dP, rows, keys);
          dp.noalias() = dO * V.transpose();
          Map p(P, rows, keys);
          dV.topRows(keys).noalias() += p.transpose() * dO;
          // dS = P (dP - D) scale, in place of dP.
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = 0; j < keys; ++j) dP[r * keys + j] = P[r * keys + j] * (dP[r * keys + j] - D[r]) * scale;
          Strided(dqh + i0 * qs, rows, hd, Eigen::OuterStride<>(qs)).noalias() = dp * K;
          dK.topRows(keys).noalias() += dp.transpose() * Q;
        }
      }
    }
  }
}

/// Masked probabilities of one tile, in place over its scores s = q.k:
/// exp(scale s - base_i) where allowed, exactly 0 elsewhere. Forward
/// (lse_in null): base_i = the row's allowed maximum, then normalised, its
/// log-sum-exp written to lse_out; backward: base_i = lse_in[i].
void tile_probabilities(float* p, int64_t rows, int64_t keys, const unsigned char* allowed, float scale,
                        const float* lse_in, float* lse_out, int64_t lse_stride) {
  for (int64_t i = 0; i < rows; ++i) {
    float* s = p + i * keys;
    const unsigned char* a = allowed + i * keys;
    float base = 0;
    if (lse_in) {
      base = lse_in[i * lse_stride];
    } else {
      base = -kInf;
      for (int64_t j = 0; j < keys; ++j)
        if (a[j]) base = hi(base, s[j] * scale);
    }
    for (int64_t j = 0; j < keys; ++j) s[j] = a[j] ? s[j] * scale - base : -kInf;
    exp_inplace(s, keys);
    float sum = 0;
    for (int64_t j = 0; j < keys; ++j) {
      if (!a[j]) s[j] = 0.0f;
      sum += s[j];
    }
    if (lse_in) continue;
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j < keys; ++j) s[j] *= inv;
    lse_out[i * lse_stride] = base + std::log(sum);
  }
}

void sparse_tile_forward(const float* q, int64_t qs, int64_t rows, const float* K, const float* V, int64_t keys,
                         int64_t hd, const unsigned char* allowed, float scale, float* out, float* lse,
                         int64_t lse_stride, float* p) {
  Map P(p, rows, keys);
  P.noalias() = ConstStrided(q, rows, hd, Eigen::OuterStride<>(qs)) * ConstMap(K, keys, hd).transpose();
  tile_probabilities(p, rows, keys, allowed, scale, nullptr, lse, lse_stride);
  Strided(out, rows, hd, Eigen::OuterStride<>(qs)).noalias() = P * ConstMap(V, keys, hd);
}

void sparse_tile_backward(const float* q, const float* dout, const float* out, int64_t qs, int64_t rows,
                          const float* K, const float* V, int64_t keys, int64_t hd, const unsigned char* allowed,
                          float scale, const float* lse, int64_t lse_stride, float* dq, float* dK, float* dV, float* p,
                          float* dp) {
  const ConstStrided Q(q, rows, hd, Eigen::OuterStride<>(qs)), dO(dout, rows, hd, Eigen::OuterStride<>(qs));
  const ConstMap Km(K, keys, hd), Vm(V, keys, hd);
  Map P(p, rows, keys), dP(dp, rows, keys);
  P.noalias() = Q * Km.transpose();
  tile_probabilities(p, rows, keys, allowed, scale, lse, nullptr, lse_stride);
  dP.noalias() = dO * Vm.transpose();
  for (int64_t i = 0; i < rows; ++i) {
    const float* o = out + i * qs;
    const float* g = dout + i * qs;
    float delta = 0;
    for (int64_t e = 0; e < hd; ++e) delta += g[e] * o[e];
    float* d = dp + i * keys;
    const float* pr = p + i * keys;
    for (int64_t j = 0; j < keys; ++j) d[j] = pr[j] * (d[j] - delta) * scale;
  }
  Strided(dq, rows, hd, Eigen::OuterStride<>(qs)).noalias() = dP * Km;
  Map(dK, keys, hd).noalias() += dP.transpose() * Q;
  Map(dV, keys, hd).noalias() += P.transpose() * dO;
}

}  // namespace

extern const DenseOps ops;
const DenseOps ops{NK_LM_DENSE_ISA, linear,           linear_dx,          linear_dw, attention_forward, attention_backward,
                   sparse_tile_forward, sparse_tile_backward};

}  // namespace nk::lm::NK_LM_DENSE_NAMESPACE
