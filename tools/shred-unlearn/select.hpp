// select.hpp - SHRED's selection and targets: one forward pass of the frozen
// original model over each forget instance gives every token's probability;
// the bottom-P answer positions (highest surprisal) are forget positions, the
// rest benign anchors; every position's target lives on S, the original's
// top-K (the gold token in the K-th place when missing), with the gold
// token's logit demoted at forget positions and untouched at benign ones.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nk/lm/model.hpp"
#include "shred-unlearn/qa.hpp"

namespace shred {

enum class Pick { bottom, all, random };  ///< shred, shred-all, shred-random
enum class Demote { min, shift, zero };

struct SelectConfig {
  double percent = 10;  ///< P: share of the candidates that become forget positions
  int64_t topk = 32;    ///< K: the support's size
  int64_t skip = 0;     ///< answer tokens never selected (leading context)
  Pick pick = Pick::bottom;
  Demote demote = Demote::min;
  double margin = 1;  ///< min: z'_y = min(z_y, min_{j in S, j != y} z_j) - margin
  double shift = 5;   ///< shift: z'_y = z_y - shift
  uint64_t seed = 0;  ///< shred-random's draws: Rng(seed).split(instance)
};

/// Parses --demote: "min", "shift:D" or "zero".
void parse_demote(const std::string& text, SelectConfig& config);

/// Instances in rows, positions in columns (T = the longest), -1 / NaN / 0 as
/// padding. support [N,T,K] is the original's support for predicting token t
/// (from the logits at t - 1); support_logits its logits there; target the
/// target distribution over it (probabilities); target_logits the demoted
/// logits the loss uses (-inf for a zeroed gold token).
struct Selection {
  int64_t N = 0, T = 0, K = 0;
  std::vector<int32_t> tokens;                 ///< [N,T], -1 padding
  std::vector<int64_t> answer_start;           ///< [N]
  std::vector<float> logprob;                  ///< [N,T] log p(token t | < t); NaN at 0 and padding
  std::vector<int8_t> forget_mask;             ///< [N,T] 1 forget, 0 benign, -1 position 0 and padding
  std::vector<int32_t> support;                ///< [N,T,K], -1 where no target
  std::vector<float> support_logits;           ///< [N,T,K]
  std::vector<float> target;                   ///< [N,T,K]
  std::vector<float> target_logits;            ///< [N,T,K]
  double coverage_mean = 0, coverage_min = 1;  ///< the original's probability mass on S, over positions
  int64_t forget_positions = 0, benign_positions = 0;
};

/// The candidate positions of one instance that become forget positions:
/// answer tokens from answer_start + skip; bottom: the max(1, floor(P/100 n +
/// 0.5)) lowest log-probabilities, ties to the earlier position; all: every
/// candidate; random: that many drawn uniformly. Exit 2 when no candidate is
/// left (skip >= the answer's tokens).
std::vector<int64_t> pick_positions(const std::vector<float>& logprob, int64_t answer_start, int64_t length,
                                    const SelectConfig& config, int64_t instance);

/// The demoted target logits of one position (gold = the token's index in
/// the support) into 'out'.
void demote_logits(const float* logits, int64_t K, int64_t gold, const SelectConfig& config, float* out);

/// Selection over the sequences with the model (the frozen original).
Selection select(const nk::lm::Model& model, const std::vector<Sequence>& sequences, const SelectConfig& config);

}  // namespace shred
