// qa.hpp - QA pairs as token sequences for an nk-lm model, and what every
// verb computes over them: per-token log-probabilities (scoring), greedy
// answers, and the packed batches training steps run on.
//
// A pair is BOS + "Question: <q>\nAnswer:" then " <a>" + EOS; the two parts
// are tokenised apart, so the answer's first token starts at answer_start
// whatever the question. The answer's tokens (EOS included: a model that has
// learnt the answer also stops) are the ones scored and trained.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nk/lm/checkpoint.hpp"
#include "nk/lm/model.hpp"
#include "shred-unlearn/tofu.hpp"

namespace shred {

struct Sequence {
  std::vector<int32_t> tokens;
  int64_t answer_start = 0;  ///< first answer token; tokens before it are the prompt
  int64_t size() const { return static_cast<int64_t>(tokens.size()); }
  int64_t answer_tokens() const { return size() - answer_start; }
};

/// A causal nk-lm checkpoint with its tokenizer; exit 3 for a diffusion
/// checkpoint or one without a tokenizer.
struct LoadedModel {
  std::string path;
  nk::lm::Checkpoint checkpoint;
  const nk::lm::Config& config() const { return checkpoint.weights.config(); }
  const nk::lm::Tokenizer& tokenizer() const { return *checkpoint.tokenizer; }
};
LoadedModel load_model(const std::string& path);

/// The prompt of a question, and prompt + answer. Exit 3 naming the file and
/// dataset row when the pair does not fit the model's context.
std::vector<int32_t> prompt_tokens(const nk::lm::Tokenizer& tok, const std::string& question);
Sequence qa_sequence(const nk::lm::Tokenizer& tok, const std::string& question, const std::string& answer,
                     int64_t context, const std::string& file, const std::string& dataset, int64_t row);
/// A whole text (a biography) as one sequence to continue: BOS + text + EOS,
/// answer_start 1 (every token scored); cut to the context.
Sequence text_sequence(const nk::lm::Tokenizer& tok, const std::string& text, int64_t context);

/// Per-token log p(token t | tokens < t) of each sequence (NaN at t = 0),
/// batched by token count; the returned rows match 'sequences'.
std::vector<std::vector<float>> score(const nk::lm::Model& model, const std::vector<Sequence>& sequences,
                                      int64_t batch_tokens = 4096);

/// The mean and the sum of the answer's log-probabilities.
double answer_logprob_sum(const Sequence& s, const std::vector<float>& logprob);

/// Greedy continuations (EOS dropped) of prompts, up to max_new tokens each.
std::vector<std::vector<int32_t>> greedy(const nk::lm::Model& model, const nk::lm::Tokenizer& tok,
                                         const std::vector<std::vector<int32_t>>& prompts, int64_t max_new);

/// Sequences packed into one TokenBatch (offsets owned here).
struct Packed {
  std::vector<int32_t> tokens;
  std::vector<int64_t> offsets{0};
  void add(const std::vector<int32_t>& t) {
    tokens.insert(tokens.end(), t.begin(), t.end());
    offsets.push_back(static_cast<int64_t>(tokens.size()));
  }
  nk::lm::TokenBatch batch() const { return {tokens, offsets}; }
  int64_t rows() const { return static_cast<int64_t>(tokens.size()); }
};

/// Sequences of the QA rows of a set (question + answer).
std::vector<Sequence> qa_sequences(const nk::lm::Tokenizer& tok, const QaSet& set, const std::vector<int64_t>& rows,
                                   int64_t context, const std::string& file, const std::string& group);

}  // namespace shred
