// qa.hpp - QA pairs of the benchmark as token sequences: nk-lm's shared QA
// code (nk/lm/qa.hpp: sequences, scoring, greedy answers, packed batches)
// under shred's names, and the sequences of a QA set's rows.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nk/lm/qa.hpp"
#include "shred-unlearn/tofu.hpp"

namespace shred {

using Sequence = nk::lm::QaSequence;
using LoadedModel = nk::lm::CausalModel;
using nk::lm::answer_logprob_sum;
using nk::lm::greedy;
using nk::lm::Packed;
using nk::lm::prompt_tokens;
using nk::lm::qa_sequence;
using nk::lm::score;
using nk::lm::text_sequence;

/// A causal checkpoint with its tokenizer (exit 3 for a masked-diffusion one).
inline LoadedModel load_model(const std::string& path) {
  return nk::lm::load_causal_model(path);
}

/// Sequences of the QA rows of a set (question + answer).
std::vector<Sequence> qa_sequences(const nk::lm::Tokenizer& tok, const QaSet& set, const std::vector<int64_t>& rows,
                                   int64_t context, const std::string& file, const std::string& group);

}  // namespace shred
