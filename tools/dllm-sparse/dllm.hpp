// dllm.hpp - block-sparse bidirectional attention for diffusion LLMs
// (Step-dLLM): the verbs, their options and file schemas. The fused kernel
// and the mask planner are shared (nk/kernels/dllm.hpp, dllm_plan.hpp): the
// same code runs inside nk-lm's diffusion sampler.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nk/kernels/dllm.hpp"
#include "nk/kernels/dllm_plan.hpp"
#include "nk/run_env.hpp"

namespace dllm {

using namespace nk::dllm;

inline constexpr const char* kQkvSchema = "dllm-sparse.qkv/1";
inline constexpr const char* kTrajectorySchema = "dllm-sparse.trajectory/1";
inline constexpr const char* kPlanSchema = "dllm-sparse.plan/1";
inline constexpr const char* kOutputSchema = "dllm-sparse.output/1";
inline constexpr const char* kEvalSchema = "dllm-sparse.eval/1";

// --- planning ----------------------------------------------------------------
struct PlanOptions {
  std::string input = "-", output = "-";
  bool no_clobber = false;
  double scale = 0;
  PolicyOptions policy;  ///< the planner's policy (dense is not a plan)
};
struct EvalOptions {
  std::string input = "-", plan, output = "-";
  bool no_clobber = false;
  double scale = 0;
};
struct PlotOptions {
  std::string input = "-", output, error_output;
  bool no_clobber = false;
};
struct AttendOptions {
  std::string input = "-", output = "-", mask;
  bool no_clobber = false, dense = false, unfused = false;
  int64_t block = 64, step = -1;
  int repeats = 1;
  double scale = 0;
};
struct GenOptions {
  std::string output = "-";
  bool no_clobber = false;
  int64_t length = 1024, heads = 8, kv_heads = 0, dims = 64, steps = 16, layers = 1, transitions = 2;
  bool single_step = false;  ///< write one step as /q, /k, /v (attend's input)
};

/// On the GPU when env.cuda().
void attend(const AttendOptions& o, const nk::RunEnv& env);
void plan(const PlanOptions& o);
void eval(const EvalOptions& o);
void plot(const PlotOptions& o);
void gen(const GenOptions& o, const nk::RunEnv& env);

}  // namespace dllm
