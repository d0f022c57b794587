// surrogate.hpp - the shipped stand-ins for the paper's ten LLMs: surrogates
// that read only the prompt and answer with Python from a per-problem
// grammar, on a ladder of capability rungs 0..9 (simple-evol(1) SURROGATES).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nk/rng.hpp"
#include "simple-evol/problem.hpp"

namespace sevol {

/// A heuristic of the grammar: named weights and named rules.
struct Genome {
  std::map<std::string, double> weights;
  std::map<std::string, std::string> rules;
  bool operator==(const Genome& o) const { return weights == o.weights && rules == o.rules; }
};

/// What one problem's heuristics may say, and how they are written.
class Grammar {
 public:
  struct Weight {
    std::string name;
    double lo, hi, seed;
    std::string meaning;
  };
  struct Rule {
    std::string name;
    std::vector<std::string> options;
    std::string seed;
    std::string meaning;
  };
  explicit Grammar(Problem problem);
  Problem problem() const { return problem_; }
  const std::vector<Weight>& weights() const { return weights_; }
  const std::vector<Rule>& rules() const { return rules_; }

  /// The seed heuristic (the one every framework starts from).
  Genome seed() const;
  /// Uniform over the weights' ranges and the rules' options.
  Genome random(nk::Rng& rng) const;
  /// Python in the published interface; the weights and rules are module
  /// constants (NAME = value) so that an edit is visible in the code.
  std::string emit(const Genome& g) const;
  /// The same code with one bug: a syntax error, a misspelt name or an
  /// answer of the wrong kind.
  std::string emit_with_bug(const Genome& g, nk::Rng& rng) const;
  /// One line: the weights and rules as NAME=value.
  std::string describe(const Genome& g) const;
  /// The genome of a text holding every NAME = value of the grammar (code or
  /// a notes line); nothing when any is missing.
  std::optional<Genome> parse(const std::string& text) const;
  /// Gaussian steps of scale x range on 'count' weights (all when count < 0,
  /// each with probability 0.3); unless params_only, with probability 0.3 a
  /// structural edit: a rule changed, or a weight switched off (0) or on.
  void mutate(Genome& g, nk::Rng& rng, double scale, int count, bool params_only) const;
  /// Each weight and rule from a or b at random.
  Genome crossover(const Genome& a, const Genome& b, nk::Rng& rng) const;

 private:
  Problem problem_;
  std::vector<Weight> weights_;
  std::vector<Rule> rules_;
};

/// The problem a prompt is about, from the interface it names.
std::optional<Problem> prompt_problem(const std::string& prompt);

/// A program shown in a prompt: its genome (when in the grammar) and score.
struct ShownProgram {
  std::optional<Genome> genome;
  double score = NAN;  ///< lower is better; NaN when none is given
};
/// Fenced code blocks with the score on the header line above them (or on
/// an "Objective value:" line right below them), and notes lines "score S:
/// NAME=value ...".
std::vector<ShownProgram> shown_programs(const Grammar& grammar, const std::string& prompt);

/// The surrogate's reply: working notes when the request is to compress,
/// a reflection when it asks for one, a description when asked to
/// re-describe code, else "Description: ..." and a
/// ```python block. Depends only on (rung, prompt, seed, temperature).
std::string surrogate_reply(int rung, const std::string& prompt, uint64_t seed, double temperature);

/// The surrogate's seed for request number 'sample' of a run seeded 'seed':
/// surrogate:R in-process and `simple-evol llm --rung R --seed S` with
/// --llm-format chat-json give the same replies.
uint64_t surrogate_command_seed(uint64_t seed, int64_t sample);

/// The fraction of replies with a bug at rung R: 0.30 (9 - R) / 9.
double surrogate_bug_rate(int rung);
/// A rung's edit size, as a fraction of each weight's range (times the temperature).
double surrogate_step(int rung);
/// Candidates a rung tries privately on instances of its own (1: none).
int surrogate_trials(int rung);

}  // namespace sevol
