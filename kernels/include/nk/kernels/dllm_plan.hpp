// dllm_plan.hpp - Step-dLLM's block masks: block scoring, selection under a
// budget, and the online planner that decides, one denoising step of one
// layer at a time, whether to re-score (an anchor step) or to reuse the last
// mask. dllm-sparse's plan verb replays it over a stored trajectory; nk::lm's
// diffusion sampler calls it inside the model (--sparse-policy): one policy
// code for both.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nk/kernels/dllm.hpp"

namespace nk::dllm {

/// P[h][i][j]: softmax over key blocks j of the pooled score of query block i
/// (rows == nullptr: every query block; otherwise only those rows are filled).
std::vector<float> pooled_scores(const Qkv& x, int64_t block, double scale, const std::vector<int64_t>* rows);
/// P[h][i][j] from 'samples' evenly spaced query rows of each block, each with
/// its exact softmax over every key, summed per key block and averaged.
std::vector<float> sampled_scores(const Qkv& x, int64_t block, double scale, int64_t samples, const std::vector<int64_t>* rows);
/// The exact share of each query block's attention mass in each key block (dense pass).
std::vector<float> exact_block_mass(const Qkv& x, int64_t block, float scale);
/// Blocks kept in all for a sparsity; usage error when below the diagonal.
int64_t total_budget(int64_t heads, int64_t nb, double sparsity);
/// Diagonal blocks plus the best-scoring others, exactly 'budget' in all;
/// global: one ranking over all heads, else budget/H per head.
BlockMask select_blocks(const std::vector<float>& score, int64_t heads, int64_t nb, int64_t block, int64_t budget, bool global);
/// 1 - (mean row entropy of P_h) / log(nb): 0 for uniform, 1 for one block per row.
double normalised_entropy_complement(const std::vector<float>& p, int64_t h, int64_t nb);

/// A mask policy and its settings.
///   step          re-score at anchor steps (every anchor_every steps, and
///                 when the probed mass kept falls by more than drift), reuse
///                 the mask in between; the budget goes to the best blocks
///                 over all heads together (head-adaptive);
///   once-uniform  score the first step only, budget/H blocks per head;
///   every-uniform re-score every step, budget/H per head;
///   oracle        the exact block masses of every step (a dense pass), global;
///   dense         no mask (where a caller allows it: every block is read).
struct PolicyOptions {
  std::string name = "step";
  int64_t block = 64, anchor_every = 8;
  double sparsity = 0.9;
  double drift = 0.01;            ///< step: > 0 also anchors when the probed mass kept falls by more
  double probe = 0.25;            ///< step: share of query blocks probed between anchors
  std::string score = "sampled";  ///< pooled | sampled
  int64_t samples = 16;           ///< sampled: query rows per block
  std::string head_budget;        ///< global | uniform | "" (the policy's own: global for step and oracle)
  bool global() const { return head_budget.empty() ? name == "step" || name == "oracle" : head_budget == "global"; }
};

/// Usage errors (exit 2) naming the option; 'flag' is how the caller spells
/// each option (policy, sparsity, block, ...) on its command line.
void check_policy(const PolicyOptions& o, bool allow_dense, const std::map<std::string, std::string>& flag = {});

/// What the planner did at one step of one layer.
struct PlanStep {
  bool anchor = false;                ///< scored afresh at this step
  std::vector<int64_t> budget;        ///< anchors: blocks kept per head
  std::vector<double> concentration;  ///< anchors: normalised_entropy_complement per head
  double seconds = 0;                 ///< the planner's own time at this step
};

/// The online planner: call next() for each layer's denoising steps in order
/// (layers may interleave, as a model's forward runs them); each layer keeps
/// its own state. A sequence of another shape at a layer starts that layer
/// afresh (a new trajectory); reset() forgets every layer.
class MaskPlanner {
 public:
  explicit MaskPlanner(PolicyOptions o);
  const PolicyOptions& options() const { return o_; }
  /// The mask for this step (nullptr: the dense policy, every block).
  const BlockMask* next(int64_t layer, const Qkv& x, float scale, PlanStep* info = nullptr);
  void reset() { layers_.clear(); }
  /// Steps and anchors planned so far at a layer, over every trajectory since construction.
  int64_t steps(int64_t layer) const;
  int64_t anchors(int64_t layer) const;

 private:
  struct Layer {
    BlockMask current;
    std::vector<int64_t> probe_rows;
    double anchor_share = 0;
    int64_t heads = 0, nb = 0, length = 0, step = 0, since_anchor = 0;
  };
  PolicyOptions o_;
  std::map<int64_t, Layer> layers_;
  std::map<int64_t, std::pair<int64_t, int64_t>> counts_;  // layer -> (steps, anchors)
};

}  // namespace nk::dllm
