// ssd.hpp - the verbs of ssd-distill: the knowledge to internalise (tasks)
// and the per-position switch rule and loss every method trains with
// (divergence).
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "nk/lm/loss.hpp"
#include "nk/lm/qa.hpp"
#include "nk/run_env.hpp"
#include "ssd-distill/tasks.hpp"

namespace ssd {

inline constexpr const char* kDivergenceSchema = "ssd-distill.divergence/1";
inline constexpr const char* kEvalSchema = "ssd-distill.eval/1";

/// --no-clobber checked before any work (the command line checks the folder).
void check_output(const std::string& path, bool no_clobber);

struct TasksOptions {
  std::string output = "-", from_jsonl;
  bool no_clobber = false;
  TaskSpec spec;
};
void tasks_verb(const TasksOptions& options, const nk::RunEnv& env);

/// fkl = KL(teacher || student), rkl = KL(student || teacher), jsd.
nk::lm::Divergence parse_divergence(const std::string& name);

/// The rule at one position: delta = D_switch(student || teacher); the
/// teacher writes the token when delta > tau.
struct SwitchRule {
  nk::lm::Divergence divergence = nk::lm::Divergence::jsd;
  double tau = 0.3;
  double delta(const float* student_logits, const float* teacher_logits, int64_t V) const {
    return nk::lm::divergence(divergence, student_logits, teacher_logits, V);
  }
};

/// Per position r of [N, V] student and teacher logits: delta[r], writer[r]
/// (1 = teacher), loss[r] = D_loss(teacher || student) and, when grad is not
/// null, grad[r, :] = d loss[r] / d student logits[r, :].
void positions(const SwitchRule& rule, nk::lm::Divergence loss, const float* student, const float* teacher, int64_t N,
               int64_t V, double* delta, int8_t* writer, double* loss_out, float* grad);

struct DivergenceOptions {
  std::string input, output = "-", switch_name = "jsd", loss = "fkl";
  double tau = 0.3;
  bool no_clobber = false;
};
void divergence_verb(const DivergenceOptions& options, const nk::RunEnv& env);

/// The scores of one answer: exact (equal word lists), F1 (word multisets),
/// correct = exact when the gold has at most 3 words, else F1 >= 0.5.
struct AnswerScore {
  bool exact = false, correct = false;
  double f1 = 0;
};
AnswerScore score_answer(const std::string& prediction, const std::string& gold);

struct EvalOptions {
  std::string model, input, split = "test", output = "-", ppl_text;
  bool no_clobber = false, open_book = false, ppl = false;
  int64_t max_new = 32, ppl_docs = 64;
};
/// Exit 3 naming the split's row (and its document) when a prompt of
/// 'prompt' tokens leaves no room for an answer in the model's context.
void check_room(const Tasks& tasks, const std::string& split, int64_t row, int64_t prompt, int64_t context,
                bool with_document);

/// Greedy answers to a split's questions, closed-book (the student's view)
/// or with the document in the context (--open-book: the teacher's).
void eval_verb(const EvalOptions& options, const nk::RunEnv& env);

inline constexpr const char* kRolloutSchema = "ssd-distill.rollout/1";

struct RolloutOptions {
  std::string model, input, split = "train", output = "-", method = "ssd", switch_name = "jsd";
  bool no_clobber = false, dump_dists = false;
  int64_t limit = 0, max_new = 32, chunk = 8, skd_topk = 25;
  double tau = 0.3, temperature = 1.0;
};
/// Rollouts of a split's first --limit questions with the model as both the
/// student (closed-book) and the teacher (the document in context).
void rollout_verb(const RolloutOptions& options, const nk::RunEnv& env);

struct TrainOptions {
  std::string model, input, output, method = "ssd", loss = "fkl", switch_name = "jsd";
  bool no_clobber = false;
  double tau = 0.3, lr = 1e-4, temperature = 1.0;
  int64_t steps = 200, batch = 8, eval_every = 0, max_new = 32, chunk = 8, skd_topk = 25;
};
/// Distils the teacher (the model with the document in context, frozen at
/// the initial weights) into the closed-book student with one method.
void train_verb(const TrainOptions& options, const nk::RunEnv& env);
/// Exit 3 (2 for a bad name) before any training: a training prompt without
/// room for an answer, --skd-topk above the vocabulary.
void check_train(const nk::lm::CausalModel& model, const Tasks& tasks, const TrainOptions& options);

/// A training run's evaluations (closed-book test accuracy every
/// --eval-every steps, and at step 0) with the counts up to each.
struct Curve {
  std::vector<double> step, supervised, teacher_forward, student_forward, teacher_fraction, train_loss, test_accuracy,
      wall;
};
/// The curve's columns by their dataset names (train's /curve/NAME [E],
/// sweep's /runs/NAME [R, E]), in that order.
const std::vector<std::pair<const char*, std::vector<double> Curve::*>>& curve_columns();
struct TrainRun {
  Curve curve;
  int64_t supervised = 0, teacher_forward = 0, student_forward = 0, prefill = 0;
  int64_t trained = 0;                               ///< rows of the training forward and backward (prompts + rollouts)
  double seconds_per_step = 0, rollout_seconds = 0;  ///< per step: all, and the rollouts' share
};
/// One distillation run: 'weights' (the initial student, and the frozen
/// teacher's copy) train in place; draws and batch order follow 'seed'.
TrainRun distill(nk::lm::ParameterStore& weights, const nk::lm::Tokenizer& tok, const Tasks& tasks,
                 const TrainOptions& options, uint64_t seed, bool show_progress);

/// Greedy answers to a split's questions (the first line of each), closed-book
/// or with the document in the context; exit 3 naming the row when a prompt
/// leaves no room for an answer.
std::vector<std::string> answers(const nk::lm::Model& model, const nk::lm::Tokenizer& tok, const Tasks& tasks,
                                 const std::string& split, bool open_book, int64_t max_new);
/// The share of a split's questions answered correctly.
double accuracy(const nk::lm::Model& model, const nk::lm::Tokenizer& tok, const Tasks& tasks, const std::string& split,
                bool open_book, int64_t max_new);

inline constexpr const char* kSweepSchema = "ssd-distill.sweep/1";
inline constexpr const char* kReportSchema = "ssd-distill.report/1";

struct SweepOptions {
  TrainOptions train;  ///< model, input, steps, batch, lr, eval_every, ... (method, loss and tau per run)
  std::string output = "-", svg;
  bool no_clobber = false;
  std::vector<std::string> methods{"off-sft", "off-fkl", "on-policy", "skd", "ssd"}, losses{"fkl"};
  std::vector<double> taus{0.3};
  int64_t seeds = 1, ppl_docs = 64;
};
/// One run of the grid: off-sft once per seed (cross-entropy), the other
/// methods once per loss, ssd once per loss and tau.
struct SweepRun {
  std::string method, loss;
  double tau = 0;    ///< NaN but for ssd
  int64_t seed = 0;  ///< index: the run's seed is --seed + index
};
std::vector<SweepRun> sweep_grid(const SweepOptions& options);
/// The grid's runs (this shard's slice), one training run each from the
/// same initial weights, into /runs; the whole grid also prints the report.
void sweep_verb(const SweepOptions& options, const nk::RunEnv& env);

struct SweepResult {
  std::string method, loss;
  double tau = 0;
  int64_t seed = 0;
  double ppl = 0, seconds_per_step = 0;
  Curve curve;
};
struct SweepBase {
  std::string task;
  double accuracy = 0, teacher_accuracy = 0, ppl = 0;  ///< closed-book base, open-book teacher, base perplexity
};
struct Sweep {
  std::string path;
  SweepBase base;
  std::vector<SweepResult> runs;
};
/// A sweep file (or the merge of its shards, nk-data merge); exit 3 naming
/// the dataset whose shape does not fit.
Sweep read_sweep(const std::string& path);

/// One configuration (method, loss, tau) over its seeds.
struct ConfigSummary {
  std::string name, method, loss;
  double tau = 0;
  int64_t runs = 0;
  /// Per run: plateau = mean of the last 3 evaluations; reached = plateau >=
  /// A* - 1 point (A*: on-policy's plateau at that seed); tokens (supervised,
  /// teacher forward) at the first evaluation >= A* - 1 point (NaN: never);
  /// savings = 1 - tokens / on-policy's tokens; teacher fraction in the first
  /// and last evaluation window; perplexity change; seconds per step.
  std::vector<double> plateau, reached, tokens, teacher_tokens, savings, fraction_first, fraction_last, ppl_change,
      seconds;
};
std::vector<ConfigSummary> summarise(const Sweep& sweep);

struct ReportOptions {
  std::string input, output, svg;
  bool no_clobber = false;
};
/// The table (on 'to'), optionally /report as HDF5 and the SVGs
/// SVG-accuracy.svg (test accuracy vs supervised tokens) and
/// SVG-teacher.svg (teacher fraction vs step).
void report(const Sweep& sweep, const ReportOptions& options, FILE* to);
void report_verb(const ReportOptions& options, const nk::RunEnv& env);

struct PrepareOptions {
  std::string model, output, wordnet;
  bool no_clobber = false;
  int64_t docs = 300;  ///< documents of each task kind
  nk::lm::FinetuneConfig config;
};
/// The reader: nk-lm's causal checkpoint fine-tuned to answer questions from
/// a document in its context (open-book QA of the warm-up pool's memos,
/// glossaries and procedures), with general-text replay.
void prepare_verb(const PrepareOptions& options, const nk::RunEnv& env);

}  // namespace ssd
