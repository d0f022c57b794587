// config.cpp - checking a model's shape and counting its parameters.
#include "nk/lm/config.hpp"

#include "nk/error.hpp"

namespace nk::lm {

void Config::validate(const std::string& where) const {
  const auto fail = [&](const std::string& why) { throw usage_error(where + ": " + why); };
  const auto positive = [&](int64_t v, const char* name, int64_t most) {
    if (v < 1 || v > most) fail(std::string(name) + " must be in 1.." + std::to_string(most) + ", got " + std::to_string(v));
  };
  positive(vocab, "vocab", int64_t{1} << 22);
  positive(d_model, "d_model", int64_t{1} << 16);
  positive(n_layers, "n_layers", 1024);
  positive(n_heads, "n_heads", 1024);
  positive(n_kv_heads, "n_kv_heads", 1024);
  positive(head_dim, "head_dim", 4096);
  positive(d_ff, "d_ff", int64_t{1} << 18);
  positive(max_seq, "max_seq", int64_t{1} << 20);
  if (n_heads % n_kv_heads != 0)
    fail("n_heads (" + std::to_string(n_heads) + ") must be a multiple of n_kv_heads (" + std::to_string(n_kv_heads) + ")");
  if (head_dim % 2 != 0) fail("head_dim must be even (RoPE rotates pairs), got " + std::to_string(head_dim));
  if (attention == AttentionKind::mla) {
    if (n_kv_heads != n_heads)
      fail("an mla model's n_kv_heads must equal n_heads (" + std::to_string(n_heads) + "), got " + std::to_string(n_kv_heads));
    positive(kv_rank, "kv_rank", int64_t{1} << 16);
    if (rope_dim < 2 || rope_dim > head_dim - 2 || rope_dim % 2 != 0)
      fail("an mla model's rope_dim must be even and in 2.." + std::to_string(head_dim - 2) + " (head_dim - 2), got " +
           std::to_string(rope_dim));
  }
  if (sparse) {
    if (mode != Mode::causal || attention != AttentionKind::gqa)
      fail("sparse attention (sparse-gqa) is for causal gqa models (the selector scores blocks before the query's own)");
    positive(selector.block, "the sparse block", max_seq);
    positive(selector.local_blocks, "sparse local_blocks (the local window ends with the query's own block)", 1 << 20);
    positive(selector.topk, "sparse topk", 1 << 20);
    if (selector.init_blocks < 0 || selector.init_blocks > (1 << 20))
      fail("sparse init_blocks must be in 0..2^20, got " + std::to_string(selector.init_blocks));
  }
  if (!(rope_theta > 1)) fail("rope_theta must be > 1");
  if (!(norm_eps > 0 && norm_eps < 1)) fail("norm_eps must be in (0, 1)");
  if (parameter_count() > (int64_t{1} << 31)) fail("more than 2^31 parameters: refused before allocating");
}

int64_t Config::parameter_count() const {
  const int64_t attn =
      mla()
          ? d_model * (n_heads * head_dim) * 2 + d_model * (kv_rank + rope_dim) + kv_rank +
                kv_rank * n_heads * (nope_dim() + head_dim)
          : d_model * (n_heads * head_dim) * 2 + d_model * (n_kv_heads * head_dim) * 2;
  const int64_t mlp = 3 * d_model * d_ff;
  const int64_t layer = 2 * d_model + attn + mlp;
  return vocab * d_model * (tied_head ? 1 : 2) + n_layers * layer + d_model;
}

}  // namespace nk::lm
