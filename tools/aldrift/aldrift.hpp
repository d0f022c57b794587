// aldrift.hpp - ALDRIFT: sampling pi_T(s) ~ L(s) exp(-T d(s)) by stages of
// independence Metropolis-Hastings corrections and refits (coarse
// learnability), beside SIR, CEM and CbAS, on spaces small enough to enumerate.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "aldrift/model.hpp"
#include "aldrift/problem.hpp"
#include "nk/run_env.hpp"

namespace ald {

inline constexpr const char* kExactSchema = "aldrift.exact/1";

struct GenExactOptions {
  std::string output;
  bool no_clobber = false;
  int alphabet = 2;
  int length = 12;
  double stay = 0.9;
  std::string cost = "hamming";
  std::string target = "010110100101";
};

struct ExactOptions {
  std::string input, output;
  bool no_clobber = false;
  double T = 5.0;
  std::string method = "aldrift";
  int64_t budget = 40000;
  int stages = 10;
  int64_t chains = 0;  ///< 0: budget / (stages (steps + 1))
  int steps = 9;
  int burn_in = 4;
  std::string learner = "markov";
  double smoothing = 0.5;   ///< add-alpha pseudo-count per cell
  double elite = 0.1;       ///< CEM: share of the population refitted
  double cem_rate = 0.7;    ///< CEM: weight of the new fit in the parameter update
  double quantile = 0.1;    ///< CbAS: cost quantile of the threshold
  int64_t sir_pool = 1000000;  ///< SIR: pooled draws for its tv_law
};

struct PlotOptions {
  std::string input, output;
  std::vector<std::string> more;  ///< further exact outputs, drawn beside the first
  bool no_clobber = false;
};

/// "/stages/NNN", the group of stage i in an exact output.
std::string stage_group(int i);

void gen_exact(const GenExactOptions& o, const nk::RunEnv& env);
void exact(const ExactOptions& o, const nk::RunEnv& env);
void plot(const PlotOptions& o, const nk::RunEnv& env);

}  // namespace ald
