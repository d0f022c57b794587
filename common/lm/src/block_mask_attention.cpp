// block_mask_attention.cpp - a diffusion model's attention through
// Step-dLLM's planner and fused block-sparse kernel (see the header).
#include "nk/lm/block_mask_attention.hpp"

#include <algorithm>
#include <chrono>
#include <string>

#include "nk/error.hpp"
#include "nk/timer.hpp"

namespace nk::lm {

BlockMaskAttention::BlockMaskAttention(const Config& config, const nk::dllm::PolicyOptions& policy)
    : heads_(config.n_heads), kv_heads_(config.n_kv_heads), head_dim_(config.head_dim), planner_(policy) {
  if (config.mode != Mode::diffusion)
    throw usage_error("sparse policy: block masks are for a diffusion model's bidirectional attention (this model is causal)");
  if (config.mla() || config.sparse)
    throw usage_error("sparse policy: needs a grouped-query model with dense attention (this one is " +
                      std::string(config.mla() ? "mla" : "sparse-gqa") + ")");
  if (head_dim_ > nk::dllm::kMaxDims)
    throw usage_error("sparse policy: head_dim " + std::to_string(head_dim_) + " passes the kernel's " +
                      std::to_string(nk::dllm::kMaxDims));
  x_.heads = heads_, x_.kv_heads = kv_heads_, x_.dims = head_dim_;
  x_.kv_of.resize(static_cast<size_t>(heads_));
  for (int64_t h = 0; h < heads_; ++h) x_.kv_of[static_cast<size_t>(h)] = static_cast<int32_t>(h / (heads_ / kv_heads_));
}

void BlockMaskAttention::attend(const AttentionCall& call, float* out) {
  if (call.causal) throw usage_error("sparse policy: block masks attend bidirectionally (diffusion models only)");
  if (call.batch->segments() != 1) throw usage_error("sparse policy: one sequence per forward");
  const int64_t L = call.batch->rows(), H = heads_, G = kv_heads_, hd = head_dim_;
  // Token-major rows [L, heads*hd] to the kernel's head-major [heads, L, hd].
  auto t0 = std::chrono::steady_clock::now();
  x_.length = L;
  x_.q.resize(static_cast<size_t>(H * L * hd));
  x_.k.resize(static_cast<size_t>(G * L * hd));
  x_.v.resize(static_cast<size_t>(G * L * hd));
  for (int64_t i = 0; i < L; ++i) {
    for (int64_t h = 0; h < H; ++h) std::copy_n(call.q + (i * H + h) * hd, hd, x_.q.data() + (h * L + i) * hd);
    for (int64_t g = 0; g < G; ++g) {
      std::copy_n(call.k + (i * G + g) * hd, hd, x_.k.data() + (g * L + i) * hd);
      std::copy_n(call.v + (i * G + g) * hd, hd, x_.v.data() + (g * L + i) * hd);
    }
  }
  stats_.pack_seconds += nk::seconds_since(t0);
  const float scale = static_cast<float>(call.scale);
  t0 = std::chrono::steady_clock::now();
  const nk::dllm::BlockMask* mask = planner_.next(call.layer, x_, scale);
  stats_.plan_seconds += nk::seconds_since(t0);
  const int64_t block = planner_.options().block, nb = nk::dllm::block_count(L, block);
  stats_.total_blocks += H * nb * nb;
  stats_.kept_blocks += mask ? mask->kept() : H * nb * nb;
  head_out_.resize(static_cast<size_t>(H * L * hd));
  t0 = std::chrono::steady_clock::now();
  nk::dllm::attention(x_, mask, block, scale, head_out_.data());
  stats_.attention_seconds += nk::seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < L; ++i)
    for (int64_t h = 0; h < H; ++h) std::copy_n(head_out_.data() + (h * L + i) * hd, hd, out + (i * H + h) * hd);
  stats_.pack_seconds += nk::seconds_since(t0);
  ++stats_.calls;
}

}  // namespace nk::lm
