// quest.hpp - the Quest baselines (Tang et al., ICML 2024): pages of
// consecutive keys with per-channel min and max, whose score
// sum_j max(q_j min_j, q_j max_j) bounds every key of the page from above.
#pragma once
#include <cstdint>
#include <vector>

#include "louver-index/search.hpp"

namespace louver {

/// Per-page channel bounds over the keys in their original order.
struct Pages {
  int64_t page_size = 16;
  std::vector<float> low, high;  ///< [pages, d]
};

Pages build_pages(const HeadIndex& head, int64_t dims, int64_t page_size);

/// Quest as a filter: every page whose bound (raised by a rounding margin)
/// reaches T is scanned exactly. Exact, like the Louver index.
SearchResult quest_threshold(const HeadIndex& head, const Pages& pages, const float* query, int64_t dims,
                             double threshold);

/// Quest as published: the pages with the largest bounds, up to 'budget' keys,
/// scanned exactly; keys of other pages are missed even when above T.
SearchResult quest_topk(const HeadIndex& head, const Pages& pages, const float* query, int64_t dims, double threshold,
                        int64_t budget);

}  // namespace louver
