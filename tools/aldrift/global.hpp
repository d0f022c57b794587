// global.hpp - the global verb: minimising shifted test functions in R^n to
// eps-optimality by ALDRIFT (tempered stages of independence-MH corrections
// and refits) and by the baselines (random search, CEM, CbAS, SOO, DOO).
#pragma once
#include <string>
#include <vector>

#include "aldrift/continuous.hpp"
#include "nk/run_env.hpp"

namespace ald {

inline constexpr const char* kGlobalSchema = "aldrift.global/1";

struct GlobalOptions {
  std::string output;
  bool no_clobber = false;
  std::vector<std::string> functions{"rastrigin"};
  std::vector<int> dims{2};
  std::string seeds;  ///< empty: --seed
  double amplitude = 1.0;
  std::string x_star_file;
  std::string envelope;  ///< "c1,c2" for a function without one
  double eps = 1e-8;
  int64_t budget = 100000;
  std::string method = "aldrift";
  std::string learner = "optimistic";
  int chains = 0;  ///< 0: 3 n + 6 (optimistic), 4 n + 8 (gauss, kde)
  int steps = 1;
  int burn_in = 0;
  double ess = 0.2;        ///< target effective sample share of the tempering step
  double max_ratio = 4.0;  ///< T_{i+1} <= max_ratio T_i
  double energy = 8.0;     ///< T_{i+1} <= energy n / (2 mean gap of the states)
  LearnerOptions learning;
  int population = 0;  ///< cem, cbas: draws per iteration (0: 20 n)
  double elite = 0.1, cem_rate = 0.7, quantile = 0.1;
  double box = 9.0;  ///< soo, doo: the search box [-box, box]^n
};

void global(const GlobalOptions& o, const nk::RunEnv& env);

struct EvaluateOptions {
  std::string input, output;
  bool no_clobber = false;
  std::string function = "rastrigin";
  double amplitude = 1.0;
  std::string x_star_file;
};
/// d(x) - d* of every row of /x [m, n]: /d [m] (x* from --x-star or the seed, as global draws it).
void evaluate(const EvaluateOptions& o, const nk::RunEnv& env);

/// One run of each method on an objective until the tracker is done.
void run_aldrift_global(Tracker& track, const GlobalOptions& o, ContinuousLearner learner, nk::Rng& rng);
void run_random(Tracker& track, nk::Rng& rng);
void run_cem_global(Tracker& track, const GlobalOptions& o, nk::Rng& rng);
void run_cbas_global(Tracker& track, const GlobalOptions& o, nk::Rng& rng);
void run_soo(Tracker& track, const GlobalOptions& o);
void run_doo(Tracker& track, const GlobalOptions& o, double c2);

/// evals = a + b ln(1/eps) by least squares over the eps in [1e-6, 1e-1]
/// that were reached: {a, b, R^2} (NaN with fewer than three points).
std::array<double, 3> log_fit(const std::array<int64_t, kCurvePoints>& reach);

}  // namespace ald
