// config.hpp - the shape of a Llama-architecture model (causal or masked
// diffusion), checked before anything is allocated.
#pragma once
#include <cstdint>
#include <string>

#include "nk/lm/block_select.hpp"

namespace nk::lm {

enum class Mode { causal, diffusion };

/// gqa: Llama's q, k, v projections (MHA when n_kv_heads = n_heads). mla:
/// DeepSeek-V2's multi-head latent attention - a token's keys and values come
/// from a shared latent c = RMSNorm(x W_DKV^T) of kv_rank values and one
/// decoupled RoPE key k_R = RoPE(x W_KR^T) of rope_dim values; per head,
/// k = [c W_UK^T, k_R] and v = c W_UV^T. Its heads are all query heads
/// (n_kv_heads = n_heads), each of head_dim = nope + rope_dim query/key
/// values, and the value width is head_dim too (so one attention kernel
/// serves both kinds).
enum class AttentionKind { gqa, mla };

struct Config {
  Mode mode = Mode::causal;
  int64_t vocab = 2048, d_model = 256, n_layers = 4, n_heads = 8, n_kv_heads = 4, head_dim = 32, d_ff = 704,
          max_seq = 256;
  double rope_theta = 1e4, norm_eps = 1e-5;
  bool tied_head = true;
  AttentionKind attention = AttentionKind::gqa;
  int64_t kv_rank = 0;   ///< mla: d_c, the latent's width (DeepSeek-V2: 512)
  int64_t rope_dim = 0;  ///< mla: d_R, the decoupled RoPE key's width (DeepSeek-V2: 64); even, < head_dim
  bool mla() const { return attention == AttentionKind::mla; }
  /// mla: a head's query/key values without RoPE (head_dim - rope_dim).
  int64_t nope_dim() const { return head_dim - rope_dim; }
  /// sparse-gqa (issue 36): a causal gqa model whose every attention -
  /// training, scoring, cached generation - reads only the KV blocks the
  /// InfLLM-v2 selector picks for each query and group (block_select.hpp:
  /// the forced init and local blocks, then the topk best others by the
  /// group's pooled-key softmax). The selection is discrete: no gradient
  /// flows through it, only through attention over the picked keys.
  bool sparse = false;
  BlockSelectorConfig selector;  ///< sparse: block, init_blocks, local_blocks, topk

  /// Refuses (usage error naming 'where', exit 2) sizes that are not
  /// positive, heads that do not group (n_heads a multiple of n_kv_heads), an
  /// odd head_dim (RoPE rotates pairs), and models over 2^31 parameters;
  /// for mla also n_kv_heads other than n_heads, kv_rank outside 1..2^16,
  /// and rope_dim not even and in 2..head_dim - 2; for sparse a
  /// diffusion or mla model, a block outside 1..max_seq, local_blocks < 1
  /// (a query must see its own block), topk < 1.
  void validate(const std::string& where) const;
  /// Every weight: embedding, per layer 2 norms + q,k,v,o (mla: q,
  /// kv_a (W_DKV and W_KR), its norm, kv_b (W_UK and W_UV), o) +
  /// gate,up,down, final norm, and the output head unless tied.
  int64_t parameter_count() const;
};

}  // namespace nk::lm
