// louver_search.cpp - per-query lookup tables of centroid scores, a bound per key
// from its codes and residuals, exact scores for the keys the bound cannot
// rule out, and for the buffer.
#include "nk/kernels/louver_search.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace nk::louver {

double exact_score(const float* q, const float* k, int64_t dims) {
  double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 8 <= dims; j += 8) {
    for (int l = 0; l < 8; ++l) lane[l] += static_cast<double>(q[j + l]) * static_cast<double>(k[j + l]);
  }
  for (int l = 0; j < dims; ++j, ++l) lane[l] += static_cast<double>(q[j]) * static_cast<double>(k[j]);
  double sum = 0;
  for (double partial : lane) sum += partial;
  return sum;
}

namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// A float32 dot product in eight interleaved lanes (vectorises without
/// reassociation); its error is below (d + 8) float ulps of |q| |k|. The
/// candidates' float filter: an AVX2 clone (one 8-lane register instead of
/// two SSE halves, the same operations in the same order, so the same bits)
/// is picked at load time where the CPU has it.
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("avx2", "default")))
#endif
float fast_score(const float* q, const float* k, int64_t dims) {
  float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 8 <= dims; j += 8) {
    for (int l = 0; l < 8; ++l) lane[l] += q[j + l] * k[j + l];
  }
  for (int l = 0; j < dims; ++j, ++l) lane[l] += q[j] * k[j];
  float sum = 0;
  for (float partial : lane) sum += partial;
  return sum;
}

void scan_range(const HeadIndex& head, const float* q, int64_t dims, int64_t begin, int64_t end, double threshold,
                SearchResult& out) {
  for (int64_t i = begin; i < end; ++i) {
    const double score = exact_score(q, head.keys.data() + i * dims, dims);
    if (score >= threshold) out.hits.push_back({i, score});
  }
  out.scanned += end - begin;
}

}  // namespace

/// |q| rounded up, times the float error factor of fast_score and Eigen's GEMV.
double float_error_unit(const float* query, int64_t dims) {
  double squares = 0;
  for (int64_t j = 0; j < dims; ++j) squares += static_cast<double>(query[j]) * query[j];
  return static_cast<double>(2 * dims + 16) * FLT_EPSILON * std::sqrt(squares) * (1 + static_cast<double>(dims + 4) * DBL_EPSILON);
}

// For key i with cluster c_s and residual rho_s in subspace s, in real numbers
//   q.k = sum_s q_s.mu_{s,c_s} + q_s.(k_s - mu_{s,c_s}) <= sum_s q_s.mu_{s,c_s} + |q_s| rho_s
// (Cauchy-Schwarz per subspace; rho_s is rounded up). In floating point the
// bound is raised by a margin that covers its own rounding and the rounding of
// exact_score, so no key with exact_score >= T is ever skipped.
QueryPrep prepare_query(const HeadIndex& head, const Subspaces& sub, const float* query, double threshold, Bound mode) {
  QueryPrep prep;
  prepare_query(head, sub, query, threshold, mode, prep);
  return prep;
}

void prepare_query(const HeadIndex& head, const Subspaces& sub, const float* query, double threshold, Bound mode,
                   QueryPrep& prep) {
  const int64_t dims = sub.dims, s_count = sub.count();
  // Per-query tables, in float for a fast key pass; every entry is rounded up
  // and the float sum gets its own margin below.
  prep.table_offset.assign(1, 0);
  for (int64_t s = 0; s < s_count; ++s) prep.table_offset.push_back(prep.table_offset.back() + head.books[static_cast<size_t>(s)].clusters());
  prep.tables.resize(static_cast<size_t>(prep.table_offset.back()));
  prep.q_norm.resize(static_cast<size_t>(s_count));
  double slack = 0;  // bounds |any key's bound terms| + sum_j |q_j k_j| for every key
  std::vector<double> top(static_cast<size_t>(s_count));
  for (int64_t s = 0; s < s_count; ++s) {
    const int64_t offset = sub.begin[static_cast<size_t>(s)], width = sub.width(s);
    double squares = 0;
    for (int64_t j = 0; j < width; ++j) squares += static_cast<double>(query[offset + j]) * query[offset + j];
    const double norm = std::sqrt(squares) * (1 + static_cast<double>(width + 4) * DBL_EPSILON);
    prep.q_norm[static_cast<size_t>(s)] = mode == Bound::centroid_only ? 0.0f : std::nextafter(static_cast<float>(norm), INFINITY);
    const Codebook& book = head.books[static_cast<size_t>(s)];
    float* row = prep.tables.data() + prep.table_offset[static_cast<size_t>(s)];
    // A float GEMV: its error (and that of float centroids) is at most a few
    // float ulps of |q_s| |mu|, which the margin covers through 'worst'.
    Eigen::Map<const RowMatrix> centroids(book.centroid_f32.data(), book.clusters(), width);
    Eigen::Map<Eigen::VectorXf>(row, book.clusters()).noalias() =
        centroids * Eigen::Map<const Eigen::VectorXf>(query + offset, width);
    // The largest term a key can have in this subspace (float products are
    // monotone, so no packed residual gives a larger one).
    float largest = -INFINITY;
    for (int64_t c = 0; c < book.clusters(); ++c) largest = std::max(largest, row[c]);
    const float residual_term = prep.q_norm[static_cast<size_t>(s)] *
                                (head.residual16_max.empty() ? 0.0f : head.residual16_max[static_cast<size_t>(s)]);
    top[static_cast<size_t>(s)] = static_cast<double>(largest) + static_cast<double>(residual_term);
    const double worst = 2 * norm * book.max_norm;
    slack += worst + 2 * norm * book.max_residual;
  }
  // Margin: rounding of the float tables (width + 2 float operations each, on
  // float centroids), of the float key pass (2S operations), and of
  // exact_score (d double operations), each relative to 'slack'.
  const double margin = mode == Bound::safe
                            ? (static_cast<double>(2 * (dims + 2 * s_count) + 16) * FLT_EPSILON + static_cast<double>(2 * dims + 16) * DBL_EPSILON) * slack
                            : 0.0;
  prep.cut = threshold - margin;
  prep.unit = float_error_unit(query, dims);
  // The progressive pass sums the same float terms as the full pass in
  // another order and compares partial + rest in double. Each float sum of at
  // most 2S terms is within 2S float ulps of 'slack' of the real sum, and
  // rest (double, from the largest float terms) adds double rounding only; so
  // a key dropped against prune_cut has a full float bound below cut.
  prep.rest.assign(static_cast<size_t>(s_count) + 1, 0.0);
  for (int64_t t = s_count - 1; t >= 0; --t)
    prep.rest[static_cast<size_t>(t)] = prep.rest[static_cast<size_t>(t) + 1] + top[static_cast<size_t>(head.order[static_cast<size_t>(t)])];
  prep.prune_cut = prep.cut - static_cast<double>(4 * s_count + 16) * FLT_EPSILON * slack;
  // |q_R|: in real numbers the terms of the subspaces after the warm ones
  // sum to at least q_R . k_R (each bounds q_s . k_s from above), and
  // q_R . k_R <= |q_R| |k_R|; the float partial bound's rounding is within
  // the distance from cut to prune_cut, as above.
  double rest_squares = 0;
  int64_t rest_terms = 0;
  for (int64_t t = head.warm; t < s_count; ++t) {
    const auto s = head.order[static_cast<size_t>(t)];
    for (int64_t j = sub.begin[static_cast<size_t>(s)]; j < sub.begin[static_cast<size_t>(s) + 1]; ++j, ++rest_terms)
      rest_squares += static_cast<double>(query[j]) * query[j];
  }
  prep.rest_q_norm = norm_up(rest_squares, rest_terms);
}

namespace {

/// bound[i] += norm * rho_i, then bound[i] += entries[code_i], for i < count:
/// one subspace of the warm pass. The AVX2 version gathers eight entries at a
/// time; per key it does the same two float operations in the same order
/// (and never fuses them), so every version gives the same bits.
void warm_row_scalar(const float* entries, const uint16_t* code, const uint16_t* rho, float norm, float* bound,
                     int64_t count) {
  for (int64_t i = 0; i < count; ++i) bound[i] += norm * unpack_residual(rho[i]);
  for (int64_t i = 0; i < count; ++i) bound[i] += entries[code[i]];
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) void warm_row_avx2(const float* entries, const uint16_t* code, const uint16_t* rho,
                                                   float norm, float* bound, int64_t count) {
  const __m256 n8 = _mm256_set1_ps(norm);
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256i r = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rho + i))), 16);
    const __m256i c = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(code + i)));
    __m256 b = _mm256_add_ps(_mm256_loadu_ps(bound + i), _mm256_mul_ps(n8, _mm256_castsi256_ps(r)));
    b = _mm256_add_ps(b, _mm256_i32gather_ps(entries, c, 4));
    _mm256_storeu_ps(bound + i, b);
  }
  warm_row_scalar(entries, code + i, rho + i, norm, bound + i, count - i);
}
#endif

/// The same from the interleaved words of HeadIndex::warm_rows: the upper
/// half of a word is the packed residual's float bits, the lower its code.
void warm_words_scalar(const float* entries, const uint32_t* word, float norm, float* bound, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    const uint32_t bits = word[i] & 0xffff0000u;
    float rho;
    std::memcpy(&rho, &bits, sizeof rho);
    bound[i] = bound[i] + norm * rho;
    bound[i] += entries[word[i] & 0xffffu];
  }
}

/// Keeps the keys whose bound reaches 'floor': alive[j] and bound[j] for
/// j < live are packed down to those; returns how many are kept.
int64_t keep_scalar(uint32_t* alive, float* bound, int64_t live, float floor) {
  int64_t kept = 0;
  for (int64_t j = 0; j < live; ++j) {
    const float b = bound[j];
    alive[kept] = alive[j];
    bound[kept] = b;
    kept += b >= floor ? 1 : 0;
  }
  return kept;
}

/// The first keep of a block (alive[j] = j for j < live): key j stays if
/// bound[j] reaches 'floor' and bound[j] + q_rest rest_norm[j] (in double)
/// reaches 'bar'.
int64_t keep_norm_scalar(uint32_t* alive, float* bound, const float* rest_norm, int64_t live, float floor, double q_rest,
                         double bar) {
  int64_t kept = 0;
  for (int64_t j = 0; j < live; ++j) {
    const float b = bound[j];
    alive[kept] = alive[j];
    bound[kept] = b;
    kept += b >= floor && static_cast<double>(b) + q_rest * static_cast<double>(rest_norm[j]) >= bar ? 1 : 0;
  }
  return kept;
}

#if defined(__x86_64__)
/// For each 8-bit mask, the lanes it selects, in order, packed down (the
/// lane indices of a left-packing permutation), one byte each.
const std::array<uint64_t, 256> kPack = [] {
  std::array<uint64_t, 256> table{};
  for (unsigned mask = 0; mask < 256; ++mask) {
    uint64_t lanes = 0;
    for (unsigned lane = 0, at = 0; lane < 8; ++lane)
      if (mask >> lane & 1) lanes |= static_cast<uint64_t>(lane) << (8 * at++);
    table[mask] = lanes;
  }
  return table;
}();

/// Packs down the lanes of (a, b) set in 'mask' to alive + kept and bound +
/// kept (both written 8 lanes wide); lanes from 'valid' on do not count.
__attribute__((target("avx2"))) inline int64_t pack_mask(__m256i a, __m256 b, unsigned mask, int64_t valid,
                                                         uint32_t* alive, float* bound, int64_t kept) {
  if (valid < 8) mask &= (1u << valid) - 1;
  const __m256i lanes = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(kPack[mask])));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(alive + kept), _mm256_permutevar8x32_epi32(a, lanes));
  _mm256_storeu_ps(bound + kept, _mm256_permutevar8x32_ps(b, lanes));
  return kept + __builtin_popcount(mask);
}

/// pack_mask of the lanes whose b reaches floor8.
__attribute__((target("avx2"))) inline int64_t pack_lanes(__m256i a, __m256 b, __m256 floor8, int64_t valid,
                                                          uint32_t* alive, float* bound, int64_t kept) {
  const auto mask = static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(b, floor8, _CMP_GE_OQ)));
  return pack_mask(a, b, mask, valid, alive, bound, kept);
}

// Works on whole groups of eight lanes: 'alive' and 'bound' must have room for
// live rounded up to 8, the entries past 'live' being any valid key positions.
__attribute__((target("avx2"))) int64_t keep_avx2(uint32_t* alive, float* bound, int64_t live, float floor) {
  const __m256 floor8 = _mm256_set1_ps(floor);
  int64_t kept = 0;
  for (int64_t j = 0; j < live; j += 8)
    kept = pack_lanes(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(alive + j)), _mm256_loadu_ps(bound + j), floor8,
                      live - j, alive, bound, kept);
  return kept;
}

// keep_norm_scalar, eight lanes at a time ('rest_norm' readable to live
// rounded up to 8); the sums in double, as there.
__attribute__((target("avx2"))) int64_t keep_norm_avx2(uint32_t* alive, float* bound, const float* rest_norm,
                                                       int64_t live, float floor, double q_rest, double bar) {
  const __m256 floor8 = _mm256_set1_ps(floor);
  const __m256d q4 = _mm256_set1_pd(q_rest), bar4 = _mm256_set1_pd(bar);
  int64_t kept = 0;
  for (int64_t j = 0; j < live; j += 8) {
    const __m256 b = _mm256_loadu_ps(bound + j), r = _mm256_loadu_ps(rest_norm + j);
    const __m256d low = _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(b)),
                                      _mm256_mul_pd(q4, _mm256_cvtps_pd(_mm256_castps256_ps128(r))));
    const __m256d high = _mm256_add_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(b, 1)),
                                       _mm256_mul_pd(q4, _mm256_cvtps_pd(_mm256_extractf128_ps(r, 1))));
    const auto reach = static_cast<unsigned>(_mm256_movemask_pd(_mm256_cmp_pd(low, bar4, _CMP_GE_OQ)) |
                                             _mm256_movemask_pd(_mm256_cmp_pd(high, bar4, _CMP_GE_OQ)) << 4);
    const auto mask = static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(b, floor8, _CMP_GE_OQ))) & reach;
    kept = pack_mask(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(alive + j)), b, mask, live - j, alive, bound, kept);
  }
  return kept;
}

#endif

#if defined(__x86_64__)
__attribute__((target("avx2"))) void warm_words_avx2(const float* entries, const uint32_t* word, float norm,
                                                     float* bound, int64_t count) {
  const __m256 n8 = _mm256_set1_ps(norm);
  const __m256i high = _mm256_set1_epi32(static_cast<int>(0xffff0000u)), low = _mm256_set1_epi32(0xffff);
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(word + i));
    __m256 b = _mm256_add_ps(_mm256_loadu_ps(bound + i), _mm256_mul_ps(n8, _mm256_castsi256_ps(_mm256_and_si256(w, high))));
    b = _mm256_add_ps(b, _mm256_i32gather_ps(entries, _mm256_and_si256(w, low), 4));
    _mm256_storeu_ps(bound + i, b);
  }
  warm_words_scalar(entries, word + i, norm, bound + i, count - i);
}

#endif

using WarmRow = void (*)(const float*, const uint16_t*, const uint16_t*, float, float*, int64_t);
using WarmWords = void (*)(const float*, const uint32_t*, float, float*, int64_t);
using Keep = int64_t (*)(uint32_t*, float*, int64_t, float);
using KeepNorm = int64_t (*)(uint32_t*, float*, const float*, int64_t, float, double, double);

const bool have_avx2 = [] {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx2") != 0;
#else
  return false;
#endif
}();
#if defined(__x86_64__)
const WarmRow warm_row = have_avx2 ? warm_row_avx2 : warm_row_scalar;
const WarmWords warm_words = have_avx2 ? warm_words_avx2 : warm_words_scalar;
const Keep keep_alive = have_avx2 ? keep_avx2 : keep_scalar;
const KeepNorm keep_norm = have_avx2 ? keep_norm_avx2 : keep_norm_scalar;
#else
const WarmRow warm_row = warm_row_scalar;
const WarmWords warm_words = warm_words_scalar;
const Keep keep_alive = keep_scalar;
const KeepNorm keep_norm = keep_norm_scalar;
#endif

/// A float f such that a partial bound b < f has b + rest < bar in double
/// (so the key's full bound is provably below the cut): the largest float
/// not above bar - rest, and with rest = 0 the smallest float not below
/// bar, so that b < f exactly when b < bar (the GPU kernel's test).
float drop_floor(double bar, double rest) {
  const double at = bar - rest;
  float f = static_cast<float>(at);
  if (rest == 0.0) {
    if (static_cast<double>(f) < at) f = std::nextafter(f, INFINITY);
  } else if (static_cast<double>(f) > at) {
    f = std::nextafter(f, -INFINITY);
  }
  return f;
}

}  // namespace

SearchResult search(const HeadIndex& head, const Subspaces& sub, const float* query, double threshold, Bound mode,
                    bool progressive) {
  const int64_t dims = sub.dims, s_count = sub.count(), n = head.size(dims);
  // The per-query tables (256 KiB at N = 128K) are reused by each thread.
  thread_local QueryPrep prep;
  prepare_query(head, sub, query, threshold, mode, prep);
  const double cut = prep.cut, unit = prep.unit;
  SearchResult out;
  auto score_candidate = [&](int64_t key) {
    const float* k = head.keys.data() + key * dims;
    ++out.scanned;
    // A float score far enough below T settles it; otherwise the exact score decides.
    if (static_cast<double>(fast_score(query, k, dims)) + unit * head.key_norm[static_cast<size_t>(key)] < threshold) return;
    const double score = exact_score(query, k, dims);
    if (score >= threshold) out.hits.push_back({key, score});
  };
  // The key pass sums each key's float bound over the subspaces in the head's
  // order: + |q_s| rho_s, then + table[s][code]. Its CUDA twin
  // (kernels/cuda/louver/louver.cu) does the same operations in the same order (this
  // file is built with -ffp-contract=off, without fused multiply-adds), on
  // every key; a key is scanned where its full bound reaches the cut and its
  // partial bound after the warm subspaces passes the norm test (see
  // QueryPrep::rest_q_norm). The progressive pass applies the norm test, then
  // only drops keys early whose full bound is provably below the cut, so the
  // CPU's full pass, its progressive pass and the GPU score the same keys.
  constexpr int64_t kBlock = kKeyBlock, kStep = 4;
  const int64_t late = progressive ? s_count - head.warm : 0;
  // The late subspaces' norms and tables, by position in the order.
  std::vector<float> late_norm(static_cast<size_t>(std::max<int64_t>(late, 0)));
  std::vector<const float*> late_table(late_norm.size());
  for (int64_t u = 0; u < late; ++u) {
    const auto s = static_cast<size_t>(head.order[static_cast<size_t>(head.warm + u)]);
    late_norm[static_cast<size_t>(u)] = prep.q_norm[s];
    late_table[static_cast<size_t>(u)] = prep.tables.data() + prep.table_offset[s];
  }
  // A three-stage pipeline over blocks of 512 keys, so that memory requests
  // are issued one stage before their data is needed: (A) the warm
  // subspaces of block b, then prefetch the alive keys' key-major bytes; (B)
  // the late subspaces of block b - 1, then prefetch the candidates' key
  // rows; (C) score the candidates of block b - 2. Stages run in block
  // order, so hits stay sorted by id. Once keys start dropping out, a stage
  // keeps the alive keys' positions in the block (alive[j]) and their partial
  // bounds (bound[j]) packed together.
  struct Stage {
    int64_t first = 0, count = 0, live = 0;
    float bound[kBlock] = {};
    uint32_t alive[kBlock] = {};
  };
  Stage stages[3];
  const int64_t blocks = (head.coded + kBlock - 1) / kBlock;
  // Keeps the alive keys whose partial bound plus 'rest' reaches 'bar'.
  auto keep = [](Stage& st, double rest, double bar) { st.live = keep_alive(st.alive, st.bound, st.live, drop_floor(bar, rest)); };
  // The warm subspaces for every key, from the block's rows, then the norm
  // test (at 128K it leaves about one key in nine); without 'progressive',
  // all subspaces for every key, then the norm test on the bounds after the
  // warm ones and the cut on the full ones.
  const int64_t summed = progressive ? head.warm : s_count;
  const double q_rest = prep.rest_q_norm;
  auto warm_pass = [&](Stage& st, int64_t block) {
    st.first = block * kBlock;
    st.count = std::min(kBlock, head.coded - st.first);
    std::fill(st.bound, st.bound + st.count, 0.0f);
    const uint32_t* rows = head.warm_rows.data() + block * head.warm * kBlock;
    const float* rest_norm = head.rest_norm.data() + st.first;
    float partial[kBlock];  // without 'progressive': the bounds after the warm subspaces
    for (int64_t t = 0; t < summed; ++t) {
      const auto s = static_cast<size_t>(head.order[static_cast<size_t>(t)]);
      const float* entries = prep.tables.data() + prep.table_offset[s];
      if (progressive) {
        warm_words(entries, rows + t * kBlock, prep.q_norm[s], st.bound, st.count);
      } else {
        warm_row(entries, head.code16[s].data() + st.first, head.residual16[s].data() + st.first, prep.q_norm[s], st.bound, st.count);
        if (t + 1 == head.warm) std::copy(st.bound, st.bound + st.count, partial);
      }
    }
    for (int64_t i = 0; i < st.count; ++i) st.alive[i] = static_cast<uint32_t>(i);
    st.live = st.count;
    if (!progressive) {
      const float floor = drop_floor(cut, 0.0);
      int64_t kept = 0;
      for (int64_t j = 0; j < st.count; ++j) {
        st.alive[kept] = static_cast<uint32_t>(j);
        st.bound[kept] = st.bound[j];
        kept += st.bound[j] >= floor && static_cast<double>(partial[j]) + q_rest * static_cast<double>(rest_norm[j]) >= prep.prune_cut;
      }
      st.live = kept;
      return;
    }
    st.live = keep_norm(st.alive, st.bound, rest_norm, st.live, drop_floor(prep.prune_cut, prep.rest[static_cast<size_t>(head.warm)]),
                        q_rest, prep.prune_cut);
    // Fetch the alive keys' key-major rows ahead of the late pass.
    const uint16_t* block_tail = head.tail_begin() + st.first * head.tail_stride;
    for (int64_t j = 0; j < st.live; ++j)
      for (int64_t b = 0; b < head.tail_stride; b += 32) __builtin_prefetch(block_tail + static_cast<int64_t>(st.alive[j]) * head.tail_stride + b);
  };
  // The keys still alive continue through the late subspaces, from their own
  // key-major bytes, one subspace at a time for all of them (so that one
  // 8 KiB table at a time is in use, not four), and after every four drop
  // out as soon as partial + rest falls below prune_cut; the survivors whose
  // full bound reaches the cut are the candidates. Each key's bound takes
  // the same float operations in the same order as in the full pass.
  auto late_pass = [&](Stage& st) {
    if (progressive) {
      const uint16_t* block_tail = head.tail_begin() + st.first * head.tail_stride;
      for (int64_t u0 = 0; u0 < late && st.live > 0; u0 += kStep) {
        const int64_t u1 = std::min(late, u0 + kStep);
        for (int64_t u = u0; u < u1; ++u) {
          const float norm = late_norm[static_cast<size_t>(u)];
          const float* table = late_table[static_cast<size_t>(u)];
          const uint16_t* column = block_tail + 2 * u;
          for (int64_t j = 0; j < st.live; ++j) {
            const uint16_t* bytes = column + static_cast<int64_t>(st.alive[j]) * head.tail_stride;
            st.bound[j] = st.bound[j] + norm * unpack_residual(bytes[1]);
            st.bound[j] += table[bytes[0]];
          }
        }
        keep(st, prep.rest[static_cast<size_t>(head.warm + u1)], prep.prune_cut);
      }
      keep(st, 0.0, cut);
    }
    for (int64_t j = 0; j < st.live; ++j) {
      const char* row = reinterpret_cast<const char*>(head.keys.data() + (st.first + st.alive[j]) * dims);
      for (int64_t b = 0; b < dims * 4; b += 64) __builtin_prefetch(row + b);
    }
  };
  for (int64_t step = 0; step < blocks + 2; ++step) {
    if (step < blocks) warm_pass(stages[step % 3], step);
    if (step >= 1 && step - 1 < blocks) late_pass(stages[(step - 1) % 3]);
    if (step >= 2) {
      const Stage& st = stages[(step - 2) % 3];
      for (int64_t j = 0; j < st.live; ++j) score_candidate(st.first + st.alive[j]);
    }
  }
  scan_range(head, query, dims, head.coded, n, threshold, out);
  return out;
}

// The dense baseline as a tuned scan would do it: float32 scores with SIMD,
// then the exact score only where the float score is within its error bound
// (d float ulps of |q| |k|) of the threshold.
SearchResult dense_scan(const HeadIndex& head, const float* query, int64_t dims, double threshold) {
  SearchResult out;
  const int64_t n = head.size(dims);
  const double unit = float_error_unit(query, dims);
  constexpr int64_t kBlock = 512;
  float approximate[kBlock];
  for (int64_t first = 0; first < n; first += kBlock) {
    const int64_t count = std::min(kBlock, n - first);
    Eigen::Map<Eigen::VectorXf>(approximate, count).noalias() =
        Eigen::Map<const RowMatrix>(head.keys.data() + first * dims, count, dims) * Eigen::Map<const Eigen::VectorXf>(query, dims);
    for (int64_t i = 0; i < count; ++i) {
      const int64_t key = first + i;
      if (static_cast<double>(approximate[i]) + unit * head.key_norm[static_cast<size_t>(key)] < threshold) continue;
      const double score = exact_score(query, head.keys.data() + key * dims, dims);
      if (score >= threshold) out.hits.push_back({key, score});
    }
  }
  out.scanned = n;
  return out;
}

double mass_threshold(const HeadIndex& head, const float* query, int64_t dims, double mass, double scale,
                      const std::vector<int64_t>& sample) {
  double top = -INFINITY;
  std::vector<double> logits;
  for (int64_t key : sample) {
    logits.push_back(scale * exact_score(query, head.keys.data() + key * dims, dims));
    top = std::max(top, logits.back());
  }
  double sum = 0;
  for (double logit : logits) sum += std::exp(logit - top);
  const double log_z = top + std::log(sum);
  // Rounded down a little so that floating point cannot lift T past the bound.
  const double t = (std::log1p(-mass) + log_z - std::log(static_cast<double>(head.size(dims)))) / scale;
  return t - 1e-12 * (std::abs(t) + 1.0);
}

std::vector<int64_t> mass_sample(int64_t n, int64_t count, nk::Rng rng) {
  std::vector<int64_t> ids;
  if (n <= count) {
    ids.resize(static_cast<size_t>(std::max<int64_t>(n, 0)));
    std::iota(ids.begin(), ids.end(), 0);
    return ids;
  }
  std::vector<char> taken(static_cast<size_t>(n), 0);
  for (int64_t j = n - count; j < n; ++j) {
    const auto t = static_cast<int64_t>(rng.below(static_cast<uint64_t>(j + 1)));
    const int64_t pick = taken[static_cast<size_t>(t)] ? j : t;
    taken[static_cast<size_t>(pick)] = 1;
    ids.push_back(pick);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

double kth_score(const HeadIndex& head, const float* query, int64_t dims, int64_t k) {
  const int64_t n = head.size(dims);
  std::vector<double> scores(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) scores[static_cast<size_t>(i)] = exact_score(query, head.keys.data() + i * dims, dims);
  k = std::clamp<int64_t>(k, 1, n);
  std::nth_element(scores.begin(), scores.begin() + (k - 1), scores.end(), std::greater<>());
  return scores[static_cast<size_t>(k - 1)];
}

}  // namespace nk::louver
