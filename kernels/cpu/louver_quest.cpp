// louver_quest.cpp - page bounds, Quest's top-K page selection and its exact threshold variant.
#include "nk/kernels/louver_quest.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <numeric>

namespace nk::louver {

Pages build_pages(const HeadIndex& head, int64_t dims, int64_t page_size) {
  Pages pages;
  pages.page_size = page_size;
  extend_pages(pages, head.keys.data(), 0, head.size(dims), dims);
  return pages;
}

void extend_pages(Pages& pages, const float* keys, int64_t from, int64_t count, int64_t dims) {
  const int64_t n = from + count, total = (n + pages.page_size - 1) / pages.page_size;
  pages.low.resize(static_cast<size_t>(total * dims), INFINITY);
  pages.high.resize(static_cast<size_t>(total * dims), -INFINITY);
  for (int64_t i = from; i < n; ++i) {
    float* low = pages.low.data() + (i / pages.page_size) * dims;
    float* high = pages.high.data() + (i / pages.page_size) * dims;
    const float* k = keys + (i - from) * dims;
    for (int64_t j = 0; j < dims; ++j) {
      low[j] = std::min(low[j], k[j]);
      high[j] = std::max(high[j], k[j]);
    }
  }
}

namespace {

/// Upper bound on exact_score over the page, raised past the rounding of the
/// bound itself and of exact_score (2d + 16 double epsilons of sum |q_j| max(|lo|,|hi|)).
double page_bound(const Pages& pages, int64_t page, const float* q, int64_t dims) {
  const float* low = pages.low.data() + page * dims;
  const float* high = pages.high.data() + page * dims;
  double bound = 0, magnitude = 0;
  for (int64_t j = 0; j < dims; ++j) {
    const double a = static_cast<double>(q[j]) * low[j], b = static_cast<double>(q[j]) * high[j];
    bound += std::max(a, b);
    magnitude += std::max(std::abs(a), std::abs(b));
  }
  return bound + static_cast<double>(2 * dims + 16) * DBL_EPSILON * magnitude;
}

void scan_page(const HeadIndex& head, int64_t page, int64_t page_size, const float* q, int64_t dims, double threshold,
               SearchResult& out) {
  const int64_t begin = page * page_size, end = std::min(head.size(dims), begin + page_size);
  for (int64_t i = begin; i < end; ++i) {
    const double score = exact_score(q, head.keys.data() + i * dims, dims);
    if (score >= threshold) out.hits.push_back({i, score});
  }
  out.scanned += end - begin;
}

}  // namespace

SearchResult quest_threshold(const HeadIndex& head, const Pages& pages, const float* query, int64_t dims,
                             double threshold) {
  SearchResult out;
  const int64_t count = (head.size(dims) + pages.page_size - 1) / pages.page_size;
  for (int64_t page = 0; page < count; ++page) {
    if (page_bound(pages, page, query, dims) >= threshold) scan_page(head, page, pages.page_size, query, dims, threshold, out);
  }
  return out;
}

std::vector<int64_t> quest_pages(const Pages& pages, int64_t keys, const float* query, int64_t dims, int64_t budget,
                                 int64_t forced) {
  const int64_t count = (keys + pages.page_size - 1) / pages.page_size;
  std::vector<double> bounds(static_cast<size_t>(count));
  for (int64_t page = 0; page < count; ++page)
    bounds[static_cast<size_t>(page)] = page == forced ? INFINITY : page_bound(pages, page, query, dims);
  std::vector<int64_t> order(static_cast<size_t>(count));
  std::iota(order.begin(), order.end(), 0);
  const int64_t chosen = std::clamp<int64_t>((budget + pages.page_size - 1) / pages.page_size, 1, count);
  std::partial_sort(order.begin(), order.begin() + chosen, order.end(),
                    [&](int64_t a, int64_t b) { return bounds[static_cast<size_t>(a)] > bounds[static_cast<size_t>(b)]; });
  order.resize(static_cast<size_t>(chosen));
  std::sort(order.begin(), order.end());
  return order;
}

SearchResult quest_topk(const HeadIndex& head, const Pages& pages, const float* query, int64_t dims, double threshold,
                        int64_t budget) {
  SearchResult out;
  for (int64_t page : quest_pages(pages, head.size(dims), query, dims, budget))
    scan_page(head, page, pages.page_size, query, dims, threshold, out);
  return out;
}

}  // namespace nk::louver
