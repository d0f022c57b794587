// louver_codes.cpp - per-subspace clustering by balanced principal-direction splits,
// and the codes and rounded-up residuals of every key.
#include "nk/kernels/louver_codes.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <numeric>

#include <sys/mman.h>

namespace nk::louver {

Subspaces Subspaces::split(int64_t dims, int64_t count) {
  Subspaces s;
  s.dims = dims;
  count = std::clamp<int64_t>(count, 1, dims);
  s.begin.push_back(0);
  for (int64_t i = 0; i < count; ++i) s.begin.push_back(s.begin.back() + dims / count + (i < dims % count ? 1 : 0));
  return s;
}

namespace {

/// Asks the kernel to back [data, data + bytes) with transparent huge pages
/// (before it is first touched): the progressive pass reads it at scattered
/// places, and 4 KiB pages would cost a TLB miss per key. Only a hint.
void huge_pages(const void* data, size_t bytes) {
  constexpr uintptr_t kHuge = uintptr_t{1} << 21;
  const auto begin = (reinterpret_cast<uintptr_t>(data) + kHuge - 1) & ~(kHuge - 1);
  const auto end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

}  // namespace

float norm_up(double squares, int64_t terms) {
  const double up = std::sqrt(squares) * (1 + static_cast<double>(terms + 4) * DBL_EPSILON);
  float stored = static_cast<float>(up);
  if (static_cast<double>(stored) < up) stored = std::nextafter(stored, INFINITY);
  return stored;
}

/// |k_s - mu| computed in double from float coordinates, raised past every
/// rounding of that computation (see louver-index(1), ALGORITHM).
float residual_up(const float* k, const double* mu, int64_t width) {
  double sum = 0;
  for (int64_t j = 0; j < width; ++j) {
    const double diff = static_cast<double>(k[j]) - mu[j];
    sum += diff * diff;
  }
  const double up = std::sqrt(sum) * (1.0 + static_cast<double>(4 * width + 16) * DBL_EPSILON) + DBL_MIN;
  // Rounding to float upwards keeps it an upper bound.
  float stored = static_cast<float>(up);
  if (static_cast<double>(stored) < up) stored = std::nextafter(stored, INFINITY);
  return stored;
}

namespace {

/// Splits 'members' (key indices) recursively until each part has at most
/// leaf_size keys; appends each final part to 'clusters'.
/// 'points' holds one subspace's sub-vectors contiguously, [n, width].
void split_members(const std::vector<float>& points, int64_t width, const IndexParams& params,
                   std::vector<int64_t> members, std::vector<std::vector<int64_t>>& clusters) {
  const auto count = static_cast<int64_t>(members.size());
  if (count <= params.leaf_size) {
    clusters.push_back(std::move(members));
    return;
  }
  std::vector<double> mu(static_cast<size_t>(width), 0.0), v(static_cast<size_t>(width), 0.0), next(static_cast<size_t>(width));
  for (int64_t i : members)
    for (int64_t j = 0; j < width; ++j) mu[static_cast<size_t>(j)] += points[static_cast<size_t>(i * width + j)];
  for (double& m : mu) m /= static_cast<double>(count);
  // Power iteration from the widest coordinate: a deterministic principal direction.
  std::vector<double> spread(static_cast<size_t>(width), 0.0);
  for (int64_t i : members)
    for (int64_t j = 0; j < width; ++j) spread[static_cast<size_t>(j)] += std::pow(points[static_cast<size_t>(i * width + j)] - mu[static_cast<size_t>(j)], 2);
  v[static_cast<size_t>(std::max_element(spread.begin(), spread.end()) - spread.begin())] = 1.0;
  for (int iteration = 0; iteration < 4; ++iteration) {
    std::fill(next.begin(), next.end(), 0.0);
    for (int64_t i : members) {
      const float* k = points.data() + i * width;
      double projection = 0;
      for (int64_t j = 0; j < width; ++j) projection += (k[j] - mu[static_cast<size_t>(j)]) * v[static_cast<size_t>(j)];
      for (int64_t j = 0; j < width; ++j) next[static_cast<size_t>(j)] += projection * (k[j] - mu[static_cast<size_t>(j)]);
    }
    const double norm = std::sqrt(std::inner_product(next.begin(), next.end(), next.begin(), 0.0));
    if (norm == 0) break;
    for (int64_t j = 0; j < width; ++j) v[static_cast<size_t>(j)] = next[static_cast<size_t>(j)] / norm;
  }
  std::vector<std::pair<double, int64_t>> order;
  order.reserve(static_cast<size_t>(count));
  for (int64_t i : members) {
    const float* k = points.data() + i * width;
    double projection = 0;
    for (int64_t j = 0; j < width; ++j) projection += k[j] * v[static_cast<size_t>(j)];
    order.emplace_back(projection, i);
  }
  const int64_t parts = std::min<int64_t>(params.branching, (count + params.leaf_size - 1) / params.leaf_size);
  // Balanced parts need only the quantile boundaries, not a full sort.
  for (int64_t part = 1; part < parts; ++part) {
    std::nth_element(order.begin() + count * (part - 1) / parts, order.begin() + count * part / parts, order.end());
  }
  for (int64_t part = 0; part < parts; ++part) {
    std::vector<int64_t> child;
    for (int64_t r = count * part / parts; r < count * (part + 1) / parts; ++r) child.push_back(order[static_cast<size_t>(r)].second);
    split_members(points, width, params, std::move(child), clusters);
  }
}

}  // namespace

void build_codes(HeadIndex& head, const Subspaces& sub, const IndexParams& given) {
  const int64_t dims = sub.dims, n = head.size(dims), s_count = sub.count();
  IndexParams params = given;
  // Balanced k-way splits end in clusters of at least leaf_size / branching
  // keys, so this leaf size keeps every subspace below 65536 clusters (16-bit codes).
  params.leaf_size = std::max<int64_t>(params.leaf_size, (n * params.branching + 65534) / 65535);
  head.books.assign(static_cast<size_t>(s_count), Codebook{});
  head.code.assign(static_cast<size_t>(s_count), std::vector<int32_t>(static_cast<size_t>(n), 0));
  head.residual.assign(static_cast<size_t>(s_count), std::vector<float>(static_cast<size_t>(n), 0.0f));
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t s = 0; s < s_count; ++s) {
    const int64_t offset = sub.begin[static_cast<size_t>(s)], width = sub.width(s);
    std::vector<int64_t> all(static_cast<size_t>(n));
    std::iota(all.begin(), all.end(), 0);
    std::vector<std::vector<int64_t>> clusters;
    std::vector<float> points(static_cast<size_t>(n * width));
    for (int64_t i = 0; i < n; ++i) std::copy_n(head.keys.data() + i * dims + offset, width, points.data() + i * width);
    split_members(points, width, params, std::move(all), clusters);
    Codebook& book = head.books[static_cast<size_t>(s)];
    book.width = width;
    book.centroid.assign(clusters.size() * static_cast<size_t>(width), 0.0);
    book.norm.assign(clusters.size(), 0.0);
    for (size_t c = 0; c < clusters.size(); ++c) {
      double* mu = book.centroid.data() + c * static_cast<size_t>(width);
      for (int64_t i : clusters[c])
        for (int64_t j = 0; j < width; ++j) mu[j] += points[static_cast<size_t>(i * width + j)];
      for (int64_t j = 0; j < width; ++j) mu[j] /= static_cast<double>(clusters[c].size());
      double norm = 0;
      for (int64_t j = 0; j < width; ++j) norm += mu[j] * mu[j];
      book.norm[c] = std::sqrt(norm);
      for (int64_t i : clusters[c]) {
        head.code[static_cast<size_t>(s)][static_cast<size_t>(i)] = static_cast<int32_t>(c);
        const float rho = residual_up(head.keys.data() + i * dims + offset, mu, width);
        head.residual[static_cast<size_t>(s)][static_cast<size_t>(i)] = rho;
        book.max_residual = std::max(book.max_residual, rho);
      }
    }
  }
  head.coded = n;
  head.built = n;
}

double mean_residual(const HeadIndex& head, int64_t begin, int64_t end) {
  if (end <= begin) return 0;
  double sum = 0;
  for (const std::vector<float>& rho : head.residual)
    for (int64_t i = begin; i < end; ++i) sum += rho[static_cast<size_t>(i)];
  return sum / static_cast<double>(end - begin);
}

void finish_head(HeadIndex& head, int64_t dims) {
  for (Codebook& book : head.books) {
    book.centroid_f32.assign(book.centroid.begin(), book.centroid.end());
    book.max_norm = book.norm.empty() ? 0.0 : *std::max_element(book.norm.begin(), book.norm.end());
  }
  head.code16.resize(head.code.size());
  head.residual16.resize(head.residual.size());
  head.residual16_max.assign(head.residual.size(), 0.0f);
  for (size_t s = 0; s < head.code.size(); ++s) {
    head.code16[s].assign(head.code[s].begin(), head.code[s].begin() + head.coded);
    head.residual16[s].resize(static_cast<size_t>(head.coded));
    for (int64_t i = 0; i < head.coded; ++i) {
      uint32_t bits = 0;
      const float rho = head.residual[s][static_cast<size_t>(i)];
      std::memcpy(&bits, &rho, sizeof bits);
      if (bits & 0xffffu) bits += 0x10000u;  // round the non-negative value up
      head.residual16[s][static_cast<size_t>(i)] = static_cast<uint16_t>(bits >> 16);
      head.residual16_max[s] = std::max(head.residual16_max[s], unpack_residual(head.residual16[s][static_cast<size_t>(i)]));
    }
  }
  const int64_t n = head.size(dims);
  // Subspace order: decreasing variance of the coded keys' coordinates in it
  // (ties by index), from the codebook widths.
  const auto s_count = static_cast<int64_t>(head.books.size());
  std::vector<double> variance(static_cast<size_t>(s_count), 0.0);
  std::vector<double> mean(static_cast<size_t>(dims), 0.0), square(static_cast<size_t>(dims), 0.0);
  for (int64_t i = 0; i < head.coded; ++i)
    for (int64_t j = 0; j < dims; ++j) {
      const double x = head.keys[static_cast<size_t>(i * dims + j)];
      mean[static_cast<size_t>(j)] += x;
      square[static_cast<size_t>(j)] += x * x;
    }
  for (int64_t s = 0, j = 0; s < s_count; ++s)
    for (int64_t w = 0; w < head.books[static_cast<size_t>(s)].width && j < dims; ++w, ++j) {
      const double m = mean[static_cast<size_t>(j)] / static_cast<double>(std::max<int64_t>(head.coded, 1));
      variance[static_cast<size_t>(s)] += square[static_cast<size_t>(j)] / static_cast<double>(std::max<int64_t>(head.coded, 1)) - m * m;
    }
  head.order.resize(static_cast<size_t>(s_count));
  std::iota(head.order.begin(), head.order.end(), 0);
  std::stable_sort(head.order.begin(), head.order.end(),
                   [&](int64_t a, int64_t b) { return variance[static_cast<size_t>(a)] > variance[static_cast<size_t>(b)]; });
  head.warm = std::min(kWarmSubspaces, s_count);
  const int64_t late = s_count - head.warm;
  const int64_t blocks = (head.coded + kKeyBlock - 1) / kKeyBlock;
  head.warm_rows.assign(static_cast<size_t>(blocks * head.warm * kKeyBlock), 0);
  for (int64_t i = 0; i < head.coded; ++i)
    for (int64_t t = 0; t < head.warm; ++t) {
      const auto s = static_cast<size_t>(head.order[static_cast<size_t>(t)]);
      head.warm_rows[static_cast<size_t>(((i / kKeyBlock) * head.warm + t) * kKeyBlock + i % kKeyBlock)] =
          head.code16[s][static_cast<size_t>(i)] | static_cast<uint32_t>(head.residual16[s][static_cast<size_t>(i)]) << 16;
    }
  head.tail_stride = (late * 2 + 31) / 32 * 32;  // whole cache lines per key
  head.tail = std::vector<uint16_t>();
  head.tail.reserve(static_cast<size_t>(head.coded * head.tail_stride + 32));
  huge_pages(head.tail.data(), head.tail.capacity() * sizeof(uint16_t));
  head.tail.resize(static_cast<size_t>(head.coded * head.tail_stride + 32));
  uint16_t* rows = const_cast<uint16_t*>(head.tail_begin());
  for (int64_t i = 0; i < head.coded; ++i)
    for (int64_t u = 0; u < late; ++u) {
      const auto s = static_cast<size_t>(head.order[static_cast<size_t>(head.warm + u)]);
      rows[i * head.tail_stride + u * 2] = head.code16[s][static_cast<size_t>(i)];
      rows[i * head.tail_stride + u * 2 + 1] = head.residual16[s][static_cast<size_t>(i)];
    }
  head.key_norm.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double squares = 0;
    for (int64_t j = 0; j < dims; ++j) squares += std::pow(static_cast<double>(head.keys[static_cast<size_t>(i * dims + j)]), 2);
    head.key_norm[static_cast<size_t>(i)] = norm_up(squares, dims);
  }
  // |k_R| over the subspaces after the warm ones, from their coordinates.
  std::vector<int64_t> first(static_cast<size_t>(s_count) + 1, 0);
  for (int64_t s = 0; s < s_count; ++s) first[static_cast<size_t>(s) + 1] = first[static_cast<size_t>(s)] + head.books[static_cast<size_t>(s)].width;
  head.rest_norm.assign(static_cast<size_t>(head.coded + 8), 0.0f);
  for (int64_t i = 0; i < head.coded; ++i) {
    double squares = 0;
    int64_t terms = 0;
    for (int64_t t = head.warm; t < s_count; ++t) {
      const auto s = static_cast<size_t>(head.order[static_cast<size_t>(t)]);
      for (int64_t j = first[s]; j < first[s + 1] && j < dims; ++j, ++terms)
        squares += std::pow(static_cast<double>(head.keys[static_cast<size_t>(i * dims + j)]), 2);
    }
    head.rest_norm[static_cast<size_t>(i)] = norm_up(squares, terms);
  }
}

void code_buffer(HeadIndex& head, const Subspaces& sub) {
  const int64_t dims = sub.dims, n = head.size(dims), s_count = sub.count();
  for (int64_t s = 0; s < s_count; ++s) {
    head.code[static_cast<size_t>(s)].resize(static_cast<size_t>(n));
    head.residual[static_cast<size_t>(s)].resize(static_cast<size_t>(n));
  }
  // Nearest centroid per subspace, found in float from one matrix product per
  // chunk of keys (argmax of k.mu - |mu|^2 / 2); any choice keeps the
  // guarantee, since the residual is then computed exactly for it.
  using FloatRows = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  constexpr int64_t kChunk = 256;
#pragma omp parallel for schedule(dynamic)
  for (int64_t s = 0; s < s_count; ++s) {
    const Codebook& book = head.books[static_cast<size_t>(s)];
    const int64_t width = book.width, offset = sub.begin[static_cast<size_t>(s)];
    const FloatRows centroids = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
                                    book.centroid.data(), book.clusters(), width).cast<float>();
    const Eigen::RowVectorXf half_square = 0.5f * centroids.rowwise().squaredNorm().transpose();
    FloatRows chunk, products;
    for (int64_t first = head.coded; first < n; first += kChunk) {
      const int64_t count = std::min(kChunk, n - first);
      chunk.resize(count, width);
      for (int64_t r = 0; r < count; ++r)
        for (int64_t j = 0; j < width; ++j) chunk(r, j) = head.keys[static_cast<size_t>((first + r) * dims + offset + j)];
      products.noalias() = chunk * centroids.transpose();
      products.rowwise() -= half_square;
      for (int64_t r = 0; r < count; ++r) {
        Eigen::Index best = 0;
        products.row(r).maxCoeff(&best);
        const int64_t i = first + r;
        head.code[static_cast<size_t>(s)][static_cast<size_t>(i)] = static_cast<int32_t>(best);
        head.residual[static_cast<size_t>(s)][static_cast<size_t>(i)] =
            residual_up(head.keys.data() + i * dims + offset, book.centroid.data() + best * width, width);
      }
    }
  }
  for (int64_t s = 0; s < s_count; ++s) {
    Codebook& book = head.books[static_cast<size_t>(s)];
    for (int64_t i = head.coded; i < n; ++i) book.max_residual = std::max(book.max_residual, head.residual[static_cast<size_t>(s)][static_cast<size_t>(i)]);
  }
  head.coded = n;
}

double residual_ratio(const HeadIndex& head) {
  const double base = mean_residual(head, 0, head.built);
  return base > 0 ? mean_residual(head, head.built, head.coded) / base : 0;
}

AppendReport append_keys(HeadIndex& head, const Subspaces& sub, const IndexParams& params, const float* keys,
                         const float* values, int64_t n, int64_t value_dims, const RebuildRule& rule) {
  const int64_t dims = sub.dims, before = head.size(dims);
  head.keys.insert(head.keys.end(), keys, keys + n * dims);
  if (values && value_dims) head.values.insert(head.values.end(), values, values + n * value_dims);
  AppendReport report;
  if (head.size(dims) - head.coded < params.buffer) {
    head.key_norm.resize(static_cast<size_t>(before + n));
    for (int64_t i = before; i < before + n; ++i) {
      double squares = 0;
      for (int64_t j = 0; j < dims; ++j) squares += std::pow(static_cast<double>(head.keys[static_cast<size_t>(i * dims + j)]), 2);
      head.key_norm[static_cast<size_t>(i)] = norm_up(squares, dims);
    }
    return report;
  }
  code_buffer(head, sub);
  report.coded = true;
  report.ratio = residual_ratio(head);
  const bool drifted = rule.ratio > 0 && head.coded > head.built && report.ratio > rule.ratio;
  const bool grown = rule.growth > 0 && static_cast<double>(head.coded) >= rule.growth * static_cast<double>(head.built);
  if (drifted || grown) {
    build_codes(head, sub, params);
    report.rebuilt = true;
  }
  finish_head(head, dims);
  return report;
}

}  // namespace nk::louver
