// louver_ivf.hpp - the FAISS-style IVF baseline of louver-index and of nk-lm's
// decoding through an index: keys clustered by k-means into inverted lists,
// a query probing the lists whose centroids score highest (inner product)
// until a budget of keys is reached. Approximate: keys of lists left unprobed
// are missed even when they score above any threshold.
#pragma once
#include <cstdint>
#include <vector>

#include "nk/kernels/louver_search.hpp"

namespace nk::louver {

struct Ivf {
  int64_t dims = 0;
  std::vector<float> centroid;               ///< [lists, dims]
  std::vector<std::vector<int64_t>> lists;   ///< key ids per list, ascending
  int64_t size = 0;                          ///< keys added
  int64_t count() const { return static_cast<int64_t>(lists.size()); }
};

/// The lists FAISS would pick by default: about sqrt(n), at least 1.
int64_t default_lists(int64_t keys);

/// k-means (Lloyd, 'iterations' rounds, squared L2) over keys [n, dims] from
/// 'lists' distinct keys drawn with 'seed'; every key joins its nearest centroid.
/// Deterministic for a seed; an empty list keeps its centroid.
Ivf build_ivf(const float* keys, int64_t n, int64_t dims, int64_t lists, int64_t iterations, uint64_t seed);

/// Keys [n, dims] with ids size.. size+n-1 join their nearest centroid (the
/// centroids stay as trained, as FAISS's add does).
void ivf_add(Ivf& ivf, const float* keys, int64_t n);

/// The lists a query probes: by decreasing q . centroid (ties to the lower
/// list) until their keys reach 'budget' (at least one list).
std::vector<int64_t> ivf_probe(const Ivf& ivf, const float* query, int64_t budget);

/// The keys of the probed lists scored exactly: hits with score >= T (sorted
/// by id), scanned = the probed lists' keys. 'keys' are the index's keys [n, dims].
SearchResult ivf_search(const Ivf& ivf, const float* keys, const float* query, double threshold, int64_t budget);

}  // namespace nk::louver
