// louver.hpp - the verbs of louver-index: a KV-cache index for halfspace
// range search with zero false negatives.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nk/kernels/louver_codes.hpp"
#include "louver-index/index_io.hpp"
#include "nk/run_env.hpp"

namespace louver {

inline constexpr const char* kIndexSchema = "louver-index.index/1";
inline constexpr const char* kHitsSchema = "louver-index.hits/1";
inline constexpr const char* kKvSchema = "louver-index.kv/1";

struct GenOptions {
  std::string output = "-";
  bool no_clobber = false;
  int64_t keys = 8192, dims = 128, queries = 64, kv_heads = 1, query_heads = 0, value_dims = 0;
  std::string profile = "llm";
};
void gen(const GenOptions& options, const nk::RunEnv& env);

struct BuildOptions {
  std::string input = "-", output = "-";
  bool no_clobber = false;
  IndexParams params;
};
void build(const BuildOptions& options);

struct AppendOptions {
  std::string input = "-", keys, output = "-";
  bool no_clobber = false;
  /// Rebuild the codebooks over every key when the mean summed residual of
  /// the keys coded by appends exceeds this multiple of the built keys' (0: never).
  double rebuild_ratio = 1.25;
  /// Rebuild when the coded keys reach this multiple of the keys the
  /// codebooks were made from (clusters twice as full as a fresh build's; 0: never).
  double rebuild_growth = 2.0;
};
void append(const AppendOptions& options);

struct QueryOptions {
  std::string input, queries, output = "-";
  bool no_clobber = false;
  double threshold = 0;
  bool has_threshold = false;
  int64_t topk_oracle = 0;
  double mass = 0;             ///< > 0: T from a sampled bound that keeps this softmax mass
  int64_t mass_sample = 256;   ///< keys sampled per query for --mass
  double scale = 0;            ///< softmax scale for --mass and attend (0 = 1/sqrt(d))
  bool compare_dense = false;  ///< also time a dense exact scan and check it agrees (or measure recall)
  int repeats = 1;             ///< timing rounds (index, then dense scan, alternating); the fastest of each counts
  std::string method = "louver";  ///< louver | quest-threshold | quest-topk
  double budget = 0.1;            ///< quest-topk, ivf: fraction of keys scanned
  int64_t page_size = 16;         ///< quest-*: keys per page
  int64_t lists = 0;              ///< ivf: k-means lists per KV head (0: sqrt N)
};
/// On CUDA (env.cuda()) the louver method searches on the GPU; env.shard picks the query rows.
void query(const QueryOptions& options, const nk::RunEnv& env);

struct PlotOptions {
  std::vector<std::string> inputs;  ///< nk-lm generate outputs with /kl (--divergence)
  std::string output;
  bool no_clobber = false;
  int64_t row = 0;                  ///< which generation of each file
};
/// SVG: KL per decoding step of each generation (nk-lm generate --divergence),
/// with the spike level.
void plot(const PlotOptions& options);

/// Sparse attention over the hits of each query (softmax over hits only)
/// against dense attention over every key: outputs, error and covered mass.
void attend(const QueryOptions& options, const nk::RunEnv& env);

/// What query and attend share: the index, the queries (checked against it),
/// and the slice of (query head, query) rows this run answers.
struct QueryJob {
  Index index;
  Vectors queries;
  int64_t group = 1;             ///< query heads per KV head (GQA)
  int64_t first = 0, count = 0;  ///< rows [first, first + count)
  const HeadIndex& head_of(int64_t row) const {
    return index.heads[static_cast<size_t>(row / queries.count / group)];
  }
  const float* query_of(int64_t row) const { return queries.row(row / queries.count, row % queries.count); }
};
QueryJob open_query_job(const QueryOptions& options, const nk::Shard& shard);

/// The threshold of each query row: --threshold, --topk-oracle or --mass.
double row_threshold(const QueryOptions& options, uint64_t seed, const HeadIndex& head, const float* query, int64_t dims,
                     int64_t row);

}  // namespace louver
