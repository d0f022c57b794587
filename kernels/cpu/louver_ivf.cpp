// louver_ivf.cpp - k-means inverted lists and their budgeted probe (the IVF baseline).
#include "nk/kernels/louver_ivf.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "nk/rng.hpp"

namespace nk::louver {

namespace {

int64_t nearest(const Ivf& ivf, const float* k) {
  int64_t best = 0;
  double best_d = std::numeric_limits<double>::infinity();
  for (int64_t c = 0; c < ivf.count(); ++c) {
    const float* mu = ivf.centroid.data() + c * ivf.dims;
    double d = 0;
    for (int64_t j = 0; j < ivf.dims; ++j) {
      const double diff = static_cast<double>(k[j]) - mu[j];
      d += diff * diff;
    }
    if (d < best_d) best_d = d, best = c;
  }
  return best;
}

}  // namespace

int64_t default_lists(int64_t keys) {
  return std::max<int64_t>(1, static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(keys)))));
}

Ivf build_ivf(const float* keys, int64_t n, int64_t dims, int64_t lists, int64_t iterations, uint64_t seed) {
  Ivf ivf;
  ivf.dims = dims;
  lists = std::clamp<int64_t>(lists, 1, std::max<int64_t>(n, 1));
  // Initial centroids: 'lists' distinct keys (a partial Fisher-Yates draw).
  std::vector<int64_t> ids(static_cast<size_t>(n));
  std::iota(ids.begin(), ids.end(), 0);
  Rng rng(seed);
  for (int64_t i = 0; i < lists && i < n; ++i) std::swap(ids[static_cast<size_t>(i)], ids[static_cast<size_t>(i + static_cast<int64_t>(rng.below(static_cast<uint64_t>(n - i))))]);
  ivf.centroid.resize(static_cast<size_t>(lists * dims));
  for (int64_t c = 0; c < lists; ++c) {
    const float* k = n ? keys + ids[static_cast<size_t>(c)] * dims : nullptr;
    for (int64_t j = 0; j < dims; ++j) ivf.centroid[static_cast<size_t>(c * dims + j)] = k ? k[j] : 0.0f;
  }
  ivf.lists.assign(static_cast<size_t>(lists), {});
  std::vector<int64_t> assign(static_cast<size_t>(n), -1);
  for (int64_t round = 0; round <= iterations; ++round) {
    bool moved = false;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t c = nearest(ivf, keys + i * dims);
      moved = moved || c != assign[static_cast<size_t>(i)];
      assign[static_cast<size_t>(i)] = c;
    }
    if (round == iterations || !moved) break;
    std::vector<double> sum(static_cast<size_t>(lists * dims), 0.0);
    std::vector<int64_t> members(static_cast<size_t>(lists), 0);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t c = assign[static_cast<size_t>(i)];
      ++members[static_cast<size_t>(c)];
      for (int64_t j = 0; j < dims; ++j) sum[static_cast<size_t>(c * dims + j)] += keys[i * dims + j];
    }
    for (int64_t c = 0; c < lists; ++c)
      if (members[static_cast<size_t>(c)])
        for (int64_t j = 0; j < dims; ++j)
          ivf.centroid[static_cast<size_t>(c * dims + j)] =
              static_cast<float>(sum[static_cast<size_t>(c * dims + j)] / static_cast<double>(members[static_cast<size_t>(c)]));
  }
  for (int64_t i = 0; i < n; ++i) ivf.lists[static_cast<size_t>(assign[static_cast<size_t>(i)])].push_back(i);
  ivf.size = n;
  return ivf;
}

void ivf_add(Ivf& ivf, const float* keys, int64_t n) {
  for (int64_t i = 0; i < n; ++i) ivf.lists[static_cast<size_t>(nearest(ivf, keys + i * ivf.dims))].push_back(ivf.size + i);
  ivf.size += n;
}

std::vector<int64_t> ivf_probe(const Ivf& ivf, const float* query, int64_t budget) {
  std::vector<double> score(static_cast<size_t>(ivf.count()));
  for (int64_t c = 0; c < ivf.count(); ++c) score[static_cast<size_t>(c)] = exact_score(query, ivf.centroid.data() + c * ivf.dims, ivf.dims);
  std::vector<int64_t> order(static_cast<size_t>(ivf.count()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return score[static_cast<size_t>(a)] > score[static_cast<size_t>(b)]; });
  std::vector<int64_t> probed;
  int64_t keys = 0;
  for (int64_t c : order) {
    if (!probed.empty() && keys >= budget) break;
    probed.push_back(c);
    keys += static_cast<int64_t>(ivf.lists[static_cast<size_t>(c)].size());
  }
  return probed;
}

SearchResult ivf_search(const Ivf& ivf, const float* keys, const float* query, double threshold, int64_t budget) {
  SearchResult out;
  for (int64_t c : ivf_probe(ivf, query, budget))
    for (int64_t id : ivf.lists[static_cast<size_t>(c)]) {
      ++out.scanned;
      const double score = exact_score(query, keys + id * ivf.dims, ivf.dims);
      if (score >= threshold) out.hits.push_back({id, score});
    }
  std::sort(out.hits.begin(), out.hits.end(), [](const Hit& a, const Hit& b) { return a.id < b.id; });
  return out;
}

}  // namespace nk::louver
