// qa.cpp - QA pairs as token sequences, scoring, greedy answers, perplexity.
#include "nk/lm/qa.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "nk/error.hpp"
#include "nk/lm/corpus.hpp"
#include "nk/lm/generate.hpp"
#include "nk/lm/loss.hpp"
#include "nk/lm/text.hpp"

namespace nk::lm {

CausalModel load_causal_model(const std::string& path) {
  const Config c = load_config(path);
  if (c.mode != Mode::causal)
    throw nk::input_error(path, "/",
                          "is a masked-diffusion checkpoint; this needs a causal model (nk-lm train --mode causal)");
  CausalModel m{path, load_checkpoint(path)};
  if (!m.checkpoint.tokenizer) throw nk::input_error(path, "/tokenizer", "is missing: the QA text cannot be tokenised");
  return m;
}

std::vector<int32_t> prompt_tokens(const Tokenizer& tok, const std::string& question, const std::string& context) {
  std::vector<int32_t> t{tok.bos()};
  if (!context.empty()) {
    const std::vector<int32_t> c = tok.encode(context + "\n");
    t.insert(t.end(), c.begin(), c.end());
  }
  const std::vector<int32_t> q = tok.encode("Question: " + question + "\nAnswer:");
  t.insert(t.end(), q.begin(), q.end());
  return t;
}

QaSequence qa_sequence(const Tokenizer& tok, const std::string& question, const std::string& answer, int64_t context,
                       const std::string& file, const std::string& dataset, int64_t row, const std::string& document) {
  QaSequence s;
  s.tokens = prompt_tokens(tok, question, document);
  s.answer_start = s.size();
  const std::vector<int32_t> a = tok.encode(" " + answer);
  s.tokens.insert(s.tokens.end(), a.begin(), a.end());
  s.tokens.push_back(tok.eos());
  if (s.size() > context)
    throw nk::input_error(file, dataset,
                          "row " + std::to_string(row) + ": " + (document.empty() ? "" : "document, ") +
                              "question and answer take " + std::to_string(s.size()) +
                              " tokens, over the model's context of " + std::to_string(context));
  return s;
}

QaSequence text_sequence(const Tokenizer& tok, const std::string& text, int64_t context) {
  QaSequence s;
  s.tokens.push_back(tok.bos());
  const std::vector<int32_t> t = tok.encode(text);
  s.tokens.insert(s.tokens.end(), t.begin(), t.end());
  s.tokens.push_back(tok.eos());
  if (s.size() > context) s.tokens.resize(static_cast<size_t>(context));
  s.answer_start = 1;
  return s;
}

std::vector<std::vector<float>> score(const Model& model, const std::vector<QaSequence>& sequences,
                                      int64_t batch_tokens) {
  std::vector<std::vector<float>> out(sequences.size());
  if (sequences.empty()) return out;
  int64_t longest = 0;
  for (const QaSequence& s : sequences) longest = std::max(longest, s.size());
  batch_tokens = std::max(batch_tokens, longest);
  Workspace ws(model.config(), {batch_tokens, longest, false});
  std::vector<float> lp;
  for (size_t first = 0; first < sequences.size();) {
    Packed p;
    size_t last = first;
    while (last < sequences.size() && p.rows() + sequences[last].size() <= batch_tokens)
      p.add(sequences[last++].tokens);
    const TokenBatch batch = p.batch();
    model.forward(batch, ws);
    lp.resize(static_cast<size_t>(p.rows()));
    next_token_logprob(ws.logits(), model.config().vocab, batch, lp.data());
    for (size_t i = first; i < last; ++i) {
      const int64_t b = p.offsets[i - first];
      out[i].assign(lp.begin() + b, lp.begin() + b + sequences[i].size());
    }
    first = last;
  }
  return out;
}

double answer_logprob_sum(const QaSequence& s, const std::vector<float>& logprob) {
  double sum = 0;
  for (int64_t t = s.answer_start; t < s.size(); ++t) sum += logprob[static_cast<size_t>(t)];
  return sum;
}

std::vector<std::vector<int32_t>> greedy(const Model& model, const Tokenizer& tok,
                                         const std::vector<std::vector<int32_t>>& prompts, int64_t max_new) {
  GenerateOptions g;
  g.sampler.greedy = true;
  g.eos = tok.eos();
  g.batch = 16;
  std::vector<std::vector<int32_t>> out(prompts.size());
  // generate_causal refuses a prompt whose length + max_new passes the context: cap for the longest.
  int64_t longest = 0;
  for (const auto& p : prompts) longest = std::max<int64_t>(longest, static_cast<int64_t>(p.size()));
  g.max_new = std::max<int64_t>(1, std::min(max_new, model.config().max_seq - longest));
  if (!prompts.empty()) out = generate_causal(model, prompts, g);
  for (auto& o : out)
    if (!o.empty() && o.back() == tok.eos()) o.pop_back();
  return out;
}

std::vector<std::string> general_text(const std::string& text, int64_t docs) {
  std::vector<std::string> out;
  if (!text.empty()) {
    for (const Document& d : text_file(text, true)) out.push_back(d.text);
  } else if (docs > 0) {
    for (const Document& d : debian_text("fortunes")) {
      if (!in_validation(d.name, 0.02)) continue;
      out.push_back(d.text);
      if (static_cast<int64_t>(out.size()) >= docs) break;
    }
  }
  if (docs > 0 && static_cast<int64_t>(out.size()) > docs) out.resize(static_cast<size_t>(docs));
  return out;
}

double perplexity(const Model& model, const Tokenizer& tok, const std::vector<std::string>& docs) {
  std::vector<int32_t> stream;
  for (const std::string& d : docs) {
    const std::vector<int32_t> t = tok.encode(d);
    stream.insert(stream.end(), t.begin(), t.end());
    stream.push_back(tok.eos());
  }
  const int64_t width = model.config().max_seq - 1;
  std::vector<QaSequence> seqs;
  for (size_t at = 0; at < stream.size(); at += static_cast<size_t>(width)) {
    QaSequence s;
    s.tokens.push_back(tok.bos());
    s.tokens.insert(
        s.tokens.end(), stream.begin() + static_cast<std::ptrdiff_t>(at),
        stream.begin() + static_cast<std::ptrdiff_t>(std::min(stream.size(), at + static_cast<size_t>(width))));
    s.answer_start = 1;
    seqs.push_back(std::move(s));
  }
  const std::vector<std::vector<float>> lp = score(model, seqs);
  double nll = 0;
  int64_t count = 0;
  for (size_t i = 0; i < seqs.size(); ++i)
    for (int64_t t = 1; t < seqs[i].size(); ++t) nll -= lp[i][static_cast<size_t>(t)], ++count;
  return count ? std::exp(nll / static_cast<double>(count)) : std::nan("");
}

}  // namespace nk::lm
