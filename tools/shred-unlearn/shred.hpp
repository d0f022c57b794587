// shred.hpp - the verbs of shred-unlearn: a TOFU-shaped benchmark (tofu),
// the target and retain models (finetune), SHRED's selection (select), the
// unlearning run of SHRED or a baseline (run), TOFU/MUSE evaluation (eval),
// relearning, sequential requests and the Pareto plot.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nk/run_env.hpp"
#include "shred-unlearn/eval.hpp"
#include "shred-unlearn/tofu.hpp"
#include "shred-unlearn/unlearn.hpp"

namespace shred {

inline constexpr const char* kSelectSchema = "shred-unlearn.select/1";
inline constexpr const char* kCurveSchema = "shred-unlearn.curve/1";

struct TofuOptions {
  std::string output = "-", from_jsonl;
  bool no_clobber = false;
  TofuSpec spec;
};
void tofu(const TofuOptions& options, const nk::RunEnv& env);

/// Reads the benchmark: --from-jsonl's layout is converted by tofu, any
/// other file must be HDF5 in the tofu layout.
Tofu open_tofu(const std::string& path);

/// --no-clobber checked before any work (the command line checks the folder).
void check_output(const std::string& path, bool no_clobber);

struct FinetuneOptions {
  std::string model, input, exclude, output, wordnet;
  bool no_clobber = false;
  /// WordNet glosses asked in the QA form (nouns outside /world): the form
  /// of the world questions, without their facts.
  int64_t replay_world = 400;
  FinetuneConfig config;
};
void finetune_verb(const FinetuneOptions& options, const nk::RunEnv& env);

struct SelectOptions {
  std::string model, input, split = "forget05", output = "-", demote = "min";
  bool no_clobber = false;
  SelectConfig config;
};
void select_verb(const SelectOptions& options, const nk::RunEnv& env);

struct EvalOptions {
  std::string model, input, reference, output = "-";
  bool no_clobber = false;
  EvalConfig config;
};
void eval_verb(const EvalOptions& options, const nk::RunEnv& env);

struct RunOptions {
  std::string model, input, split = "forget05", method = "shred", demote = "min", output, curve, reference;
  bool no_clobber = false;
  int64_t eval_every = 0;
  UnlearnConfig config;
  EvalConfig eval;
};
void run_verb(const RunOptions& options, const nk::RunEnv& env);

inline constexpr const char* kRelearnSchema = "shred-unlearn.relearn/1";
inline constexpr const char* kSequentialSchema = "shred-unlearn.sequential/1";
inline constexpr const char* kParetoSchema = "shred-unlearn.pareto/1";

struct RelearnOptions {
  std::string model, target, input, split = "forget05", output = "-";
  bool no_clobber = false;
  double fraction = 0.2;
  int64_t steps = 20, batch = 8;
  double lr = 1e-4;
};
/// Fine-tunes the unlearned model on a seeded fraction of the forget rows and
/// measures, on the others, how much of the target's ROUGE-L comes back.
void relearn_verb(const RelearnOptions& options, const nk::RunEnv& env);

struct SequentialOptions {
  std::string model, input, split = "forget10", method = "shred", demote = "min", output = "-";
  bool no_clobber = false;
  int64_t requests = 10;
  UnlearnConfig config;
  EvalConfig eval;
};
/// The split's authors in 'requests' consecutive parts, unlearned one after
/// another; utility and forget ROUGE-L after each.
void sequential_verb(const SequentialOptions& options, const nk::RunEnv& env);

struct ParetoOptions {
  std::vector<std::string> curves;
  std::string retain, target, plot, output = "-";
  bool no_clobber = false;
};
/// Points (log10 forget quality, utility) of every checkpoint on run's
/// curves, each method's front and hypervolume, the SHRED points no baseline
/// dominates, the distance to the retain model's point; an SVG.
void pareto_verb(const ParetoOptions& options, const nk::RunEnv& env);

/// 2-D hypervolume (both axes maximised) of the points above (x_ref, y_ref).
double hypervolume(std::vector<std::pair<double, double>> points, double x_ref, double y_ref);

}  // namespace shred
