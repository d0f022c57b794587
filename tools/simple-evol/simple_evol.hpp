// simple_evol.hpp - SimpleEvol: LLM-driven automated heuristic design with
// minimal human priors (simple-evol(1)): the verbs' options and entry points.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nk/run_env.hpp"
#include "simple-evol/evaluator.hpp"
#include "simple-evol/problem.hpp"

namespace sevol {

struct GenOptions {
  std::string output;
  bool no_clobber = false;
  std::string problem = "tsp";
  int64_t count = 64;
  int64_t nodes = 50;       ///< tsp: cities; cvrp: customers
  int64_t capacity = 50;    ///< cvrp
  int64_t jobs = 50;        ///< fssp
  int64_t machines = 0;     ///< fssp: 0 draws 2..20 per instance
  std::string taillard;     ///< fssp: ta001,20x5,all
  std::string from_tsplib;  ///< a TSPLIB/CVRPLIB file
};
void gen_verb(const GenOptions& options, const nk::RunEnv& env);

struct SolveOptions {
  std::string input, output;
  bool no_clobber = false;
  std::string method;
  int64_t iterations = 0;  ///< ils kicks / ig iterations (0: the method's default)
  bool store_reference = false;
};
void solve_verb(const SolveOptions& options, const nk::RunEnv& env);

struct EvalOptions {
  std::string input, output, heuristic;
  bool no_clobber = false;
  std::string function;
  std::string sandbox = "namespace";
  double timeout = 60, total_timeout = 0;
  int64_t memory_mb = 2048;
  int64_t ants = 30, aco_iterations = 100;
  bool greedy_ants = false;
  int64_t gls_iterations = 1000;
};
void eval_verb(const EvalOptions& options, const nk::RunEnv& env);

/// Writes /objective, /solution, /solution_offsets, /gap, /runtime,
/// /instance and the attributes problem, mean_objective, mean_gap (shared by
/// solve and eval). 'results' holds one entry per instance of 'set'.
void write_results(nk::h5::Writer& out, const InstanceSet& set, const std::vector<InstanceResult>& results);

/// A TSPLIB (TYPE: TSP) or CVRPLIB (TYPE: CVRP) file as one instance; the
/// depot becomes node 0. Exit 3 naming file and line.
InstanceSet read_tsplib(const std::string& path);

}  // namespace sevol

namespace sevol {

struct EvolveOptions {
  std::string input, output;
  bool no_clobber = false;
  std::vector<std::string> tests;
  std::string framework = "simpleevol";
  std::string llm = "surrogate:5";
  std::string llm_cmd, llm_format = "text", cache_dir;
  double temperature = 1.0, llm_timeout = 600;
  int64_t budget = 820, compress_every = 5;
  bool no_best_so_far = false;
  EvalOptions eval;  ///< the evaluator's options (sandbox, timeouts, ACO, GLS)
};
void evolve_verb(const EvolveOptions& options, const nk::RunEnv& env);

struct LlmVerbOptions {
  int rung = 5;
  double temperature = 1.0;
  bool exam = false;
  std::string output;
  bool no_clobber = false;
  std::string rungs = "0-9";
  int64_t samples = 16;
  std::string seed_heuristic;  ///< a problem: print the seed heuristic every framework starts from
};
void llm_verb(const LlmVerbOptions& options, const nk::RunEnv& env);

/// The evaluator configuration that eval's options describe.
EvalConfig eval_config(const EvalOptions& o, const nk::RunEnv& env);

}  // namespace sevol

namespace sevol {

struct SweepOptions {
  std::string output;  ///< the folder: data/ and runs/
  std::string preset = "small";
  std::vector<std::string> problems = {"tsp", "cvrp", "fssp"};
  std::vector<std::string> frameworks = {"simpleevol", "eoh", "funsearch", "reevo", "random"};
  std::string rungs = "0-9";
  int64_t seeds = 3;
  int64_t budget = 0;  ///< 0: the preset's
  EvalOptions eval;
};
void sweep_verb(const SweepOptions& options, const nk::RunEnv& env);

struct IceOptions {
  std::vector<std::string> inputs;  ///< run files or folders of them
  std::string exam;                 ///< llm --exam's file: I per rung
  std::string problem;              ///< empty: the runs' only problem
  std::string output, plot;
  bool no_clobber = false;
  double eps = 0.01;
};
void ice_verb(const IceOptions& options, const nk::RunEnv& env);

/// "0-9", "0,3,9": rungs 0..9 (usage error otherwise).
std::vector<int> parse_rungs(const std::string& text);

}  // namespace sevol
