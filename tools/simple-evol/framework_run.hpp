// framework_run.hpp - what every framework shares: the prompt parts and a
// run that asks the model, scores each reply and keeps to the budget.
#pragma once
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "nk/rng.hpp"
#include "simple-evol/frameworks.hpp"

namespace sevol::detail {

std::string fmt(double v);
/// What a prompt calls a candidate's score: its gap when references exist.
double shown_score(const Candidate& c);
/// Runtime as a class, so that prompts do not depend on the clock's noise.
std::string runtime_class(double seconds);
std::string last_line(const std::string& text);
/// "### Candidate k (score ...)", description and code (SimpleEvol's history).
std::string render_candidate(const Candidate& c, int64_t index, bool with_gap_word);
/// "## Task" and "## Interface" of a problem.
std::string header(Problem p);
/// The problem's function name (select_next_node, heuristics, get_matrix_and_jobs).
std::string function_name(Problem p);
/// The interface's signature line: what the model must implement.
std::string signature_only(Problem p);
/// An index drawn with probability proportional to the weights.
size_t draw(const std::vector<double>& weights, nk::Rng& rng);
/// The code without its module docstring lines: a program as shown to the model.
std::string fenced(const std::string& code);

extern const char* const kSystem;
extern const char* const kAnswerFormat;

class Run {
 public:
  Run(const InstanceSet& train, LlmClient& llm, const EvolveConfig& config, std::function<void(int64_t)> progress);
  bool done() const { return static_cast<int64_t>(out_.size()) >= config_.budget; }
  /// Asks, scores the reply on the training set and logs it as a candidate.
  const Candidate& sample(const std::string& operation, const std::vector<Message>& messages, double temperature = NAN);
  /// Asks without evaluating (reflections, compressions, replies a
  /// framework inspects before it scores them).
  std::string ask(const std::string& operation, const std::vector<Message>& messages);
  /// Scores code on the training set and logs it as a candidate of 'operation'.
  const Candidate& score(const std::string& operation, const std::string& code, const std::string& description);
  /// The seed heuristic scored (not a candidate: outside the budget).
  Candidate score_seed() const;
  std::vector<Candidate>& out() { return out_; }
  const InstanceSet& train() const { return train_; }
  Problem problem() const { return train_.problem; }
  bool gaps() const { return gaps_; }
  const EvolveConfig& config() const { return config_; }
  nk::Rng& rng() { return rng_; }

 private:
  const InstanceSet& train_;
  LlmClient& llm_;
  const EvolveConfig& config_;
  std::function<void(int64_t)> progress_;
  std::vector<Candidate> out_;
  bool gaps_ = false;
  nk::Rng rng_;
};

/// Population frameworks (population_frameworks.cpp).
void run_eoh(Run& run);
void run_reevo(Run& run);
void run_funsearch(Run& run);
/// MCTS-AHD (mcts_ahd.cpp).
void run_mcts_ahd(Run& run);

}  // namespace sevol::detail
