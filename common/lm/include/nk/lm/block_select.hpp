// block_select.hpp - the InfLLM-v2 block selector of block-sparse attention
// (issue 36), shared by the model library and sparda-forecast: pooled keys,
// each group's block distribution, and the selection (forced blocks, then
// the top-k by score).
//
// Exactly: the pooled key Kb_j of a KV head is the mean of the 'block'
// post-RoPE keys of complete block j. Query t of head h scores the complete
// blocks j < floor(t / block) (those wholly before its own block) with
// p_h(j) = softmax_j(q_h . Kb_j / sqrt(d)); group g's score is the sum of
// p_h over its G = Hq / Hkv query heads (h / G == g, as repeat_kv). Forced:
// the first init_blocks blocks and the local_blocks blocks ending with t's
// own; then the topk best other complete blocks by score, ties to the lower
// index.
#pragma once
#include <cstdint>

namespace nk::lm {

struct BlockSelectorConfig {
  int64_t block = 64, init_blocks = 1, local_blocks = 2, topk = 16;
  /// Entries per (group, query) of a selection: forced, then top-k, -1 padding.
  int64_t width() const { return init_blocks + local_blocks + topk; }
  /// Complete blocks query t may score (those before its own block).
  int64_t candidates(int64_t t) const { return t / block; }
  /// Complete blocks query t may score that are not forced (the top-k's pool).
  int64_t free_candidates(int64_t t) const {
    const int64_t nc = t / block, lo = init_blocks < nc ? init_blocks : nc,
                  hi = nc - local_blocks + 1 < nc ? nc - local_blocks + 1 : nc;
    return hi > lo ? hi - lo : 0;
  }
};

/// Pooled keys [heads, T / block, d] of post-RoPE keys [heads, T, d]: the
/// mean of each complete block (a ragged last block is left out).
void pool_keys(const float* k, int64_t heads, int64_t T, int64_t d, int64_t block, float* pooled);

/// The same over strided keys: key t of head h at k + h * head_stride +
/// t * row_stride (the projections' token-major [T, heads * d] rows: d and
/// heads * d). Bit for bit what pool_keys gives for the same values.
void pool_keys_strided(const float* k, int64_t head_stride, int64_t row_stride, int64_t heads, int64_t T, int64_t d,
                       int64_t block, float* pooled);

/// The forced blocks of query t, ascending and without repeats; returns how
/// many were written to 'out' (at most init_blocks + local_blocks).
int64_t forced_blocks(const BlockSelectorConfig& c, int64_t t, int32_t* out);

/// One (group, query) selection: the forced blocks, then the topk best
/// non-forced complete blocks by scores[0 .. candidates(t)) in decreasing
/// order (ties to the lower index), then -1 up to width() entries. Returns
/// the number of blocks selected.
int64_t select_blocks(const BlockSelectorConfig& c, int64_t t, const double* scores, int32_t* out);

/// sum_i a_i b_i in double (the products exact, eight partial sums added
/// pairwise at the end): the selector's and the Forecast's block scores.
double dot(const float* a, const float* b, int64_t n);
double dot(const double* a, const float* b, int64_t n);

/// p(j) = softmax over j < n of q . pooled_j / sqrt(d) (pooled rows of d
/// floats), in double.
void block_softmax(const float* q, const float* pooled, int64_t n, int64_t d, double* p);

/// The selector's score of group g for query t: the sum of block_softmax
/// over the group's query heads. q is [Hq, T, d] (post-RoPE), pooled is
/// [Hkv, nb, d]; writes candidates(t) scores. 'scratch' holds candidates(t)
/// doubles.
void group_scores(const BlockSelectorConfig& c, const float* q, int64_t Hq, int64_t T, int64_t t, const float* pooled,
                  int64_t Hkv, int64_t nb, int64_t d, int64_t g, double* scores, double* scratch);

/// The same for one query whose heads lie 'head_stride' floats apart (head
/// h at q + h * head_stride), at position t: decoding's [Hq, d] rows.
void group_scores_at(const BlockSelectorConfig& c, const float* q, int64_t head_stride, int64_t Hq, int64_t t,
                     const float* pooled, int64_t Hkv, int64_t nb, int64_t d, int64_t g, double* scores,
                     double* scratch);

}  // namespace nk::lm
