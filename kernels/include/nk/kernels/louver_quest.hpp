// louver_quest.hpp - the Quest baselines (Tang et al., ICML 2024): pages of
// consecutive keys with per-channel min and max, whose score
// sum_j max(q_j min_j, q_j max_j) bounds every key of the page from above.
#pragma once
#include <cstdint>
#include <vector>

#include "nk/kernels/louver_search.hpp"

namespace nk::louver {

/// Per-page channel bounds over the keys in their original order.
struct Pages {
  int64_t page_size = 16;
  std::vector<float> low, high;  ///< [pages, d]
};

Pages build_pages(const HeadIndex& head, int64_t dims, int64_t page_size);

/// Keys from .. from + count - 1 ([count, dims] at 'keys') join the pages
/// (the last page may be partial and grows): an index appended to token by
/// token in decoding.
void extend_pages(Pages& pages, const float* keys, int64_t from, int64_t count, int64_t dims);

/// The pages Quest reads for a query over 'keys' keys: the ceil(budget /
/// page_size) pages (at least one) with the largest bounds, ascending. A
/// 'forced' page (>= 0: in decoding, the page the current token fills, as
/// Quest's implementation keeps it) is always one of them.
std::vector<int64_t> quest_pages(const Pages& pages, int64_t keys, const float* query, int64_t dims, int64_t budget,
                                 int64_t forced = -1);

/// Quest as a filter: every page whose bound (raised by a rounding margin)
/// reaches T is scanned exactly. Exact, like the Louver index.
SearchResult quest_threshold(const HeadIndex& head, const Pages& pages, const float* query, int64_t dims,
                             double threshold);

/// Quest as published: the pages with the largest bounds, up to 'budget' keys,
/// scanned exactly; keys of other pages are missed even when above T.
SearchResult quest_topk(const HeadIndex& head, const Pages& pages, const float* query, int64_t dims, double threshold,
                        int64_t budget);

}  // namespace nk::louver
