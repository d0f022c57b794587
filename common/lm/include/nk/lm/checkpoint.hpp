// checkpoint.hpp - a model in one HDF5 file (nk-lm.model/1): its config, its
// weights (bfloat16 or float32), its tokenizer, and for --resume the
// optimiser's state. Strict reader: a foreign, truncated or damaged file is
// exit 3 naming the file and the tensor.
//
//   /                  nk_schema "nk-lm.model/1"; mode "causal"|"diffusion";
//                      vocab d_model n_layers n_heads n_kv_heads head_dim d_ff
//                      max_seq rope_theta norm_eps tied_head; weights "bfloat16"|"float32"
//   /params/<name>     transformers' names and shapes; float32, or uint16
//                      holding bfloat16 bits (attribute dtype = "bfloat16")
//   /tokenizer         the byte-level BPE (absent: token ids only)
//   /train             step, seed, tokens, recipe (attributes); m/<name>, v/<name> float32
#pragma once
#include <functional>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nk/lm/params.hpp"
#include "nk/lm/tokenizer.hpp"

namespace nk::lm {

enum class StoreAs { f32, bf16 };

/// bfloat16 by round-to-nearest-even (NaN stays NaN), and back.
uint16_t to_bf16(float x);
float from_bf16(uint16_t bits);

struct TrainState {
  int64_t step = 0;           ///< optimiser steps taken
  int64_t tokens = 0;         ///< tokens trained on
  uint64_t seed = 0;          ///< the batches' seed
  std::string recipe;         ///< the command line and options that made it
  std::vector<float> m, v;    ///< AdamW's moments, in the ParameterStore layout
};

struct Checkpoint {
  ParameterStore weights;
  std::optional<Tokenizer> tokenizer;
  std::optional<TrainState> train;
};

/// Atomic (nk::h5::Writer). With bf16 the weights are rounded; the train
/// state (when given) is always float32, so that a resume continues exactly
/// only from a float32 checkpoint (train refuses to resume from bf16).
/// 'extra' (when set) writes a tool's own groups into the same file before it
/// is published (a training curve beside the weights).
void save_checkpoint(const std::string& path, const ParameterStore& weights, const Tokenizer* tokenizer,
                     const TrainState* train, StoreAs store_as,
                     const std::function<void(h5::Writer&)>& extra = {});
Checkpoint load_checkpoint(const std::string& path);
/// The config alone (info, and tools that check a mode before loading).
Config load_config(const std::string& path);
std::string mode_name(Mode mode);

}  // namespace nk::lm
