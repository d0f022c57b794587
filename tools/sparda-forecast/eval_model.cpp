// eval_model.cpp - sparda-forecast eval --model: each selection method
// inside a model. Every layer's attention reads only the blocks the method
// picks, on the fly in the same forward (the Forecast from the previous
// layer's attention input, InfiniGen from it through the layer's own query
// projection on its skewed channels), through nk::lm's block-sparse kernel;
// dense reads every key. What follows is the model's perplexity on held-out
// text and its accuracy on the needle task.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/lm/checkpoint.hpp"
#include "nk/lm/corpus.hpp"
#include "nk/lm/loss.hpp"
#include "nk/lm/model.hpp"
#include "nk/lm/sparse_attention.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "sparda-forecast/forecast.hpp"
#include "sparda-forecast/needle.hpp"
#include "sparda-forecast/sparda.hpp"

namespace sparda {

namespace {

enum class Method { dense, selector, forecast, infinigen };
const char* method_name(Method m) {
  return m == Method::dense      ? "dense"
         : m == Method::selector ? "selector"
         : m == Method::forecast ? "forecast"
                                 : "infinigen";
}

/// Whole sequences, no cache (each forward's segments start at position 0):
/// the method's blocks per layer, then sparse attention over them.
class SelectingAttention : public nk::lm::AttentionBackend {
 public:
  SelectingAttention(const nk::lm::Config& c, const nk::lm::BlockSelectorConfig& sel, Method method,
                     const Forecast* forecast, const std::vector<Speculator>* speculators)
      : c_(c), sel_(sel), method_(method), forecast_(forecast), speculators_(speculators) {}
  int64_t length(int32_t) const override { return 0; }
  void attend(const nk::lm::AttentionCall& a, float* out) override {
    const int64_t n = a.batch->rows(), S = a.batch->segments(), Hq = a.heads, Hkv = a.kv_heads, d = a.head_dim;
    const int64_t D = c_.d_model, K = sel_.width(), l = a.layer, kvs = Hkv * d;
    std::vector<int32_t> sel(static_cast<size_t>(n * Hkv * K));
    const int64_t* offsets = a.batch->offsets.data();
    if (method_ == Method::selector) {
      nk::lm::select_batch(sel_, a.q, a.k, offsets, S, Hq, Hkv, d, sel.data());
    } else {
      const float* h = l == 0 ? a.x : previous_.data();  // the source layer's attention input
      const Shape shape{Hq, Hkv, d, D, c_.rope_theta};
      const Scorer by{method_ == Method::forecast ? &forecast_->wf[static_cast<size_t>(l)] : nullptr,
                      method_ == Method::infinigen ? &(*speculators_)[static_cast<size_t>(l)] : nullptr};
      for (int64_t s = 0; s < S; ++s) {
        const int64_t begin = offsets[s], len = offsets[s + 1] - begin, nb = len / sel_.block;
        std::vector<float> pooled(static_cast<size_t>(std::max<int64_t>(Hkv * nb * d, 1)));
        nk::lm::pool_keys_strided(a.k + begin * kvs, d, kvs, Hkv, len, d, sel_.block, pooled.data());
        const std::vector<int32_t> r =
            select_rows(shape, sel_, by, h + begin * D, nullptr, pooled.data(), len, nb, 0, len);
        for (int64_t g = 0; g < Hkv; ++g)
          for (int64_t t = 0; t < len; ++t)
            std::copy_n(r.data() + (g * len + t) * K, K, sel.data() + ((begin + t) * Hkv + g) * K);
      }
    }
    lse_.resize(static_cast<size_t>(n * Hq));
    nk::lm::sparse_attention_forward(sel_, sel.data(), a.q, a.k, a.v, offsets, S, Hq, Hkv, d, out, lse_.data());
    previous_.assign(a.x, a.x + n * D);
  }

 private:
  nk::lm::Config c_;
  nk::lm::BlockSelectorConfig sel_;
  Method method_;
  const Forecast* forecast_;
  const std::vector<Speculator>* speculators_;
  std::vector<float> previous_, lse_;
};

/// InfiniGen's calibration: per layer and KV head, the Gram matrix of the
/// group's post-RoPE queries over a forward.
class GramObserver : public nk::lm::Observer {
 public:
  GramObserver(const nk::lm::Config& c)
      : c_(c),
        grams_(static_cast<size_t>(c.n_layers),
               std::vector<Eigen::MatrixXd>(static_cast<size_t>(c.n_kv_heads),
                                            Eigen::MatrixXd::Zero(c.head_dim, c.head_dim))) {}
  void qkv(const nk::lm::Site& site, const float* q, const float*, const float*) override {
    const int64_t n = site.batch->rows(), Hq = c_.n_heads, d = c_.head_dim, G = Hq / c_.n_kv_heads;
    for (int64_t h = 0; h < Hq; ++h) {
      const Eigen::Map<const MatrixF, 0, Eigen::OuterStride<>> Q(q + h * d, n, d, Eigen::OuterStride<>(Hq * d));
      grams_[static_cast<size_t>(site.layer)][static_cast<size_t>(h / G)].noalias() +=
          Q.cast<double>().transpose() * Q.cast<double>();
    }
  }
  const std::vector<Eigen::MatrixXd>& grams(int64_t layer) const { return grams_[static_cast<size_t>(layer)]; }

 private:
  nk::lm::Config c_;
  std::vector<std::vector<Eigen::MatrixXd>> grams_;
};

struct NeedleItem {
  std::vector<int32_t> tokens;               ///< BOS + the document
  int64_t answer_begin = 0, answer_end = 0;  ///< token indices of the answer
};

/// Evaluation needle documents that fit the context: one fact, asked at the end.
std::vector<NeedleItem> needle_items(const nk::lm::Tokenizer& tok, int64_t count, int64_t context, uint64_t seed) {
  std::vector<NeedleItem> items;
  if (count == 0) return items;
  const NeedleSource source = NeedleSource::load();
  for (int64_t i = 0; i < count; ++i) {
    double chars = 2.0 * static_cast<double>(context);
    for (int attempt = 0;; ++attempt) {
      const NeedleDoc doc = needle_doc(source, true, static_cast<int64_t>(chars), 1, seed, i);
      std::vector<int32_t> ids;
      std::vector<int64_t> begin;
      tok.encode_with_offsets(doc.text, ids, begin);
      const int64_t n = static_cast<int64_t>(ids.size()) + 1;
      if (n <= context) {
        NeedleItem item;
        item.tokens.push_back(tok.bos());
        item.tokens.insert(item.tokens.end(), ids.begin(), ids.end());
        const auto [ab, ae] = doc.answers.back();
        item.answer_begin = -1;
        for (size_t j = 0; j < ids.size(); ++j) {
          const int64_t b = begin[j], e = j + 1 < ids.size() ? begin[j + 1] : static_cast<int64_t>(doc.text.size());
          if (b < ae && e > ab) {
            if (item.answer_begin < 0) item.answer_begin = static_cast<int64_t>(j) + 1;
            item.answer_end = static_cast<int64_t>(j) + 2;
          }
        }
        items.push_back(std::move(item));
        break;
      }
      if (attempt == 30)
        throw nk::usage_error("needle: no document of this seed fits " + std::to_string(context) +
                              " tokens (raise --needle-tokens)");
      chars *= std::min(0.9, 0.97 * static_cast<double>(context - 8) / static_cast<double>(n));
    }
  }
  return items;
}

}  // namespace

void eval_model(const EvalOptions& o, const nk::RunEnv&) {
  if (o.forecast.empty() && !Forecast::embedded(o.model))
    throw nk::usage_error("eval --model needs --forecast FILE (sparda-forecast train on a capture of the model), or a model "
                          "written by train --model");
  if (o.corpus.empty() && o.needles == 0)
    throw nk::usage_error("eval --model needs --corpus (perplexity) or --needles > 0");
  const nk::lm::Checkpoint ck = nk::lm::load_checkpoint(o.model);
  const nk::lm::Config& c = ck.weights.config();
  if (c.mla() || c.mode != nk::lm::Mode::causal)
    throw nk::usage_error("eval: " + o.model + " is not a causal grouped-query model");
  if (!ck.tokenizer && o.needles > 0) throw nk::usage_error("eval: the needle task needs a model with a tokenizer");
  // A sparse-gqa model selects as it was trained to, unless the command line says otherwise.
  const nk::lm::BlockSelectorConfig sel = c.sparse && !o.selector_given ? c.selector : o.selector;
  const Forecast fc =
      o.forecast.empty()
          ? Forecast::read_embedded(o.model, c.n_layers, c.n_kv_heads, c.head_dim, c.d_model, c.rope_theta)
          : Forecast::read_for(o.forecast, c.n_layers, c.n_kv_heads, c.head_dim, c.d_model, c.rope_theta);
  nk::h5::Writer out(o.output, kEvalSchema, o.no_clobber);
  // The model as it is, and a dense copy of its weights.
  nk::lm::Config dense_c = c;
  dense_c.sparse = false;
  nk::lm::ParameterStore dense_w(dense_c);
  std::copy_n(ck.weights.data(), dense_w.size(), dense_w.data());
  const nk::lm::Model model(ck.weights), dense(dense_w);
  const int64_t T = o.window > 0 ? std::min(o.window, c.max_seq) : c.max_seq, V = c.vocab;
  if (T < std::max<int64_t>(2, sel.block))
    throw nk::usage_error("eval: the window must hold at least one --block (and 2 tokens)");

  // Held-out text: consecutive windows of the validation stream; the train split calibrates InfiniGen.
  std::unique_ptr<nk::lm::Corpus> corpus;
  std::vector<int32_t> valid, calib;
  int64_t windows = 0;
  if (!o.corpus.empty()) {
    corpus = std::make_unique<nk::lm::Corpus>(nk::lm::Corpus::open(o.corpus));
    if (ck.tokenizer && corpus->tokenizer().fingerprint() != ck.tokenizer->fingerprint())
      throw nk::usage_error(
          "eval: the corpus's tokenizer is not the model's (cut it with nk-lm corpus --tokenizer MODEL)");
    valid = corpus->stream(nk::lm::Split::validation);
    windows = std::min<int64_t>(o.windows, static_cast<int64_t>(valid.size()) / T);
    if (windows < 1)
      throw nk::input_error(o.corpus, "/tokens",
                            "its validation split holds no window of " + std::to_string(T) + " tokens");
    calib = corpus->stream(nk::lm::Split::train);
    calib.resize(static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(calib.size()), T)));
  }
  const std::vector<NeedleItem> needles =
      needle_items(ck.tokenizer ? *ck.tokenizer : corpus->tokenizer(), o.needles,
                   o.needle_tokens > 0 ? std::min(o.needle_tokens, c.max_seq) : c.max_seq, o.needle_seed);
  if (calib.size() < static_cast<size_t>(sel.block)) {
    if (needles.empty()) throw nk::usage_error("eval: nothing to calibrate InfiniGen on");
    calib = needles.front().tokens;  // without a corpus: the first needle document
  }

  // InfiniGen: each layer's query projection and the skewing basis from a calibration forward.
  std::vector<Speculator> speculators;
  {
    GramObserver grams(c);
    nk::lm::Workspace ws(c, {static_cast<int64_t>(calib.size()), static_cast<int64_t>(calib.size()), false});
    const std::vector<int64_t> off{0, static_cast<int64_t>(calib.size())};
    nk::lm::ForwardOptions fo;
    fo.observer = &grams;
    model.forward({calib, off, {}}, ws, fo);
    for (int64_t m = 0; m < c.n_layers; ++m) {
      const float* w = ck.weights.data() + ck.weights.info(nk::lm::layer_tensor(m, "self_attn.q_proj.weight")).offset;
      const Matrix wq = Eigen::Map<const MatrixF>(w, c.n_heads * c.head_dim, c.d_model).transpose().cast<double>();
      speculators.push_back(make_speculator(wq, grams.grams(m), o.rank));
    }
  }

  const std::vector<Method> methods{Method::dense, Method::selector, Method::forecast, Method::infinigen};
  const int64_t M = static_cast<int64_t>(methods.size()), N = static_cast<int64_t>(needles.size());
  std::vector<double> nll(static_cast<size_t>(M), 0.0), ppl(static_cast<size_t>(M), std::nan("")),
      accuracy(static_cast<size_t>(M), std::nan("")), answer_lp(static_cast<size_t>(M), std::nan(""));
  std::vector<int8_t> correct(static_cast<size_t>(M * N), 0);
  int64_t longest = T;
  for (const NeedleItem& it : needles) longest = std::max<int64_t>(longest, static_cast<int64_t>(it.tokens.size()));
  nk::lm::Workspace ws(c, {longest, longest, false});
  nk::Progress progress("eval", M * (windows + N));
  // One forward of a sequence by a method: the logits of every position.
  const auto run = [&](Method m, const std::vector<int32_t>& tokens) {
    const std::vector<int64_t> off{0, static_cast<int64_t>(tokens.size())};
    if (m == Method::dense) {
      dense.forward({tokens, off, {}}, ws);
      return;
    }
    SelectingAttention backend(c, sel, m, &fc, &speculators);
    nk::lm::ForwardOptions fo;
    fo.attention = &backend;
    const std::vector<int32_t> slots{0};
    model.forward({tokens, off, {}, slots}, ws, fo);
  };
  for (int64_t mi = 0; mi < M; ++mi) {
    const Method m = methods[static_cast<size_t>(mi)];
    double total = 0;
    for (int64_t w = 0; w < windows; ++w) {
      const std::vector<int32_t> x(valid.begin() + w * T, valid.begin() + w * T + T);
      run(m, x);
      // nk-lm score's arithmetic: log p(token t | < t) for t = 1..T-1 (NaN at 0).
      const std::vector<int64_t> off{0, T};
      std::vector<float> lp(static_cast<size_t>(T));
      nk::lm::next_token_logprob(ws.logits(), V, {x, off, {}}, lp.data());
      for (int64_t t = 1; t < T; ++t) total -= lp[static_cast<size_t>(t)];
      progress.update(mi * (windows + N) + w + 1);
    }
    if (windows > 0) {
      nll[static_cast<size_t>(mi)] = total / static_cast<double>(windows * (T - 1));
      ppl[static_cast<size_t>(mi)] = std::exp(nll[static_cast<size_t>(mi)]);
    }
    double hits = 0, lp = 0;
    for (int64_t i = 0; i < N; ++i) {
      const NeedleItem& it = needles[static_cast<size_t>(i)];
      run(m, it.tokens);
      const int64_t n = static_cast<int64_t>(it.tokens.size());
      const std::vector<int64_t> off{0, n};
      std::vector<float> tlp(static_cast<size_t>(n));
      nk::lm::next_token_logprob(ws.logits(), V, {it.tokens, off, {}}, tlp.data());
      bool ok = true;
      for (int64_t t = it.answer_begin; t < it.answer_end; ++t) {
        int32_t best = 0;
        float value = 0;
        nk::lm::top_k(ws.logits() + (t - 1) * V, 1, V, 1, &best, &value);  // ties to the lower id, as score --top-k
        ok = ok && best == it.tokens[static_cast<size_t>(t)];
        lp += tlp[static_cast<size_t>(t)] / static_cast<double>(it.answer_end - it.answer_begin);
      }
      correct[static_cast<size_t>(mi * N + i)] = ok ? 1 : 0;
      hits += ok ? 1 : 0;
      progress.update(mi * (windows + N) + windows + i + 1);
    }
    if (N > 0)
      accuracy[static_cast<size_t>(mi)] = hits / static_cast<double>(N),
      answer_lp[static_cast<size_t>(mi)] = lp / static_cast<double>(N);
  }
  progress.finish();

  std::vector<std::string> names;
  for (Method m : methods) names.push_back(method_name(m));
  out.write_strings("/model/methods", names, "M");
  for (const char* ds : {"/model/perplexity", "/model/nll", "/model/needle_accuracy", "/model/needle_answer_logprob"})
    out.allow_nonfinite(ds);
  out.write("/model/perplexity", ppl.data(), {M}, "M");
  out.write("/model/nll", nll.data(), {M}, "M");
  out.write("/model/needle_accuracy", accuracy.data(), {M}, "M");
  out.write("/model/needle_answer_logprob", answer_lp.data(), {M}, "M");
  if (N > 0) {
    out.write("/model/needle_correct", correct.data(), {M, N}, "M,N");
    std::vector<int32_t> tokens(static_cast<size_t>(N * longest), -1);
    std::vector<int64_t> answer(static_cast<size_t>(N * 2));
    for (int64_t i = 0; i < N; ++i) {
      const NeedleItem& it = needles[static_cast<size_t>(i)];
      std::copy(it.tokens.begin(), it.tokens.end(), tokens.begin() + i * longest);
      answer[static_cast<size_t>(2 * i)] = it.answer_begin, answer[static_cast<size_t>(2 * i + 1)] = it.answer_end;
    }
    out.write("/needle/tokens", tokens.data(), {N, longest}, "N,T");
    out.write("/needle/answer", answer.data(), {N, 2}, "N,begin:end");
  }
  out.attr("/", "model", o.model);
  out.attr("/", "window", T);
  out.attr("/", "windows", windows);
  out.attr("/", "needles", N);
  out.attr("/", "rank", std::min(o.rank, c.head_dim));
  write_selector_attrs(out, sel);
  out.commit();
  if (o.output != "-") {
    std::cout << "method\tperplexity\tneedle_accuracy\tanswer_logprob\n";
    for (int64_t mi = 0; mi < M; ++mi) {
      char line[160];
      std::snprintf(line, sizeof line, "%s\t%.4f\t%.4f\t%.4f\n", names[static_cast<size_t>(mi)].c_str(),
                    ppl[static_cast<size_t>(mi)], accuracy[static_cast<size_t>(mi)],
                    answer_lp[static_cast<size_t>(mi)]);
      std::cout << line;
    }
  }
}

}  // namespace sparda
