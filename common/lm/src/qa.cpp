// qa.cpp - QA pairs as token sequences, scoring, greedy answers, perplexity.
#include "nk/lm/qa.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "nk/error.hpp"
#include "nk/lm/corpus.hpp"
#include "nk/lm/generate.hpp"
#include "nk/lm/loss.hpp"
#include "nk/lm/text.hpp"
#include "nk/lm/train.hpp"
#include "nk/rng.hpp"

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

Packed pack(const std::vector<const QaSequence*>& seqs) {
  Packed p;
  for (const QaSequence* s : seqs) p.add(s->tokens);
  return p;
}

int64_t longest(const std::vector<QaSequence>& seqs) {
  int64_t n = 2;
  for (const QaSequence& s : seqs) n = std::max(n, s.size());
  return n;
}

double answer_ce(const std::vector<const QaSequence*>& seqs, const TokenBatch& batch, Workspace& ws, int64_t vocab,
                 float scale, bool accumulate) {
  std::vector<int64_t> rows;
  std::vector<int32_t> targets;
  for (size_t i = 0; i < seqs.size(); ++i) {
    const QaSequence& s = *seqs[i];
    const int64_t base = batch.offsets[i];
    for (int64_t t = std::max<int64_t>(1, s.answer_start); t < s.size(); ++t) {
      rows.push_back(base + t - 1);
      targets.push_back(s.tokens[static_cast<size_t>(t)]);
    }
  }
  if (rows.empty()) return 0.0;
  const std::vector<float> w(rows.size(), scale / static_cast<float>(rows.size()));
  Target target;
  target.token = targets.data();
  const double loss = loss_and_grad(Divergence::cross_entropy, ws.logits(), ws.logit_rows(), vocab, target, {rows, w},
                                    nullptr, ws.dlogits(), accumulate);
  return loss / static_cast<double>(scale);
}

void finetune(ParameterStore& weights, const std::vector<QaSequence>& data, const std::vector<int32_t>& general,
              int32_t bos, const FinetuneConfig& c, const std::function<void(int64_t, double)>& on_epoch) {
  if (data.empty()) throw nk::usage_error("finetune: nothing to train on");
  const int64_t n = static_cast<int64_t>(data.size()), per_epoch = (n + c.batch - 1) / c.batch;
  const int64_t steps = c.epochs * per_epoch;
  const bool replay = c.replay_windows > 0 && static_cast<int64_t>(general.size()) > c.replay_length;
  const int64_t span = std::max(longest(data), replay ? c.replay_length + 1 : 0);
  const int64_t rows = std::max(c.batch * longest(data), replay ? c.replay_windows * (c.replay_length + 1) : 0);
  const Schedule schedule{c.lr, 0.1, std::max<int64_t>(1, steps / 20), std::max<int64_t>(steps, 2)};
  AdamWConfig adamw;
  adamw.weight_decay = c.weight_decay;
  Trainer trainer(weights, ParameterMask::all(weights), schedule, adamw, {rows, span, true});
  const int64_t V = weights.config().vocab;
  int64_t step = 0;
  for (int64_t e = 0; e < c.epochs; ++e) {
    std::vector<int64_t> perm(static_cast<size_t>(n));
    std::iota(perm.begin(), perm.end(), 0);
    nk::Rng rng = nk::Rng(c.seed).split(static_cast<uint64_t>(e));
    nk::shuffle(perm, rng);
    double total = 0;
    for (int64_t b = 0; b < per_epoch; ++b, ++step) {
      std::vector<const QaSequence*> seqs;
      for (int64_t i = b * c.batch; i < std::min(n, (b + 1) * c.batch); ++i)
        seqs.push_back(&data[static_cast<size_t>(perm[static_cast<size_t>(i)])]);
      std::vector<QaSequence> windows;
      if (replay) {
        nk::Rng wr = nk::Rng(c.seed).split(0x9e9).split(static_cast<uint64_t>(step));
        for (int64_t k = 0; k < c.replay_windows; ++k) {
          const uint64_t at = wr.below(general.size() - static_cast<size_t>(c.replay_length));
          QaSequence w;
          w.tokens.push_back(bos);
          w.tokens.insert(w.tokens.end(), general.begin() + static_cast<std::ptrdiff_t>(at),
                          general.begin() + static_cast<std::ptrdiff_t>(at + static_cast<uint64_t>(c.replay_length)));
          w.answer_start = 1;
          windows.push_back(std::move(w));
        }
      }
      double qa_loss = 0;
      Packed p;
      const StepStats st = trainer.step(replay ? 2 : 1, [&](int64_t micro, Workspace& ws, TokenBatch& batch) {
        std::vector<const QaSequence*> part = seqs;
        if (micro == 1) {
          part.clear();
          for (const QaSequence& w : windows) part.push_back(&w);
        }
        p = pack(part);
        batch = p.batch();
        trainer.model().forward(batch, ws);
        const double loss = answer_ce(part, batch, ws, V, 1.0f, false);
        if (micro == 0) qa_loss = loss;
        return std::pair<double, int64_t>{loss, p.rows()};
      });
      if (!std::isfinite(st.loss))
        throw nk::Error(nk::Exit::runtime, "finetune: the loss became " + std::to_string(st.loss) + " (lower --lr)");
      total += qa_loss;
    }
    if (on_epoch) on_epoch(e + 1, total / static_cast<double>(per_epoch));
  }
}

std::vector<int32_t> replay_stream(const Tokenizer& tok) {
  std::vector<int32_t> general;
  for (const Document& d : debian_text("fortunes")) {
    if (in_validation(d.name, 0.02)) continue;
    const std::vector<int32_t> t = tok.encode(d.text);
    general.insert(general.end(), t.begin(), t.end());
    general.push_back(tok.eos());
  }
  return general;
}

}  // namespace nk::lm
