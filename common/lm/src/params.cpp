// params.cpp - the named layout of a model's weights, and their initialisation.
#include "nk/lm/params.hpp"

#include <algorithm>
#include <cmath>

#include "nk/error.hpp"
#include "nk/rng.hpp"

namespace nk::lm {

std::string layer_tensor(int64_t layer, const std::string& part) {
  return "model.layers." + std::to_string(layer) + "." + part;
}

ParameterStore::ParameterStore(const Config& config) : config_(config) {
  config.validate("model config");
  int64_t offset = 0;
  const auto add = [&](std::string name, std::vector<int64_t> shape, bool decay) {
    int64_t size = 1;
    for (int64_t s : shape) size *= s;
    tensors_.push_back({std::move(name), std::move(shape), offset, size, decay});
    offset += size;
  };
  const Config& c = config;
  const int64_t q = c.n_heads * c.head_dim, kv = c.n_kv_heads * c.head_dim;
  add("model.embed_tokens.weight", {c.vocab, c.d_model}, true);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    add(layer_tensor(l, "input_layernorm.weight"), {c.d_model}, false);
    add(layer_tensor(l, "self_attn.q_proj.weight"), {q, c.d_model}, true);
    if (c.mla()) {  // DeepSeek-V2's names: rows [W_DKV; W_KR], the latent's norm, per head rows [W_UK; W_UV]
      add(layer_tensor(l, "self_attn.kv_a_proj_with_mqa.weight"), {c.kv_rank + c.rope_dim, c.d_model}, true);
      add(layer_tensor(l, "self_attn.kv_a_layernorm.weight"), {c.kv_rank}, false);
      add(layer_tensor(l, "self_attn.kv_b_proj.weight"), {c.n_heads * (c.nope_dim() + c.head_dim), c.kv_rank}, true);
    } else {
      add(layer_tensor(l, "self_attn.k_proj.weight"), {kv, c.d_model}, true);
      add(layer_tensor(l, "self_attn.v_proj.weight"), {kv, c.d_model}, true);
    }
    add(layer_tensor(l, "self_attn.o_proj.weight"), {c.d_model, q}, true);
    add(layer_tensor(l, "post_attention_layernorm.weight"), {c.d_model}, false);
    add(layer_tensor(l, "mlp.gate_proj.weight"), {c.d_ff, c.d_model}, true);
    add(layer_tensor(l, "mlp.up_proj.weight"), {c.d_ff, c.d_model}, true);
    add(layer_tensor(l, "mlp.down_proj.weight"), {c.d_model, c.d_ff}, true);
  }
  add("model.norm.weight", {c.d_model}, false);
  if (!c.tied_head) add("lm_head.weight", {c.vocab, c.d_model}, true);
  data_.assign(static_cast<size_t>(offset), 0.0f);
}

void ParameterStore::zero() { std::fill(data_.begin(), data_.end(), 0.0f); }

void ParameterStore::init(uint64_t seed) {
  const Rng root(seed);
  const double residual_scale = 1.0 / std::sqrt(2.0 * static_cast<double>(config_.n_layers));
  for (size_t t = 0; t < tensors_.size(); ++t) {
    const TensorInfo& info = tensors_[t];
    float* w = data_.data() + info.offset;
    if (info.shape.size() == 1) {  // RMSNorm gains
      std::fill(w, w + info.size, 1.0f);
      continue;
    }
    const bool residual = info.name.find("o_proj") != std::string::npos || info.name.find("down_proj") != std::string::npos;
    const double sd = 0.02 * (residual ? residual_scale : 1.0);
    Rng stream = root.split(t);  // one stream per tensor: a tensor's values do not depend on the others' sizes
    for (int64_t i = 0; i < info.size; ++i) w[i] = static_cast<float>(sd * stream.normal());
  }
}

const TensorInfo& ParameterStore::info(std::string_view name) const {
  for (const TensorInfo& t : tensors_)
    if (t.name == name) return t;
  throw usage_error("no tensor '" + std::string(name) + "' in this model");
}

std::span<float> ParameterStore::tensor(std::string_view name) {
  const TensorInfo& t = info(name);
  return {data_.data() + t.offset, static_cast<size_t>(t.size)};
}

std::span<const float> ParameterStore::tensor(std::string_view name) const {
  const TensorInfo& t = info(name);
  return {data_.data() + t.offset, static_cast<size_t>(t.size)};
}

}  // namespace nk::lm
