// block_mask_attention.hpp - Step-dLLM inside the model: a diffusion model's
// bidirectional attention, in every layer at every denoising step, through
// the fused block-sparse kernel (nk/kernels/dllm.hpp) over the mask that the
// online planner (nk/kernels/dllm_plan.hpp) gives for that layer and step -
// the same kernel and policy code that dllm-sparse runs on stored
// trajectories. Plugged into sample_diffusion through DiffusionOptions::attention.
#pragma once
#include <cstdint>
#include <vector>

#include "nk/kernels/dllm_plan.hpp"
#include "nk/lm/model.hpp"

namespace nk::lm {

class BlockMaskAttention : public AttentionBackend {
 public:
  /// A grouped-query diffusion model's config; the policy as dllm-sparse plan takes it (or dense).
  BlockMaskAttention(const Config& config, const nk::dllm::PolicyOptions& policy);
  /// Nothing is cached: each denoising step attends over its whole sequence.
  int64_t length(int32_t) const override { return 0; }
  /// One segment (one sequence) per call, bidirectional.
  void attend(const AttentionCall& call, float* out) override;
  /// A new sequence: the planner starts every layer afresh (the counts below go on).
  void reset() { planner_.reset(); }
  const nk::dllm::MaskPlanner& planner() const { return planner_; }

  struct Stats {
    int64_t calls = 0;
    int64_t kept_blocks = 0, total_blocks = 0;  ///< summed over calls and heads
    double attention_seconds = 0;               ///< the kernel
    double plan_seconds = 0;                    ///< the planner (scores at anchors, probes)
    double pack_seconds = 0;                    ///< rows to heads and back
    double density() const { return total_blocks ? static_cast<double>(kept_blocks) / static_cast<double>(total_blocks) : 1.0; }
  };
  const Stats& stats() const { return stats_; }

 private:
  int64_t heads_, kv_heads_, head_dim_;
  nk::dllm::MaskPlanner planner_;
  nk::dllm::Qkv x_;
  std::vector<float> head_out_;
  Stats stats_;
};

}  // namespace nk::lm
