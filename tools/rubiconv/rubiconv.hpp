// rubiconv.hpp - the verbs of rubiconv: exact per-document causal FFT
// convolution of packed sequences (apply, grad) and realistic inputs (gen).
#pragma once
#include <cstdint>
#include <string>

#include "nk/run_env.hpp"
#include "rubiconv/plan.hpp"

namespace rubiconv {

inline constexpr const char* kInputSchema = "rubiconv.input/1";
inline constexpr const char* kOutputSchema = "rubiconv.output/1";
inline constexpr const char* kGradSchema = "rubiconv.grad/1";

struct GenOptions {
  std::string output = "-";
  bool no_clobber = false;
  int64_t length = 0, channels = 64, batch = 1;
  int64_t filter_length = 0;                  ///< 0 = L
  std::string doc_lengths = "lognormal:512,1.0";  ///< lognormal:MEDIAN,SIGMA | fixed:N | FILE
  std::string filter = "hyena";               ///< hyena | stu | random
  std::string dtype = "float32";
  bool skip = false;                          ///< also write /bias
  bool with_dy = false;                       ///< also write /dy (for grad)
  bool shared_packing = false;                ///< one /cu_seqlens [D+1] for every row
};
void gen(const GenOptions& options, const nk::RunEnv& env);

struct RunOptions {
  std::string input = "-", output = "-";
  bool no_clobber = false;
  Method method = Method::rubiconv;
  bool skip = false;  ///< add /bias[h] * x (Hyena's D term)
  PlanOptions plan;
  int repeats = 1;  ///< run the computation this many times, report the fastest
};
/// Rows env.shard of the batch; on the GPU when env.cuda().
void run_apply(const RunOptions& options, const nk::RunEnv& env);
void run_grad(const RunOptions& options, const nk::RunEnv& env);

}  // namespace rubiconv
