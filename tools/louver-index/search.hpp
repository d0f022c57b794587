// search.hpp - halfspace range reporting over a Louver index: every key with
// score q.k >= T, and no other.
#pragma once
#include <cstdint>
#include <vector>

#include "codes.hpp"

namespace louver {

/// The score of record: float32 vectors, products and sums in float64, in a
/// fixed order (eight interleaved partial sums, then combined left to right)
/// that vectorises. The index returns exactly {i : exact_score(q, k_i) >= T}.
double exact_score(const float* q, const float* k, int64_t dims);

struct Hit {
  int64_t id;
  double score;
};

struct SearchResult {
  std::vector<Hit> hits;  ///< sorted by id
  int64_t scanned = 0;    ///< keys scored exactly (candidates and the buffer)
};

/// How key bounds are computed. 'safe' is the method; the others exist so that
/// tests can show the recall checker catches unsafe variants.
enum class Bound { safe, no_margin, centroid_only };

/// Keys of 'head' with exact_score(q, k) >= threshold.
SearchResult search(const HeadIndex& head, const Subspaces& subspaces, const float* query, double threshold,
                    Bound bound = Bound::safe);

/// The k-th largest exact score of 'query' over all keys (the top-k oracle).
double kth_score(const HeadIndex& head, const float* query, int64_t dims, int64_t k);

/// The --mass rule: a threshold T such that keys scoring below T carry at
/// most 1 - mass of softmax(scale * scores), whatever the other scores are.
/// With Z_S the softmax normaliser over 'sample' keys (a lower bound on Z)
/// and N keys, T = (ln((1 - mass) Z_S) - ln N) / scale, since the keys below
/// T weigh at most N exp(scale T) / Z <= 1 - mass.
double mass_threshold(const HeadIndex& head, const float* query, int64_t dims, double mass, double scale,
                      const std::vector<int64_t>& sample);

/// Dense exact scan (the reference and the baseline): same result as search().
SearchResult dense_scan(const HeadIndex& head, const float* query, int64_t dims, double threshold);

}  // namespace louver
