// frameworks.hpp - AHD frameworks: what the LLM sees next. SimpleEvol (one
// trajectory, its scored history compressed into notes every few candidates,
// the best code kept), EoH, FunSearch, ReEvo, MCTS-AHD and random sampling; all
// through one LLM client and one evaluator.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "simple-evol/evaluator.hpp"
#include "simple-evol/llm.hpp"
#include "simple-evol/problem.hpp"

namespace sevol {

struct Candidate {
  std::string code, description, operation;
  double score = NAN;  ///< mean training objective; NaN unless every instance is ok
  double gap = NAN;    ///< mean training gap (NaN without references)
  Status status = Status::not_run;
  std::string error;
  double runtime = 0;              ///< mean seconds per instance
  double cpu_runtime = 0;          ///< mean CPU seconds per instance (the prompts' runtime class)
  std::vector<double> objectives;  ///< per instance (NaN where not ok): FunSearch's signature
};

struct EvolveConfig {
  std::string framework = "simpleevol";
  int64_t budget = 820;         ///< evaluations
  int64_t compress_every = 5;   ///< SimpleEvol: candidates between compressions (0: never)
  bool best_so_far = true;      ///< SimpleEvol: keep the best code in the prompt
  int64_t history_window = 20;  ///< candidates shown when nothing compresses
  uint64_t seed = 0;
  double temperature = 1.0;  ///< the model's (ReEvo's initial samples: 0.3 warmer)
  EvalConfig eval;           ///< code is filled per candidate
};

/// A framework's structure as the paper counts it: M functional components,
/// K kinds of LLM operation.
struct FrameworkShape {
  int m = 0, k = 0;
};
FrameworkShape framework_shape(const std::string& framework);
/// AHI = M + K + log10(1 + Q).
double ahi(int m, int k, double q);

/// The problem's text for prompts: task, interface, seed heuristic.
std::string task_text(Problem p);
std::string interface_text(Problem p);
std::string seed_code(Problem p);

/// The first ```python block of a reply (or the whole reply when it has no
/// fence and defines a function), and the "Description:" line (else the
/// idea in braces { } before the code, as EoH and MCTS-AHD ask for it).
void split_reply(const std::string& reply, std::string& code, std::string& description);

/// Runs the framework until 'budget' candidates are evaluated; 'progress'
/// is called after each.
std::vector<Candidate> run_framework(const InstanceSet& train, LlmClient& llm, const EvolveConfig& config,
                                     const std::function<void(int64_t)>& progress);

/// Scores one code on a set: the candidate as /candidates records it.
Candidate score_code(const InstanceSet& set, const std::string& code, const EvalConfig& eval);

}  // namespace sevol
