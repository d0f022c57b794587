// config.hpp - the shape of a Llama-architecture model (causal or masked
// diffusion), checked before anything is allocated.
#pragma once
#include <cstdint>
#include <string>

namespace nk::lm {

enum class Mode { causal, diffusion };

struct Config {
  Mode mode = Mode::causal;
  int64_t vocab = 2048, d_model = 256, n_layers = 4, n_heads = 8, n_kv_heads = 4, head_dim = 32, d_ff = 704,
          max_seq = 256;
  double rope_theta = 1e4, norm_eps = 1e-5;
  bool tied_head = true;

  /// Refuses (usage error naming 'where', exit 2) sizes that are not
  /// positive, heads that do not group (n_heads a multiple of n_kv_heads), an
  /// odd head_dim (RoPE rotates pairs), and models over 2^31 parameters.
  void validate(const std::string& where) const;
  /// Every weight: embedding, per layer 2 norms + q,k,v,o + gate,up,down,
  /// final norm, and the output head unless tied.
  int64_t parameter_count() const;
};

}  // namespace nk::lm
