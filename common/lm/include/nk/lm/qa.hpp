// qa.hpp - question-answer pairs as token sequences for a causal nk-lm model,
// and what tools compute over them (shred-unlearn, ssd-distill): per-token
// log-probabilities, greedy answers, packed batches, held-out perplexity.
//
// A pair is BOS + [context + "\n"] + "Question: <q>\nAnswer:" then " <a>" +
// EOS; the parts are tokenised apart, so the answer's first token starts at
// answer_start whatever the question, and a document in the context (an
// open-book prompt) never merges with the question's tokens. The answer's
// tokens (EOS included: a model that has learnt the answer also stops) are
// the ones scored and trained.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nk/lm/checkpoint.hpp"
#include "nk/lm/model.hpp"

namespace nk::lm {

struct QaSequence {
  std::vector<int32_t> tokens;
  int64_t answer_start = 0;  ///< first answer token; tokens before it are the prompt
  int64_t size() const { return static_cast<int64_t>(tokens.size()); }
  int64_t answer_tokens() const { return size() - answer_start; }
};

/// A causal checkpoint with its tokenizer; exit 3 naming the file for a
/// masked-diffusion checkpoint or one without a tokenizer.
struct CausalModel {
  std::string path;
  Checkpoint checkpoint;
  const Config& config() const { return checkpoint.weights.config(); }
  const Tokenizer& tokenizer() const { return *checkpoint.tokenizer; }
};
CausalModel load_causal_model(const std::string& path);

/// BOS + [context + "\n"] + "Question: <q>\nAnswer:".
std::vector<int32_t> prompt_tokens(const Tokenizer& tok, const std::string& question, const std::string& context = "");
/// The prompt and " <answer>" + EOS; exit 3 naming the file, dataset and row
/// when the pair does not fit the model's context.
QaSequence qa_sequence(const Tokenizer& tok, const std::string& question, const std::string& answer, int64_t context,
                       const std::string& file, const std::string& dataset, int64_t row,
                       const std::string& document = "");
/// A whole text as one sequence to continue: BOS + text + EOS, answer_start 1
/// (every token scored); cut to the context.
QaSequence text_sequence(const Tokenizer& tok, const std::string& text, int64_t context);

/// Per-token log p(token t | tokens < t) of each sequence (NaN at t = 0),
/// batched by token count; the returned rows match 'sequences'.
std::vector<std::vector<float>> score(const Model& model, const std::vector<QaSequence>& sequences,
                                      int64_t batch_tokens = 4096);
/// The sum of the answer's log-probabilities.
double answer_logprob_sum(const QaSequence& s, const std::vector<float>& logprob);

/// Greedy continuations (EOS dropped) of prompts, up to max_new tokens each
/// (fewer where the longest prompt leaves less of the context).
std::vector<std::vector<int32_t>> greedy(const Model& model, const Tokenizer& tok,
                                         const std::vector<std::vector<int32_t>>& prompts, int64_t max_new);

/// Sequences packed into one TokenBatch (offsets owned here).
struct Packed {
  std::vector<int32_t> tokens;
  std::vector<int64_t> offsets{0};
  void add(const std::vector<int32_t>& t) {
    tokens.insert(tokens.end(), t.begin(), t.end());
    offsets.push_back(static_cast<int64_t>(tokens.size()));
  }
  TokenBatch batch() const { return {tokens, offsets}; }
  int64_t rows() const { return static_cast<int64_t>(tokens.size()); }
};

/// The sequences packed (a batch picked from a larger set).
Packed pack(const std::vector<const QaSequence*>& sequences);
/// The longest sequence's length (at least 2).
int64_t longest(const std::vector<QaSequence>& sequences);

/// CE on answer tokens (and on whole texts: answer_start 1) over packed
/// sequences after a forward of them; returns the mean loss and writes (adds,
/// with 'accumulate') scale * d loss / d logits.
double answer_ce(const std::vector<const QaSequence*>& seqs, const TokenBatch& batch, Workspace& ws, int64_t vocab,
                 float scale, bool accumulate);

struct FinetuneConfig {
  int64_t epochs = 10, batch = 16;
  double lr = 1e-3, weight_decay = 0.01;
  uint64_t seed = 0;
  /// Replay of general text against forgetting: each step adds this many
  /// windows of 'replay_length' tokens cut at random from 'general' (a second
  /// micro-batch whose mean CE counts with weight 1).
  int64_t replay_windows = 4, replay_length = 128;
};
/// Fine-tunes 'weights' on the sequences (CE on answers and whole texts;
/// AdamW, warm-up then cosine to a tenth), with replay windows from the
/// 'general' token stream (may be empty); on_epoch(epoch, mean loss on
/// 'data') after each epoch.
void finetune(ParameterStore& weights, const std::vector<QaSequence>& data, const std::vector<int32_t>& general,
              int32_t bos, const FinetuneConfig& config, const std::function<void(int64_t, double)>& on_epoch);
/// The fortunes nk-lm's corpus trains on (not its validation split) as one
/// token stream, EOS between documents: general text to replay.
std::vector<int32_t> replay_stream(const Tokenizer& tok);

/// Held-out general text: the paragraphs of 'text' when given, otherwise the
/// first 'docs' fortunes of nk-lm's validation split (names hashed into the
/// corpus's 2%), never trained on.
std::vector<std::string> general_text(const std::string& text, int64_t docs);
/// Perplexity of the documents joined by EOS into one stream, cut into
/// windows of the context that each start with BOS (as `nk-lm score` does);
/// NaN for no text.
double perplexity(const Model& model, const Tokenizer& tok, const std::vector<std::string>& docs);

}  // namespace nk::lm
