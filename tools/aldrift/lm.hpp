// lm.hpp - the lm verb (experiment C): ALDRIFT over the strings of a causal
// language model. The prior L is an nk-lm checkpoint; stage i draws from the
// current fine-tuned model q, corrects the draws towards
// pi_{T_i}(s) ~ L(s) exp(-T_i d(s)) by independence MH on whole strings, and
// fine-tunes q on the corrected samples (cross-entropy). Beside it: SIR and
// elite fine-tuning (CEM) at the same number of cost calls, and the
// reference point (E_pi[d], KL(pi_T || L)) by importance sampling.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nk/run_env.hpp"

namespace ald {

inline constexpr const char* kLmSchema = "aldrift.lm/1";

struct LmOptions {
  std::string prior, output, save_model;
  bool no_clobber = false;
  std::string cost = "letter:e";
  std::string wordnet_root;  ///< default /usr/share/wordnet
  std::string prompt;        ///< text after BOS that every string continues (default: none)
  double T = 20.0;
  int stages = 5;
  int64_t chains = 128;
  int steps = 4;
  int burn_in = 1;
  int64_t length = 32;
  std::vector<std::string> methods{"aldrift", "sir", "cem"};
  int fit_epochs = 2;
  double fit_lr = 3e-4;
  int64_t fit_batch = 32;
  std::string learner = "bias";  ///< bias (a logit-bias adapter over the frozen prior, convex MLE) or full (every weight, nk-lm trainer)
  double bias_l2 = 10.0;         ///< bias: precision of the N(0, 1/bias_l2) prior on each logit bias (MAP fit)
  bool bias_l2_cv = false;       ///< bias: choose the precision per fit by cross-validation over bias_l2_grid
  std::vector<double> bias_l2_grid{1, 3, 10, 30, 100};
  int bias_folds = 4;
  double elite = 0.2;            ///< cem: share of each population fine-tuned on
  int64_t kl_samples = 1000;     ///< draws of each fitted q for KL(q || L) and its mean cost
  int64_t reference = 100000;    ///< prior draws of the importance-sampling reference (0: none)
  int64_t batch = 64;            ///< sequences per forward pass
};

void lm(const LmOptions& o, const nk::RunEnv& env);

/// Self-normalised importance sampling of pi_T ~ L exp(-T d) from d of
/// prior draws: E_pi[d], KL(pi_T || L) = -T E_pi[d] - log Z, log Z =
/// log E_L[exp(-T d)], with delta-method standard errors, and Kish's
/// effective sample size.
struct IsEstimate {
  double mean_cost = 0, mean_cost_se = 0, kl = 0, kl_se = 0, log_z = 0, ess = 0;
};
IsEstimate importance_estimate(const std::vector<double>& d, double T);

}  // namespace ald
