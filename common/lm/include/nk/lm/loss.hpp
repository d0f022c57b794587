// loss.hpp - what tools read off the logits (log-probabilities, top-K) and the
// losses they train with, each with its gradient with respect to the logits
// (the input of Model::backward). Float64 inside; logits of any magnitude.
#pragma once
#include <cstdint>
#include <span>

namespace nk::lm {

struct TokenBatch;

/// out[r, :] = log softmax(logits[r, :]) for rows of V values.
void log_softmax_rows(const float* logits, int64_t rows, int64_t V, float* out);

/// logprob[r] = log p(tokens[r] | the row before it) = log softmax(logits[r-1])[tokens[r]]
/// within each segment; NaN at a segment's first row (nothing predicts it).
void next_token_logprob(const float* logits, int64_t V, const TokenBatch& batch, float* logprob);

/// The K largest logits of each row, descending, ties to the lower id.
/// With 'force' (one id per row), a row whose top K lacks force[r] gets it
/// in the K-th place (a gold token kept in a support set).
void top_k(const float* logits, int64_t rows, int64_t V, int64_t K, int32_t* ids, float* values,
           const int32_t* force = nullptr);

enum class Divergence {
  cross_entropy,  ///< -log p_s(token)
  forward_kl,     ///< KL(target || student)
  reverse_kl,     ///< KL(student || target)
  jsd,            ///< Jensen-Shannon: (KL(t || m) + KL(s || m)) / 2, m = (s + t) / 2; in [0, ln 2]
};

/// The target of each loss row.
struct Target {
  enum class Kind {
    token,       ///< token[r]: cross-entropy only
    full,        ///< logits[r * stride + v]: the target distribution softmax(logits) over the vocabulary
    topk_rest,   ///< ids[r*k + j], values = the target's log-probabilities there; both sides are folded into
                 ///< k + 1 bins: the k ids and the rest of the vocabulary (1 - the k probabilities)
    restricted,  ///< ids[r*k + j], values = target logits there; both sides renormalised over the k ids
  };
  Kind kind = Kind::token;
  const int32_t* token = nullptr;
  const float* logits = nullptr;
  int64_t stride = 0;
  const int32_t* ids = nullptr;
  const float* values = nullptr;
  int64_t k = 0;
};

/// The rows of the logits a loss is taken on, with a signed weight each
/// (empty weights: 1). Loss row r reads logits row rows[r] and target row r.
struct LossRows {
  std::span<const int64_t> rows;
  std::span<const float> weights;
};

/// Returns sum_r w_r loss_r; loss[r] (when not null) gets loss_r; dlogits
/// (when not null; [logit_rows, V]) gets w_r d loss_r / d logits at each loss
/// row and zero elsewhere - or is added to when 'accumulate' (a loss made of
/// several terms). A kind the divergence does not take, a row outside
/// logit_rows or an id outside V is a usage error.
double loss_and_grad(Divergence divergence, const float* logits, int64_t logit_rows, int64_t V, const Target& target,
                     const LossRows& rows, float* loss, float* dlogits, bool accumulate = false);

/// One row's divergence between two full distributions given by logits.
double divergence(Divergence divergence, const float* student_logits, const float* target_logits, int64_t V);

}  // namespace nk::lm
