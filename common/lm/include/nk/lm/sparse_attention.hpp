// sparse_attention.hpp - InfLLM-v2 block-sparse attention for grouped-query
// heads (issue 36): each query attends only to the keys of the blocks the
// selector picked for it and its group (block_select.hpp), causally inside
// its own block. Forward and explicit backward over a packed batch, laid out
// as attention.hpp's (q [N, Hq*hd], k and v [N, Hkv*hd], out [N, Hq*hd],
// lse [N, Hq]); the selection is an input, so the backward sees the same
// blocks as the forward and no gradient flows through the choice.
//
// The work runs in tiles of one query block (16 to 64 queries) of one segment and
// one KV head: the union of the tile's selected blocks is gathered once, the
// scores of every head of the group are one matrix product over that union,
// and a mask keeps each query to its own blocks (and to keys <= itself).
// Exact: a masked score is -inf, so the result is the per-query sparse
// softmax whatever the union holds.
#pragma once
#include <cstdint>

#include "nk/lm/block_select.hpp"

namespace nk::lm {

/// The selector's blocks for every row of a packed batch (segment s is rows
/// offsets[s] .. offsets[s+1] - 1; a row's index inside its segment is its
/// query position t): sel[(row * kv_heads + g) * c.width() + e] - forced
/// blocks, then the top-k by group score, -1 padding. q and k post-RoPE.
void select_batch(const BlockSelectorConfig& c, const float* q, const float* k, const int64_t* offsets,
                  int64_t segments, int64_t heads, int64_t kv_heads, int64_t hd, int32_t* sel);

/// out[t] = sum over the keys j <= t of t's selected blocks of p_tj v_j,
/// p = softmax of q_t.k_j / sqrt(hd) over those keys; lse kept for the
/// backward.
template <class T>
void sparse_attention_forward(const BlockSelectorConfig& c, const int32_t* sel, const T* q, const T* k, const T* v,
                              const int64_t* offsets, int64_t segments, int64_t heads, int64_t kv_heads, int64_t hd,
                              T* out, T* lse);

/// The backward for the same selection: dq, dk and dv overwritten.
template <class T>
void sparse_attention_backward(const BlockSelectorConfig& c, const int32_t* sel, const T* dout, const T* out,
                               const T* q, const T* k, const T* v, const T* lse, const int64_t* offsets,
                               int64_t segments, int64_t heads, int64_t kv_heads, int64_t hd, T* dq, T* dk, T* dv);

/// Keys a query reads on average over a segment of n tokens under c (the
/// sparse attention's work; n(n+1)/2 / n for dense).
double sparse_keys_per_query(const BlockSelectorConfig& c, int64_t n);

}  // namespace nk::lm
