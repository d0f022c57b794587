// sparse_attention.cpp - block-sparse attention over a packed batch (see
// sparse_attention.hpp): the selection, then tiles of queries whose scores
// are Eigen products over the union of their selected blocks.
#include "nk/lm/sparse_attention.hpp"

#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "dense.hpp"

namespace nk::lm {

namespace {

/// Query rows per tile: a block's queries (their forced blocks agree, so the
/// union stays small), 16 to 64 of them.
int64_t tile_rows(const BlockSelectorConfig& c) {
  return std::clamp<int64_t>(c.block, 16, 64);
}

template <class T>
using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using RowsMap = Eigen::Map<Mat<T>, 0, Eigen::OuterStride<>>;
template <class T>
using ConstRowsMap = Eigen::Map<const Mat<T>, 0, Eigen::OuterStride<>>;

/// Tile r0 .. r0 + rows - 1 of segment [begin, begin + n), KV head g: the
/// union of the rows' blocks (ascending), where each block's keys start in
/// the gathered rows, and which (row, gathered key) pairs may attend.
struct Tile {
  std::vector<int32_t> blocks;
  std::vector<int64_t> start;    // blocks.size() + 1
  std::vector<uint8_t> allowed;  // [rows, keys]
  std::vector<int32_t> slot;     // block -> index in blocks, or -1
  int64_t keys = 0;

  void build(const BlockSelectorConfig& c, const int32_t* sel, int64_t begin, int64_t n, int64_t kv_heads, int64_t g,
             int64_t r0, int64_t rows) {
    const int64_t W = c.width(), B = c.block, nb = (n + B - 1) / B;
    slot.assign(static_cast<size_t>(nb), -1);
    blocks.clear();
    for (int64_t i = 0; i < rows; ++i) {
      const int32_t* s = sel + ((begin + r0 + i) * kv_heads + g) * W;
      for (int64_t e = 0; e < W && s[e] >= 0; ++e)
        if (slot[static_cast<size_t>(s[e])] < 0) {
          slot[static_cast<size_t>(s[e])] = 0;
          blocks.push_back(s[e]);
        }
    }
    std::sort(blocks.begin(), blocks.end());
    start.assign(blocks.size() + 1, 0);
    for (size_t u = 0; u < blocks.size(); ++u) {
      slot[static_cast<size_t>(blocks[u])] = static_cast<int32_t>(u);
      start[u + 1] = start[u] + std::min(B, n - blocks[u] * B);
    }
    keys = start.back();
    allowed.assign(static_cast<size_t>(rows * keys), 0);
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t t = r0 + i;
      const int32_t* s = sel + ((begin + t) * kv_heads + g) * W;
      uint8_t* a = allowed.data() + i * keys;
      for (int64_t e = 0; e < W && s[e] >= 0; ++e) {
        const int64_t u = slot[static_cast<size_t>(s[e])], first = static_cast<int64_t>(s[e]) * B;
        for (int64_t j = 0; j < start[u + 1] - start[u] && first + j <= t; ++j) a[start[u] + j] = 1;
      }
    }
  }

  /// Rows of the tile's blocks from token-major rows x (stride floats apart, head g's hd values).
  template <class T>
  void gather(const T* x, int64_t stride, int64_t begin, int64_t B, int64_t hd, Mat<T>& out) const {
    out.resize(keys, hd);
    for (size_t u = 0; u < blocks.size(); ++u)
      for (int64_t j = 0; j < start[u + 1] - start[u]; ++j) {
        const T* row = x + (begin + blocks[u] * B + j) * stride;
        std::copy(row, row + hd, out.row(start[u] + j).data());
      }
  }
};

/// Masked, scaled scores of one head's tile rows -> probabilities, in place.
/// With lse_in (the backward) p = exp(s - lse); without, the row's softmax
/// and its log-sum-exp written to lse_out.
template <class T>
void probabilities(Mat<T>& S, const Tile& tile, T scale, const T* lse_in, int64_t lse_stride, T* lse_out) {
  const int64_t rows = S.rows(), keys = S.cols();
  for (int64_t i = 0; i < rows; ++i) {
    T* s = S.row(i).data();
    const uint8_t* a = tile.allowed.data() + i * keys;
    if (lse_in) {
      const T l = lse_in[i * lse_stride];
      for (int64_t j = 0; j < keys; ++j) s[j] = a[j] ? std::exp(s[j] * scale - l) : T(0);
      continue;
    }
    T best = -std::numeric_limits<T>::infinity();
    for (int64_t j = 0; j < keys; ++j)
      if (a[j]) best = std::max(best, s[j] * scale);
    T sum = 0;
    for (int64_t j = 0; j < keys; ++j) {
      s[j] = a[j] ? std::exp(s[j] * scale - best) : T(0);
      sum += s[j];
    }
    const T inv = T(1) / sum;
    for (int64_t j = 0; j < keys; ++j) s[j] *= inv;
    lse_out[i * lse_stride] = best + std::log(sum);
  }
}

}  // namespace

void select_batch(const BlockSelectorConfig& c, const float* q, const float* k, const int64_t* offsets,
                  int64_t segments, int64_t heads, int64_t kv_heads, int64_t hd, int32_t* sel) {
  const int64_t qs = heads * hd, kvs = kv_heads * hd, W = c.width();
  std::vector<float> pooled;
  for (int64_t s = 0; s < segments; ++s) {
    const int64_t begin = offsets[s], n = offsets[s + 1] - begin, nb = n / c.block;
    pooled.assign(static_cast<size_t>(std::max<int64_t>(kv_heads * nb * hd, 1)), 0.0f);
    pool_keys_strided(k + begin * kvs, hd, kvs, kv_heads, n, hd, c.block, pooled.data());
#pragma omp parallel
    {
      std::vector<double> scores(static_cast<size_t>(nb + 1)), scratch(static_cast<size_t>(nb + 1));
#pragma omp for schedule(dynamic, 16)
      for (int64_t task = 0; task < n * kv_heads; ++task) {
        const int64_t t = task / kv_heads, g = task % kv_heads;
        group_scores_at(c, q + (begin + t) * qs, hd, heads, t, pooled.data(), kv_heads, nb, hd, g, scores.data(),
                        scratch.data());
        select_blocks(c, t, scores.data(), sel + ((begin + t) * kv_heads + g) * W);
      }
    }
  }
}

template <class T>
void sparse_attention_forward(const BlockSelectorConfig& c, const int32_t* sel, const T* q, const T* k, const T* v,
                              const int64_t* offsets, int64_t segments, int64_t heads, int64_t kv_heads, int64_t hd,
                              T* out, T* lse) {
  const int64_t G = heads / kv_heads, qs = heads * hd, kvs = kv_heads * hd;
  const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(hd)));
  // Tasks: (segment, KV head, tile); each writes its own rows of its group's heads.
  const int64_t tr = tile_rows(c);
  std::vector<int64_t> first_task(static_cast<size_t>(segments + 1), 0);
  for (int64_t s = 0; s < segments; ++s)
    first_task[static_cast<size_t>(s + 1)] =
        first_task[static_cast<size_t>(s)] + kv_heads * ((offsets[s + 1] - offsets[s] + tr - 1) / tr);
#pragma omp parallel
  {
    Tile tile;
    Mat<T> K, V, S;
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < first_task.back(); ++task) {
      const int64_t s = std::upper_bound(first_task.begin(), first_task.end(), task) - first_task.begin() - 1;
      const int64_t local = task - first_task[static_cast<size_t>(s)], g = local % kv_heads, r0 = local / kv_heads * tr;
      const int64_t begin = offsets[s], n = offsets[s + 1] - begin, rows = std::min(tr, n - r0);
      tile.build(c, sel, begin, n, kv_heads, g, r0, rows);
      tile.gather(k + g * hd, kvs, begin, c.block, hd, K);
      tile.gather(v + g * hd, kvs, begin, c.block, hd, V);
      for (int64_t h = g * G; h < (g + 1) * G; ++h) {
        const int64_t at = (begin + r0) * qs + h * hd;
        if constexpr (std::is_same_v<T, float>) {
          S.resize(rows, tile.keys);
          dense_ops().sparse_tile_forward(q + at, qs, rows, K.data(), V.data(), tile.keys, hd, tile.allowed.data(),
                                          scale, out + at, lse + (begin + r0) * heads + h, heads, S.data());
        } else {
          const ConstRowsMap<T> Q(q + at, rows, hd, Eigen::OuterStride<>(qs));
          S.noalias() = Q * K.transpose();
          probabilities(S, tile, scale, static_cast<const T*>(nullptr), heads, lse + (begin + r0) * heads + h);
          RowsMap<T>(out + at, rows, hd, Eigen::OuterStride<>(qs)).noalias() = S * V;
        }
      }
    }
  }
}

template <class T>
void sparse_attention_backward(const BlockSelectorConfig& c, const int32_t* sel, const T* dout, const T* out,
                               const T* q, const T* k, const T* v, const T* lse, const int64_t* offsets,
                               int64_t segments, int64_t heads, int64_t kv_heads, int64_t hd, T* dq, T* dk, T* dv) {
  const int64_t G = heads / kv_heads, qs = heads * hd, kvs = kv_heads * hd;
  const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(hd)));
  // One task per (segment, KV head): it owns that head's dk and dv rows and its group's dq.
#pragma omp parallel
  {
    Tile tile;
    Mat<T> K, V, P, dP, dK, dV;
    std::vector<T> delta;
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < segments * kv_heads; ++task) {
      const int64_t s = task / kv_heads, g = task % kv_heads;
      const int64_t begin = offsets[s], n = offsets[s + 1] - begin;
      for (int64_t j = 0; j < n; ++j) {
        std::fill_n(dk + (begin + j) * kvs + g * hd, hd, T(0));
        std::fill_n(dv + (begin + j) * kvs + g * hd, hd, T(0));
      }
      const int64_t tr = tile_rows(c);
      for (int64_t r0 = 0; r0 < n; r0 += tr) {
        const int64_t rows = std::min(tr, n - r0);
        tile.build(c, sel, begin, n, kv_heads, g, r0, rows);
        tile.gather(k + g * hd, kvs, begin, c.block, hd, K);
        tile.gather(v + g * hd, kvs, begin, c.block, hd, V);
        dK.setZero(tile.keys, hd);
        dV.setZero(tile.keys, hd);
        delta.resize(static_cast<size_t>(rows));
        for (int64_t h = g * G; h < (g + 1) * G; ++h) {
          const int64_t at = (begin + r0) * qs + h * hd;
          if constexpr (std::is_same_v<T, float>) {
            P.resize(rows, tile.keys);
            dP.resize(rows, tile.keys);
            dense_ops().sparse_tile_backward(q + at, dout + at, out + at, qs, rows, K.data(), V.data(), tile.keys, hd,
                                             tile.allowed.data(), scale, lse + (begin + r0) * heads + h, heads, dq + at,
                                             dK.data(), dV.data(), P.data(), dP.data());
            continue;
          }
          const ConstRowsMap<T> Q(q + at, rows, hd, Eigen::OuterStride<>(qs));
          const ConstRowsMap<T> dO(dout + at, rows, hd, Eigen::OuterStride<>(qs));
          const ConstRowsMap<T> O(out + at, rows, hd, Eigen::OuterStride<>(qs));
          P.noalias() = Q * K.transpose();
          probabilities(P, tile, scale, lse + (begin + r0) * heads + h, heads, static_cast<T*>(nullptr));
          dP.noalias() = dO * V.transpose();
          for (int64_t i = 0; i < rows; ++i) delta[static_cast<size_t>(i)] = dO.row(i).dot(O.row(i));
          // dS = P (dP - delta) scale, in dP's place.
          for (int64_t i = 0; i < rows; ++i)
            for (int64_t j = 0; j < tile.keys; ++j)
              dP(i, j) = P(i, j) * (dP(i, j) - delta[static_cast<size_t>(i)]) * scale;
          RowsMap<T>(dq + at, rows, hd, Eigen::OuterStride<>(qs)).noalias() = dP * K;
          dK.noalias() += dP.transpose() * Q;
          dV.noalias() += P.transpose() * dO;
        }
        for (size_t u = 0; u < tile.blocks.size(); ++u)
          for (int64_t j = 0; j < tile.start[u + 1] - tile.start[u]; ++j) {
            const int64_t row = begin + tile.blocks[u] * c.block + j;
            T* dkr = dk + row * kvs + g * hd;
            T* dvr = dv + row * kvs + g * hd;
            const T* a = dK.row(tile.start[u] + j).data();
            const T* b = dV.row(tile.start[u] + j).data();
            for (int64_t e = 0; e < hd; ++e) dkr[e] += a[e], dvr[e] += b[e];
          }
      }
    }
  }
}

double sparse_keys_per_query(const BlockSelectorConfig& c, int64_t n) {
  std::vector<int32_t> forced(static_cast<size_t>(c.init_blocks + c.local_blocks));
  double total = 0;
  for (int64_t t = 0; t < n; ++t) {
    const int64_t blocks = forced_blocks(c, t, forced.data()) + std::min(c.topk, c.free_candidates(t));
    total += static_cast<double>((blocks - 1) * c.block + t % c.block + 1);
  }
  return n > 0 ? total / static_cast<double>(n) : 0.0;
}

#define NK_LM_SPARSE(T)                                                                                                \
  template void sparse_attention_forward<T>(const BlockSelectorConfig&, const int32_t*, const T*, const T*, const T*,  \
                                            const int64_t*, int64_t, int64_t, int64_t, int64_t, T*, T*);               \
  template void sparse_attention_backward<T>(const BlockSelectorConfig&, const int32_t*, const T*, const T*, const T*, \
                                             const T*, const T*, const T*, const int64_t*, int64_t, int64_t, int64_t,  \
                                             int64_t, T*, T*, T*);
NK_LM_SPARSE(float)
NK_LM_SPARSE(double)
#undef NK_LM_SPARSE

}  // namespace nk::lm
