// louver_search.hpp - halfspace range reporting over a Louver index: every key with
// score q.k >= T, and no other.
#pragma once
#include <cstdint>
#include <vector>

#include "nk/kernels/louver_codes.hpp"
#include "nk/kernels/cuda_call.hpp"
#include "nk/rng.hpp"

namespace nk::louver {

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

/// What search() computes once per query before its key pass. The CUDA path
/// (search_cuda) takes the same numbers, so both take the same decisions.
struct QueryPrep {
  std::vector<float> tables;          ///< q_s . mu_{s,c} in float32, subspace s from table_offset[s]
  std::vector<int64_t> table_offset;  ///< [S + 1]: table_offset[S] = tables.size()
  std::vector<float> q_norm;          ///< [S]: |q_s| rounded up (0 for Bound::centroid_only)
  double cut = 0;                     ///< a coded key whose float bound is below this is skipped
  double unit = 0;                    ///< the float score's error bound per unit of |k|
  // The progressive key pass (CPU) sums the subspaces in the head's order; a
  // key is dropped as soon as its partial bound plus rest[t] (an upper bound
  // on the terms of subspaces order[t..S-1]) falls below prune_cut, which
  // sits far enough below 'cut' that such a key's full float bound is below
  // 'cut' as well.
  std::vector<double> rest;    ///< [S + 1]: rest[S] = 0
  double prune_cut = 0;
  /// |q_R| rounded up, over the subspaces order[warm..S) (see
  /// HeadIndex::rest_norm): a key whose float partial bound after the warm
  /// subspaces plus rest_q_norm |k_R| (in double, where the product of the
  /// two floats is exact) is below prune_cut is dropped; the CPU's full pass
  /// and the CUDA kernel apply the same test.
  float rest_q_norm = 0;
};

/// The per-query tables, norms, cut (threshold - margin) and float error unit.
QueryPrep prepare_query(const HeadIndex& head, const Subspaces& subspaces, const float* query, double threshold,
                        Bound bound = Bound::safe);
/// The same into 'prep', reusing its storage.
void prepare_query(const HeadIndex& head, const Subspaces& subspaces, const float* query, double threshold, Bound bound,
                   QueryPrep& prep);

/// |q| rounded up, times the float error factor of the float32 score filter:
/// a float score plus unit |k| below T settles a key as a miss.
double float_error_unit(const float* query, int64_t dims);

/// Keys of 'head' with exact_score(q, k) >= threshold. 'progressive' (the
/// default) drops keys subspace by subspace; without it every key's bound is
/// summed over all subspaces. Both scan exactly the same keys.
SearchResult search(const HeadIndex& head, const Subspaces& subspaces, const float* query, double threshold,
                    Bound bound = Bound::safe, bool progressive = true);

/// The k-th largest exact score of 'query' over all keys (the top-k oracle).
double kth_score(const HeadIndex& head, const float* query, int64_t dims, int64_t k);

/// The --mass rule: a threshold T such that keys scoring below T carry at
/// most 1 - mass of softmax(scale * scores), whatever the other scores are.
/// With Z_S the softmax normaliser over 'sample' keys (a lower bound on Z)
/// and N keys, T = (ln((1 - mass) Z_S) - ln N) / scale, since the keys below
/// T weigh at most N exp(scale T) / Z <= 1 - mass.
double mass_threshold(const HeadIndex& head, const float* query, int64_t dims, double mass, double scale,
                      const std::vector<int64_t>& sample);

/// 'count' distinct ids drawn uniformly from [0, n) (all of them when n <=
/// count), ascending: the sample of mass_threshold. It must be a set - a key
/// drawn twice would count twice in Z_S, which could then pass Z and lift T
/// past the bound. Floyd's algorithm over rng.
std::vector<int64_t> mass_sample(int64_t n, int64_t count, nk::Rng rng);

/// Dense exact scan (the reference and the baseline): same result as search().
SearchResult dense_scan(const HeadIndex& head, const float* query, int64_t dims, double threshold);

/// Where the GPU's time went (prepare: the per-query tables on the CPU).
using nk::kernels::GpuTiming;

/// search() (dense = false) or dense_scan() (dense = true) of 'count' queries
/// [count, d] of one KV head on the GPU, in one call to the CUDA module: the
/// same hits (ids and scores) and the same scanned counts, bit for bit.
/// Throws nk::Error (exit 1) when no CUDA device or module can be used.
std::vector<SearchResult> search_cuda(const HeadIndex& head, const Subspaces& subspaces, const float* queries,
                                      int64_t count, const double* thresholds, bool dense, int repeats = 1,
                                      GpuTiming* timing = nullptr);

}  // namespace nk::louver
