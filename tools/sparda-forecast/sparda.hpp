// sparda.hpp - the verbs of sparda-forecast: the Forecast projection that
// predicts the next layer's KV blocks of block-sparse attention (SparDA).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nk/lm/block_select.hpp"
#include "nk/run_env.hpp"

namespace sparda {

inline constexpr const char* kTraceSchema = "sparda-forecast.trace/1";
inline constexpr const char* kForecastSchema = "sparda-forecast.forecast/1";
inline constexpr const char* kSelectionSchema = "sparda-forecast.selection/1";
inline constexpr const char* kEvalSchema = "sparda-forecast.eval/1";
inline constexpr const char* kDecodeSchema = "sparda-forecast.decode/1";

struct GenOptions {
  std::string output = "-";
  bool no_clobber = false;
  int64_t layers = 3, heads = 4, kv_heads = 2, head_dim = 16, d_model = 128, tokens = 1024, batch = 1;
  int64_t block = 64;  ///< the block the planted structure is made of
  double rope_theta = 1e4;
  bool planted = false;
  double noise = 0.1;  ///< planted: per-head query noise relative to the group's query
};
void gen(const GenOptions& options, const nk::RunEnv& env);

struct SelectOptions {
  std::string input = "-", output = "-", forecast;
  bool no_clobber = false;
  std::string by = "selector";
  int64_t rank = 32;  ///< infinigen: skewed channels r
  nk::lm::BlockSelectorConfig selector;
};
void select(const SelectOptions& options, const nk::RunEnv& env);

struct TrainOptions {
  std::string input = "-", output = "-", model;
  bool no_clobber = false;
  int64_t steps = 300, queries = 256;
  double lr = 1e-2;
  std::string kl = "full", init = "lstsq";
  nk::lm::BlockSelectorConfig selector;
};
void train(const TrainOptions& options, const nk::RunEnv& env);

struct EvalOptions {
  std::string input = "-", output = "-", forecast, positions;
  std::string by = "forecast";
  int64_t rank = 32;
  bool no_clobber = false;
  nk::lm::BlockSelectorConfig selector;
  bool selector_given = false;  ///< any of --block, --init-blocks, --local-blocks, --topk on the command line
  // --model: the methods inside the model (perplexity on --corpus, the needle task).
  std::string model, corpus;
  int64_t windows = 8, window = 0, needles = 16, needle_tokens = 0;
  uint64_t needle_seed = 1;
};
void eval(const EvalOptions& options, const nk::RunEnv& env);
void eval_model(const EvalOptions& options, const nk::RunEnv& env);

struct DecodeOptions {
  std::string input = "-", output = "-", forecast, positions, mode = "sync", bandwidth = "0";
  bool no_clobber = false, verify = false;
  int64_t rank = 32;
  double device_mib = 64;  ///< the device pool's capacity
  std::string model;       ///< decode a model (generation) instead of replaying a trace
  bool bench_shapes = false;
  int64_t prompt_tokens = 4096, batch = 1, steps = 16, chunk = 512, calibrate_steps = 4, prefill_tokens = 0;
  nk::lm::BlockSelectorConfig selector;
};
void decode(const DecodeOptions& options, const nk::RunEnv& env);

struct NeedleOptions {
  std::string output = "-", split = "train";
  bool no_clobber = false;
  int64_t docs = 100, chars = 12000, facts = 8;
};
void needle(const NeedleOptions& options, const nk::RunEnv& env);

struct PlotOptions {
  std::vector<std::string> inputs;
  std::string output;
  bool no_clobber = false;
};
void plot(const PlotOptions& options);

}  // namespace sparda
