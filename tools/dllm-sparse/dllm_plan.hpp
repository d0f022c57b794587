// dllm_plan.hpp - block scoring and selection, shared by plan, eval and the tests.
#pragma once
#include <vector>

#include "dllm-sparse/dllm.hpp"

namespace dllm {

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

}  // namespace dllm
