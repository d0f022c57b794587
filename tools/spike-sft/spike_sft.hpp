// spike_sft.hpp - the verbs of spike-sft: train a spiking network (pretrain)
// and measure it (eval). Selective fine-tuning (SPE) and merging (PickIt)
// build on these; the data and model files they share are model_io.hpp's.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nk/h5.hpp"
#include "nk/run_env.hpp"
#include "spike-sft/model_io.hpp"
#include "nk/snn/snn.hpp"

namespace spike {

inline constexpr const char* kEvalSchema = "spike-sft.eval/1";
inline constexpr const char* kTasksSchema = "spike-sft.tasks/1";
inline constexpr const char* kStatsSchema = "spike-sft.stats/1";

struct TasksOptions {
  std::string input = "-", output = "-";
  bool no_clobber = false;
  std::vector<std::string> kinds = {"rotate90", "invert", "permute", "noise", "relabel"};
  int64_t train = 10000, test = 2000;
  double noise = 0.3;
};
/// Writes /tasks/KIND/{train,test}/{images,labels} for every kind.
void tasks(const TasksOptions& options, const nk::RunEnv& env);

struct Task {
  std::string name;
  Dataset train, test;
};
/// "FILE:NAME" -> the task NAME of a tasks file (exit 2 for a bad spec, 3 for a missing task).
Task read_task(const std::string& spec);

struct TrainOptions {
  std::string input = "-", test, output = "-";
  bool no_clobber = false;
  std::vector<int64_t> hidden = {256};
  std::vector<int64_t> conv;  ///< channels of conv-LIF-pool blocks (a conv network instead of dense hidden layers)
  int64_t steps = 8, epochs = 5, batch = 128, limit = 0;
  double beta = 0.9, threshold = 1.0, slope = 25.0, learning_rate = 1e-3, holdout = 0.1;
  std::string reset = "subtract", surrogate = "fast-sigmoid", coding = "direct";
};
void pretrain(const TrainOptions& options, const nk::RunEnv& env);

struct EvalOptions {
  std::string input = "-", data, task, output;
  bool no_clobber = false;
  int64_t batch = 256;
};
void eval(const EvalOptions& options, const nk::RunEnv& env);

struct ServeOptions {
  std::string input;
};
/// The model as a program for proxy-certify --model-cmd: frames of float32
/// items on standard input, log-probabilities on standard output.
void serve(const ServeOptions& options, const nk::RunEnv& env);

struct SpeOptions {
  std::string input = "-", task, output = "-";
  bool no_clobber = false;
  std::string method = "spe";  ///< spe (smallest |w|) | random | large (largest |w|) | full
  double fraction = 0.05;      ///< q: trainable share of each weight layer
  int64_t epochs = 3, batch = 128, reselect_every = 1;
  double learning_rate = 0;  ///< 0: 1e-3 for full, 1e-2 for masks
  double low_rank = 0.02;
  bool base_cache = true;  ///< masks and LoRA: the frozen base's first-layer currents, cached per example
};
/// The largest base-current cache spe keeps (bytes); above it the first
/// layer's currents are computed densely.
inline constexpr int64_t kBaseCacheLimit = int64_t{1} << 30;
/// Stage 1: fine-tune the base model on one task with a mask (or fully).
void spe(const SpeOptions& options, const nk::RunEnv& env);

/// The low-rank step: singular value thresholding of Delta = w - base by
/// tau = rho sigma_max(Delta), written back on the entries 'index' (flat,
/// row-major) only; computed from the Gram matrix of Delta's shorter side
/// and its eigendecomposition, in float32.
void shrink_singular_values(snn::Matrix& w, const snn::Matrix& base, const std::vector<int32_t>& index, double rho);

struct PickitOptions {
  std::vector<std::string> inputs;
  std::string tasks, output = "-";
  bool no_clobber = false;
  std::string method = "pickit";  ///< pickit | ties | average | task-arithmetic
  std::optional<double> trim;     ///< share of each delta's nonzero entries kept (default: 1 for pickit, 0.2 for ties)
  std::optional<double> scale;    ///< lambda for ties/pickit and task arithmetic (default 1; pickit: chosen from scale_grid)
  std::vector<double> scale_grid = {0.5, 1.0, 1.5, 2.0, 3.0};  ///< pickit: the lambdas tried, the one the task models agree with most kept
  int64_t calibration = 256;      ///< calibration examples per task
  std::string calibrate = "neuron";  ///< neuron | affine | layer: what the spike-statistics calibration adjusts
  bool align = true;              ///< permute the neurons of models of another base to match the first
};
/// Stage 2: merge adapted models of one base into one model of the base architecture.
void pickit(const PickitOptions& options, const nk::RunEnv& env);

struct StatsOptions {
  std::string input = "-", data, output = "-", plot;
  bool no_clobber = false;
  std::vector<double> fractions = {0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9};
  int64_t bins = 50;
};
/// Weight-magnitude histograms and accuracy after silencing the smallest synapses.
void stats(const StatsOptions& options, const nk::RunEnv& env);

/// Accuracy, mean loss and per-layer firing rates of 'net' on 'data'.
snn::BatchStats evaluate(const snn::Network& net, const Dataset& data, int64_t batch, uint64_t seed);

}  // namespace spike
