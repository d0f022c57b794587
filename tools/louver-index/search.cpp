// search.cpp - per-query lookup tables of centroid scores, a bound per key
// from its codes and residuals, exact scores for the keys the bound cannot
// rule out, and for the buffer.
#include "search.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>

namespace louver {

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
/// reassociation); its error is below (d + 8) float ulps of |q| |k|.
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
  const int64_t dims = sub.dims, s_count = sub.count();
  QueryPrep prep;
  // Per-query tables, in float for a fast key pass; every entry is rounded up
  // and the float sum gets its own margin below.
  prep.table_offset.assign(1, 0);
  for (int64_t s = 0; s < s_count; ++s) prep.table_offset.push_back(prep.table_offset.back() + head.books[static_cast<size_t>(s)].clusters());
  prep.tables.resize(static_cast<size_t>(prep.table_offset.back()));
  prep.q_norm.resize(static_cast<size_t>(s_count));
  double slack = 0;  // bounds |any key's bound terms| + sum_j |q_j k_j| for every key
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
    double worst = 0;
    for (int64_t c = 0; c < book.clusters(); ++c) worst = std::max(worst, book.norm[static_cast<size_t>(c)]);
    worst *= 2 * norm;
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
  return prep;
}

SearchResult search(const HeadIndex& head, const Subspaces& sub, const float* query, double threshold, Bound mode) {
  const int64_t dims = sub.dims, s_count = sub.count(), n = head.size(dims);
  const QueryPrep prep = prepare_query(head, sub, query, threshold, mode);
  const double cut = prep.cut, unit = prep.unit;
  SearchResult out;
  // The key pass. Its CUDA twin (kernels/cuda/louver.cu) repeats every float
  // operation below in the same order, without fused multiply-adds (this file
  // is built with -ffp-contract=off), so both skip exactly the same keys.
  constexpr int64_t kBlock = 512;
  float bound[kBlock];
  for (int64_t first = 0; first < head.coded; first += kBlock) {
    const int64_t count = std::min(kBlock, head.coded - first);
    std::fill(bound, bound + count, 0.0f);
    for (int64_t s = 0; s < s_count; ++s) {
      const float* entries = prep.tables.data() + prep.table_offset[static_cast<size_t>(s)];
      const uint16_t* code = head.code16[static_cast<size_t>(s)].data() + first;
      const uint16_t* rho = head.residual16[static_cast<size_t>(s)].data() + first;
      const float norm = prep.q_norm[static_cast<size_t>(s)];
      // Two simple loops: the residual term vectorises, the look-ups stay scalar.
      for (int64_t i = 0; i < count; ++i) {
        const uint32_t bits = static_cast<uint32_t>(rho[i]) << 16;
        float residual;
        std::memcpy(&residual, &bits, sizeof residual);
        bound[i] += norm * residual;
      }
      for (int64_t i = 0; i < count; ++i) bound[i] += entries[code[i]];
    }
    for (int64_t i = 0; i < count; ++i) {
      if (static_cast<double>(bound[i]) < cut) continue;
      const int64_t key = first + i;
      const float* k = head.keys.data() + key * dims;
      ++out.scanned;
      // A float score far enough below T settles it; otherwise the exact score decides.
      if (static_cast<double>(fast_score(query, k, dims)) + unit * head.key_norm[static_cast<size_t>(key)] < threshold) continue;
      const double score = exact_score(query, k, dims);
      if (score >= threshold) out.hits.push_back({key, score});
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

double kth_score(const HeadIndex& head, const float* query, int64_t dims, int64_t k) {
  const int64_t n = head.size(dims);
  std::vector<double> scores(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) scores[static_cast<size_t>(i)] = exact_score(query, head.keys.data() + i * dims, dims);
  k = std::clamp<int64_t>(k, 1, n);
  std::nth_element(scores.begin(), scores.begin() + (k - 1), scores.end(), std::greater<>());
  return scores[static_cast<size_t>(k - 1)];
}

}  // namespace louver
