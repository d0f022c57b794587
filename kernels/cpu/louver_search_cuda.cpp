// louver_search_cuda.cpp - search() and dense_scan() of a batch of queries on the
// GPU, through the CUDA module (kernels/cuda/louver/louver.cu). The per-query tables,
// norms, cut and float error unit are prepared here by prepare_query, exactly
// as search() prepares them, so the GPU takes the CPU's decisions.
#include <algorithm>
#include <cstring>
#include <limits>

#include "nk/error.hpp"
#include "nk/kernels/cuda_call.hpp"
#include "nk/timer.hpp"
#include "nk/kernels/louver_search.hpp"

namespace nk::louver {

namespace {

/// Where the module hands the hits: each goes to its query's list.
struct HitSink {
  std::vector<SearchResult>* results = nullptr;
};

int take_hits(void* context, long count, const unsigned long long* query_key, const double* score) {
  std::vector<SearchResult>& results = *static_cast<HitSink*>(context)->results;
  try {
    for (long i = 0; i < count; ++i) {
      const auto query = static_cast<size_t>(query_key[i] >> 32);
      if (query >= results.size()) return 1;
      results[query].hits.push_back({static_cast<int64_t>(query_key[i] & 0xffffffffULL), score[i]});
    }
  } catch (...) {  // out of memory: the entry fails and says so
    return 1;
  }
  return 0;
}

}  // namespace

std::vector<SearchResult> search_cuda(const HeadIndex& head, const Subspaces& sub, const float* queries, int64_t count,
                                      const double* thresholds, bool dense, int repeats, GpuTiming* timing) {
  const int64_t dims = sub.dims, s_count = sub.count(), n = head.size(dims), coded = head.coded;
  const nk_cuda_louver& api = nk::kernels::cuda_family<nk_cuda_louver>("louver-index search");
  const nk::Stopwatch watch;
  const auto rows = static_cast<size_t>(count);
  std::vector<double> cut(rows), prune_cut(rows), unit(rows);
  std::vector<float> tables, q_norm, q_rest(rows);
  std::vector<long> table_offset;
  std::vector<uint16_t> code16, residual16;
  const bool bound_pass = !dense && coded > 0 && count > 0;
  if (bound_pass) {
    // Everything per subspace goes in the head's order (position t holds
    // subspace head.order[t]): the kernel sums positions 0, 1, ..., as the
    // CPU sums head.order[0], head.order[1], ...
    const std::vector<int64_t>& order = head.order;
    for (int64_t t = 0; t <= s_count; ++t) {
      table_offset.push_back(t ? table_offset.back() + static_cast<long>(head.books[static_cast<size_t>(order[static_cast<size_t>(t - 1)])].clusters()) : 0L);
    }
    const auto table_size = static_cast<size_t>(table_offset.back());
    tables.resize(rows * table_size);
    q_norm.resize(rows * static_cast<size_t>(s_count));
#pragma omp parallel for schedule(static)
    for (int64_t m = 0; m < count; ++m) {
      const QueryPrep prep = prepare_query(head, sub, queries + m * dims, thresholds[m]);
      for (int64_t t = 0; t < s_count; ++t) {
        const auto s = static_cast<size_t>(head.order[static_cast<size_t>(t)]);
        std::copy(prep.tables.begin() + prep.table_offset[s], prep.tables.begin() + prep.table_offset[s + 1],
                  tables.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(m) * table_size + static_cast<size_t>(table_offset[static_cast<size_t>(t)])));
        q_norm[static_cast<size_t>(m * s_count + t)] = prep.q_norm[s];
      }
      cut[static_cast<size_t>(m)] = prep.cut;
      prune_cut[static_cast<size_t>(m)] = prep.prune_cut;
      q_rest[static_cast<size_t>(m)] = prep.rest_q_norm;
      unit[static_cast<size_t>(m)] = prep.unit;
    }
    // Codes and residuals as one [S][coded] block each, rows in the head's order.
    code16.resize(static_cast<size_t>(s_count * coded));
    residual16.resize(code16.size());
    for (int64_t t = 0; t < s_count; ++t) {
      const auto s = static_cast<size_t>(order[static_cast<size_t>(t)]);
      std::memcpy(code16.data() + t * coded, head.code16[s].data(), sizeof(uint16_t) * static_cast<size_t>(coded));
      std::memcpy(residual16.data() + t * coded, head.residual16[s].data(), sizeof(uint16_t) * static_cast<size_t>(coded));
    }
  } else {
    for (int64_t m = 0; m < count; ++m) unit[static_cast<size_t>(m)] = float_error_unit(queries + m * dims, dims);
  }
  const double prepare = watch.seconds();

  std::vector<SearchResult> results(rows);
  std::vector<long> scanned(rows);
  HitSink sink{&results};
  nk_cuda_timing t{};
  nk::kernels::cuda_call("louver-index search", api.search_f32, head.keys.data(), head.key_norm.data(),
                         static_cast<long>(n), static_cast<long>(dims), static_cast<long>(coded), static_cast<long>(s_count),
                         bound_pass ? code16.data() : nullptr, bound_pass ? residual16.data() : nullptr, queries,
                         static_cast<long>(count), bound_pass ? tables.data() : nullptr,
                         bound_pass ? table_offset.data() : nullptr, bound_pass ? q_norm.data() : nullptr,
                         bound_pass ? cut.data() : nullptr, bound_pass ? prune_cut.data() : nullptr,
                         bound_pass ? q_rest.data() : nullptr, bound_pass ? head.rest_norm.data() : nullptr,
                         static_cast<long>(head.warm), unit.data(), thresholds, dense ? 1 : 0, repeats,
                         scanned.data(), &take_hits, static_cast<void*>(&sink), &t);
  for (size_t m = 0; m < rows; ++m) {
    results[m].scanned = scanned[m];
    std::sort(results[m].hits.begin(), results[m].hits.end(), [](const Hit& a, const Hit& b) { return a.id < b.id; });
  }
  if (timing) {
    *timing = GpuTiming::from(t);
    timing->prepare = prepare;
  }
  return results;
}

}  // namespace nk::louver
