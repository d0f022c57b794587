// qa.cpp - QA pairs as token sequences, scoring and greedy answers.
#include "shred-unlearn/qa.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "nk/error.hpp"
#include "nk/lm/generate.hpp"
#include "nk/lm/loss.hpp"

namespace shred {

LoadedModel load_model(const std::string& path) {
  const nk::lm::Config c = nk::lm::load_config(path);
  if (c.mode != nk::lm::Mode::causal)
    throw nk::input_error(
        path, "/",
        "is a masked-diffusion checkpoint; unlearning here needs a causal model (nk-lm train --mode causal)");
  LoadedModel m{path, nk::lm::load_checkpoint(path)};
  if (!m.checkpoint.tokenizer) throw nk::input_error(path, "/tokenizer", "is missing: the QA text cannot be tokenised");
  return m;
}

std::vector<int32_t> prompt_tokens(const nk::lm::Tokenizer& tok, const std::string& question) {
  std::vector<int32_t> t{tok.bos()};
  const std::vector<int32_t> q = tok.encode("Question: " + question + "\nAnswer:");
  t.insert(t.end(), q.begin(), q.end());
  return t;
}

Sequence qa_sequence(const nk::lm::Tokenizer& tok, const std::string& question, const std::string& answer,
                     int64_t context, const std::string& file, const std::string& dataset, int64_t row) {
  Sequence s;
  s.tokens = prompt_tokens(tok, question);
  s.answer_start = s.size();
  const std::vector<int32_t> a = tok.encode(" " + answer);
  s.tokens.insert(s.tokens.end(), a.begin(), a.end());
  s.tokens.push_back(tok.eos());
  if (s.size() > context)
    throw nk::input_error(file, dataset,
                          "row " + std::to_string(row) + ": question and answer take " + std::to_string(s.size()) +
                              " tokens, over the model's context of " + std::to_string(context));
  return s;
}

Sequence text_sequence(const nk::lm::Tokenizer& tok, const std::string& text, int64_t context) {
  Sequence s;
  s.tokens.push_back(tok.bos());
  const std::vector<int32_t> t = tok.encode(text);
  s.tokens.insert(s.tokens.end(), t.begin(), t.end());
  s.tokens.push_back(tok.eos());
  if (s.size() > context) s.tokens.resize(static_cast<size_t>(context));
  s.answer_start = 1;
  return s;
}

std::vector<Sequence> qa_sequences(const nk::lm::Tokenizer& tok, const QaSet& set, const std::vector<int64_t>& rows,
                                   int64_t context, const std::string& file, const std::string& group) {
  std::vector<Sequence> out;
  out.reserve(rows.size());
  for (int64_t r : rows)
    out.push_back(qa_sequence(tok, set.question[static_cast<size_t>(r)], set.answer[static_cast<size_t>(r)], context,
                              file, group + "/answer", r));
  return out;
}

std::vector<std::vector<float>> score(const nk::lm::Model& model, const std::vector<Sequence>& sequences,
                                      int64_t batch_tokens) {
  std::vector<std::vector<float>> out(sequences.size());
  if (sequences.empty()) return out;
  int64_t longest = 0;
  for (const Sequence& s : sequences) longest = std::max(longest, s.size());
  batch_tokens = std::max(batch_tokens, longest);
  nk::lm::Workspace ws(model.config(), {batch_tokens, longest, false});
  std::vector<float> lp;
  for (size_t first = 0; first < sequences.size();) {
    Packed p;
    size_t last = first;
    while (last < sequences.size() && p.rows() + sequences[last].size() <= batch_tokens)
      p.add(sequences[last++].tokens);
    const nk::lm::TokenBatch batch = p.batch();
    model.forward(batch, ws);
    lp.resize(static_cast<size_t>(p.rows()));
    nk::lm::next_token_logprob(ws.logits(), model.config().vocab, batch, lp.data());
    for (size_t i = first; i < last; ++i) {
      const int64_t b = p.offsets[i - first];
      out[i].assign(lp.begin() + b, lp.begin() + b + sequences[i].size());
    }
    first = last;
  }
  return out;
}

double answer_logprob_sum(const Sequence& s, const std::vector<float>& logprob) {
  double sum = 0;
  for (int64_t t = s.answer_start; t < s.size(); ++t) sum += logprob[static_cast<size_t>(t)];
  return sum;
}

std::vector<std::vector<int32_t>> greedy(const nk::lm::Model& model, const nk::lm::Tokenizer& tok,
                                         const std::vector<std::vector<int32_t>>& prompts, int64_t max_new) {
  nk::lm::GenerateOptions g;
  g.sampler.greedy = true;
  g.eos = tok.eos();
  g.batch = 16;
  std::vector<std::vector<int32_t>> out(prompts.size());
  // generate_causal refuses a prompt whose length + max_new passes the context: cap per prompt.
  std::vector<size_t> order(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) order[i] = i;
  int64_t longest = 0;
  for (const auto& p : prompts) longest = std::max<int64_t>(longest, static_cast<int64_t>(p.size()));
  g.max_new = std::max<int64_t>(1, std::min(max_new, model.config().max_seq - longest));
  if (!prompts.empty()) out = nk::lm::generate_causal(model, prompts, g);
  for (auto& o : out)
    if (!o.empty() && o.back() == tok.eos()) o.pop_back();
  return out;
}

}  // namespace shred
