// eval.cpp - probabilities, truth ratios, ROUGE-L, losses and Min-K% per set;
// forget quality (KS against a reference), model utility, MIA AUCs,
// privleak, verbatim memorisation and general perplexity.
#include "shred-unlearn/eval.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "nk/error.hpp"
#include "nk/lm/corpus.hpp"
#include "nk/lm/text.hpp"
#include "shred-unlearn/metrics.hpp"
#include "shred-unlearn/qa.hpp"

namespace shred {

namespace {

std::vector<int64_t> spread(const std::vector<int64_t>& rows, int64_t max_rows) {
  const int64_t n = static_cast<int64_t>(rows.size());
  if (max_rows <= 0 || n <= max_rows) return rows;
  std::vector<int64_t> out;
  for (int64_t i = 0; i < max_rows; ++i) out.push_back(rows[static_cast<size_t>(i * n / max_rows)]);
  return out;
}

SetEval evaluate_set(const nk::lm::Model& model, const nk::lm::Tokenizer& tok, const Tofu& tofu, const QaSet& set,
                     const std::string& group, std::vector<int64_t> rows, bool generate) {
  SetEval e;
  e.rows = std::move(rows);
  const int64_t n = static_cast<int64_t>(e.rows.size()), ctx = model.config().max_seq;
  if (n == 0) return e;
  std::vector<Sequence> seqs;
  seqs.reserve(static_cast<size_t>(n * (2 + kPerturbed)));
  for (int64_t r : e.rows) {
    const std::string& q = set.question[static_cast<size_t>(r)];
    seqs.push_back(qa_sequence(tok, q, set.answer[static_cast<size_t>(r)], ctx, tofu.path, group + "/answer", r));
    seqs.push_back(
        qa_sequence(tok, q, set.paraphrased[static_cast<size_t>(r)], ctx, tofu.path, group + "/paraphrased_answer", r));
    for (int64_t j = 0; j < kPerturbed; ++j)
      seqs.push_back(qa_sequence(tok, q, set.perturbed[static_cast<size_t>(r * kPerturbed + j)], ctx, tofu.path,
                                 group + "/perturbed_answer", r));
  }
  const std::vector<std::vector<float>> lp = score(model, seqs);
  const auto mean_lp = [&](size_t i) {
    const Sequence& s = seqs[i];
    return answer_logprob_sum(s, lp[i]) / static_cast<double>(s.answer_tokens());
  };
  for (int64_t i = 0; i < n; ++i) {
    const size_t base = static_cast<size_t>(i * (2 + kPerturbed));
    const double gold = mean_lp(base);
    e.prob.push_back(std::exp(gold));
    e.loss.push_back(-gold);
    std::vector<double> tokens;
    const Sequence& s = seqs[base];
    for (int64_t t = s.answer_start; t < s.size(); ++t) tokens.push_back(lp[base][static_cast<size_t>(t)]);
    e.mink.push_back(min_k_mean(tokens, 0.2));
    e.para_prob.push_back(std::exp(mean_lp(base + 1)));
    double pert = 0;
    for (int64_t j = 0; j < kPerturbed; ++j) {
      const double p = std::exp(mean_lp(base + 2 + static_cast<size_t>(j)));
      e.pert_prob.push_back(p);
      pert += p;
    }
    e.truth_ratio.push_back(pert / static_cast<double>(kPerturbed) / e.para_prob.back());
  }
  if (generate) {
    std::vector<std::vector<int32_t>> prompts;
    int64_t longest = 0;
    for (int64_t i = 0; i < n; ++i) {
      const Sequence& s = seqs[static_cast<size_t>(i * (2 + kPerturbed))];
      prompts.emplace_back(s.tokens.begin(), s.tokens.begin() + s.answer_start);
      longest = std::max(longest, s.answer_tokens());
    }
    const std::vector<std::vector<int32_t>> out = greedy(model, tok, prompts, longest + 8);
    for (int64_t i = 0; i < n; ++i) {
      std::string text = tok.decode(out[static_cast<size_t>(i)]);
      if (!text.empty() && text.front() == ' ') text.erase(0, 1);
      e.rouge_l.push_back(rouge_l_recall(text, set.answer[static_cast<size_t>(e.rows[static_cast<size_t>(i)])]));
      e.prediction.push_back(std::move(text));
    }
  } else {
    e.rouge_l.assign(static_cast<size_t>(n), std::nan(""));
    e.prediction.assign(static_cast<size_t>(n), "");
  }
  return e;
}

double verbatim_memorisation(const nk::lm::Model& model, const nk::lm::Tokenizer& tok, const Tofu& tofu,
                             const std::vector<int64_t>& authors) {
  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::string> golds;
  int64_t longest = 0;
  for (int64_t a : authors) {
    const std::string& bio = tofu.bios[static_cast<size_t>(a)];
    if (bio.empty()) continue;
    const Sequence s = text_sequence(tok, bio, model.config().max_seq);
    const int64_t text_tokens = s.size() - 2;  // BOS ... EOS
    if (text_tokens < 2) continue;
    const int64_t half = 1 + text_tokens / 2;
    prompts.emplace_back(s.tokens.begin(), s.tokens.begin() + half);
    golds.push_back(tok.decode(std::vector<int32_t>(s.tokens.begin() + half, s.tokens.end() - 1)));
    longest = std::max<int64_t>(longest, s.size() - 1 - half);
  }
  if (prompts.empty()) return std::nan("");
  const std::vector<std::vector<int32_t>> out = greedy(model, tok, prompts, longest);
  double sum = 0;
  for (size_t i = 0; i < prompts.size(); ++i) sum += rouge_l_recall(tok.decode(out[i]), golds[i]);
  return sum / static_cast<double>(prompts.size());
}

}  // namespace

void write_columns(nk::h5::Writer& w, const std::string& group, const Columns& columns) {
  for (const auto& [name, v] : columns) {
    const std::string path = group + "/" + name;
    w.allow_nonfinite(path);
    w.write(path, v->data(), {static_cast<int64_t>(v->size())}, "n");
  }
}

std::vector<double> rouge_on_rows(const nk::lm::Model& model, const nk::lm::Tokenizer& tok, const Tofu& tofu,
                                  const QaSet& set, const std::vector<int64_t>& rows) {
  std::vector<std::vector<int32_t>> prompts;
  int64_t longest = 0;
  for (int64_t r : rows) {
    const Sequence s = qa_sequence(tok, set.question[static_cast<size_t>(r)], set.answer[static_cast<size_t>(r)],
                                   model.config().max_seq, tofu.path, "/qa/answer", r);
    prompts.emplace_back(s.tokens.begin(), s.tokens.begin() + s.answer_start);
    longest = std::max(longest, s.answer_tokens());
  }
  const std::vector<std::vector<int32_t>> out = greedy(model, tok, prompts, longest + 8);
  std::vector<double> r;
  for (size_t i = 0; i < rows.size(); ++i)
    r.push_back(rouge_l_recall(tok.decode(out[i]), set.answer[static_cast<size_t>(rows[i])]));
  return r;
}

double SetEval::mean(const std::vector<double>& v) const {
  if (v.empty()) return std::nan("");
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double EvalResult::forget_rouge() const {
  return sets.at("forget").mean(sets.at("forget").rouge_l);
}
double EvalResult::forget_prob() const {
  return sets.at("forget").mean(sets.at("forget").prob);
}
double EvalResult::retain_prob() const {
  return sets.at("retain").mean(sets.at("retain").prob);
}

Reference read_reference(const std::string& path) {
  const nk::h5::File f = nk::h5::File::open(path);
  f.require_schema(kEvalSchema);
  Reference r;
  const nk::h5::Array<double> tr = f.read<double>("/eval/forget/truth_ratio", 1, "n");
  nk::h5::require_finite(path, "/eval/forget/truth_ratio", tr);
  r.forget_truth_ratio = tr.data;
  const auto auc = f.attr_number("/eval", "mia_auc_mink");
  if (!auc) throw nk::input_error(path, "/eval", "has no attribute mia_auc_mink");
  r.auc_mink = *auc;
  r.present = true;
  return r;
}

EvalResult evaluate(const nk::lm::Model& model, const nk::lm::Tokenizer& tok, const Tofu& tofu, const EvalConfig& c,
                    const Reference& ref, const std::vector<std::string>& general) {
  EvalResult r;
  const std::vector<int64_t>& forget = tofu.split(c.split);
  std::vector<int64_t> world(static_cast<size_t>(tofu.world.size()));
  std::iota(world.begin(), world.end(), 0);
  const std::vector<int64_t> holdout =
      tofu.splits.count("holdout") ? tofu.splits.at("holdout") : std::vector<int64_t>{};
  r.sets["forget"] = evaluate_set(model, tok, tofu, tofu.qa, "/qa", forget, c.generate);
  r.sets["retain"] =
      evaluate_set(model, tok, tofu, tofu.qa, "/qa", spread(tofu.retain_rows(c.split), c.max_rows), c.generate);
  r.sets["world"] = evaluate_set(model, tok, tofu, tofu.world, "/world", spread(world, c.max_rows), c.generate);
  r.sets["holdout"] = evaluate_set(model, tok, tofu, tofu.qa, "/qa", spread(holdout, c.max_rows), false);
  const SetEval& f = r.sets["forget"];
  const SetEval& h = r.sets["holdout"];
  if (ref.present) {
    if (ref.forget_truth_ratio.size() != f.truth_ratio.size())
      throw nk::usage_error("eval: the reference has " + std::to_string(ref.forget_truth_ratio.size()) +
                            " forget rows, this split " + std::to_string(f.truth_ratio.size()) +
                            " (evaluate both on the same split)");
    const KsResult ks = ks_2samp_equal(f.truth_ratio, ref.forget_truth_ratio);
    r.forget_quality = ks.pvalue;
    r.forget_ks_d = ks.statistic;
  }
  // Model utility: harmonic mean over retain and world of prob, ROUGE-L and
  // mean max(0, 1 - truth ratio); world's prob normalised over the options.
  const auto truth_score = [](const SetEval& s) {
    double sum = 0;
    for (double x : s.truth_ratio) sum += std::max(0.0, 1.0 - x);
    return s.truth_ratio.empty() ? 0.0 : sum / static_cast<double>(s.truth_ratio.size());
  };
  const SetEval& ret = r.sets["retain"];
  const SetEval& w = r.sets["world"];
  std::vector<double> parts{ret.mean(ret.prob), truth_score(ret)};
  if (c.generate) parts.push_back(ret.mean(ret.rouge_l));
  if (!w.rows.empty()) {
    double norm = 0;
    for (size_t i = 0; i < w.prob.size(); ++i) {
      double denom = w.prob[i];
      for (int64_t j = 0; j < kPerturbed; ++j) denom += w.pert_prob[i * kPerturbed + static_cast<size_t>(j)];
      norm += w.prob[i] / denom;
    }
    parts.push_back(norm / static_cast<double>(w.prob.size()));
    parts.push_back(truth_score(w));
    if (c.generate) parts.push_back(w.mean(w.rouge_l));
  }
  r.model_utility = harmonic_mean(parts);
  if (!h.rows.empty()) {
    std::vector<double> mloss, hloss;
    for (double x : f.loss) mloss.push_back(-x);
    for (double x : h.loss) hloss.push_back(-x);
    r.mia_auc_loss = auc(mloss, hloss);
    r.mia_auc_mink = auc(f.mink, h.mink);
    if (ref.present && ref.auc_mink > 0) r.privleak = (r.mia_auc_mink - ref.auc_mink) / ref.auc_mink;
  }
  if (c.generate) r.verbmem = verbatim_memorisation(model, tok, tofu, tofu.authors_of(forget));
  if (!general.empty()) r.ppl_general = nk::lm::perplexity(model, tok, general);
  return r;
}

void write_eval(nk::h5::Writer& w, const EvalResult& r) {
  for (const auto& [name, s] : r.sets) {
    const std::string g = "/eval/" + name;
    const int64_t n = static_cast<int64_t>(s.rows.size());
    w.write(g + "/rows", s.rows.data(), {n}, "n");
    w.write(g + "/prob", s.prob.data(), {n}, "n");
    w.write(g + "/para_prob", s.para_prob.data(), {n}, "n");
    w.write(g + "/truth_ratio", s.truth_ratio.data(), {n}, "n");
    w.allow_nonfinite(g + "/rouge_l");
    w.write(g + "/rouge_l", s.rouge_l.data(), {n}, "n");
    w.write(g + "/loss", s.loss.data(), {n}, "n");
    w.write(g + "/mink", s.mink.data(), {n}, "n");
    w.write(g + "/pert_prob", s.pert_prob.data(), {n, kPerturbed}, "n,5");
    w.write_strings(g + "/prediction", s.prediction, "n");
    w.attr(g, "prob_mean", s.mean(s.prob));
    w.attr(g, "rouge_l_mean", s.mean(s.rouge_l));
    w.attr(g, "truth_ratio_mean", s.mean(s.truth_ratio));
  }
  w.attr("/eval", "forget_quality", r.forget_quality);
  w.attr("/eval", "forget_ks_d", r.forget_ks_d);
  w.attr("/eval", "model_utility", r.model_utility);
  w.attr("/eval", "mia_auc_loss", r.mia_auc_loss);
  w.attr("/eval", "mia_auc_mink", r.mia_auc_mink);
  w.attr("/eval", "privleak", r.privleak);
  w.attr("/eval", "verbmem", r.verbmem);
  w.attr("/eval", "ppl_general", r.ppl_general);
}

}  // namespace shred
