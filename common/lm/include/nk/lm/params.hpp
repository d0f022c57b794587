// params.hpp - every weight of a model in one float buffer (as llm.c's
// params_memory), addressed by the Hugging Face transformers tensor names so
// that import, export and checkpoints share one layout. Gradients and Adam's
// moments are ParameterStores of the same Config, hence the same layout.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "nk/lm/config.hpp"

namespace nk::lm {

struct TensorInfo {
  std::string name;             ///< e.g. model.layers.3.self_attn.q_proj.weight
  std::vector<int64_t> shape;   ///< [out, in] for projections (transformers' order)
  int64_t offset = 0, size = 0;
  bool decay = true;            ///< AdamW weight decay applies (not to norms)
};

class ParameterStore {
 public:
  /// The layout the config fixes, zero-filled (the config is validated first).
  explicit ParameterStore(const Config& config);
  const Config& config() const { return config_; }
  float* data() { return data_.data(); }
  const float* data() const { return data_.data(); }
  int64_t size() const { return static_cast<int64_t>(data_.size()); }
  void zero();
  /// GPT-2/Llama initialisation from 'seed': N(0, 0.02) for matrices, the
  /// output projections (o_proj, down_proj) scaled by 1/sqrt(2 n_layers),
  /// norms at 1. The same seed gives the same weights on every machine.
  void init(uint64_t seed);
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  /// The tensor of that name; a usage error (exit 2) naming it when unknown.
  std::span<float> tensor(std::string_view name);
  std::span<const float> tensor(std::string_view name) const;
  const TensorInfo& info(std::string_view name) const;

 private:
  Config config_;
  std::vector<TensorInfo> tensors_;
  std::vector<float> data_;
};

/// "model.layers.<l>.<part>" - a layer's tensor name.
std::string layer_tensor(int64_t layer, const std::string& part);

}  // namespace nk::lm
