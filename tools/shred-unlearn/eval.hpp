// eval.hpp - TOFU's and MUSE's measures of an unlearned model over the
// forget, retain, world and holdout sets, shared by the eval verb and the
// curves that run, relearn and sequential record.
#pragma once
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "nk/h5.hpp"
#include "nk/lm/model.hpp"
#include "nk/lm/qa.hpp"
#include "nk/lm/tokenizer.hpp"
#include "shred-unlearn/tofu.hpp"

namespace shred {

inline constexpr const char* kEvalSchema = "shred-unlearn.eval/1";

struct EvalConfig {
  std::string split = "forget05";
  int64_t max_rows = 400;  ///< per set, rows evenly spaced over it (0: all); forget is always whole
  int64_t ppl_docs = 64;   ///< held-out fortunes for ppl_general (0: skip)
  std::string ppl_text;    ///< a text file instead (paragraphs as documents)
  bool generate = true;    ///< greedy answers, ROUGE-L and verbmem (curves may skip them)
};

struct SetEval {
  std::vector<int64_t> rows;  ///< rows of /qa or /world
  std::vector<double> prob, para_prob, truth_ratio, rouge_l, loss, mink;
  std::vector<double> pert_prob;  ///< [n, 5]
  std::vector<std::string> prediction;
  double mean(const std::vector<double>& v) const;
};

/// What a reference evaluation (the retain model's, on the same split)
/// gives: its forget truth ratios and its Min-K% AUC.
struct Reference {
  std::vector<double> forget_truth_ratio;
  double auc_mink = std::nan("");
  bool present = false;
};
/// Exit 3 naming the file for a foreign schema or a missing dataset.
Reference read_reference(const std::string& path);

struct EvalResult {
  std::map<std::string, SetEval> sets;  ///< forget, retain, world, holdout
  double forget_quality = std::nan(""), forget_ks_d = std::nan(""), model_utility = 0;
  double mia_auc_loss = std::nan(""), mia_auc_mink = std::nan(""), privleak = std::nan("");
  double verbmem = std::nan(""), ppl_general = std::nan("");
  double forget_rouge() const;  ///< mean ROUGE-L on forget
  double forget_prob() const;   ///< mean prob on forget
  double retain_prob() const;
};

/// Held-out text for ppl_general (nk-lm's shared QA code).
using nk::lm::general_text;

EvalResult evaluate(const nk::lm::Model& model, const nk::lm::Tokenizer& tok, const Tofu& tofu,
                    const EvalConfig& config, const Reference& reference, const std::vector<std::string>& general);

/// Columns of one length under a group ([n] each, NaN allowed): curves and tables.
using Columns = std::vector<std::pair<const char*, const std::vector<double>*>>;
void write_columns(nk::h5::Writer& w, const std::string& group, const Columns& columns);

/// ROUGE-L recall of the greedy answers to rows of a QA set.
std::vector<double> rouge_on_rows(const nk::lm::Model& model, const nk::lm::Tokenizer& tok, const Tofu& tofu,
                                  const QaSet& set, const std::vector<int64_t>& rows);

/// /eval/SET/{rows, prob, para_prob, truth_ratio, rouge_l, loss, mink,
/// pert_prob, prediction} and the attributes on /eval.
void write_eval(nk::h5::Writer& w, const EvalResult& r);

}  // namespace shred
