// evaluator.hpp - scores one heuristic on a set of instances: sandboxed
// worker processes forked from the Python zygote run the C++ loops (TSP
// construction, CVRP-ACO, FSSP-GLS) and call the heuristic; the parent hands
// out instances, enforces the wall-clock limits and collects the results.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "simple-evol/cvrp.hpp"
#include "simple-evol/fssp.hpp"
#include "simple-evol/problem.hpp"
#include "nk/sandbox.hpp"

namespace sevol {

using nk::make_scratch;
using nk::namespace_sandbox_unavailable;
using nk::parse_sandbox;
using nk::SandboxMode;

/// /status values.
enum class Status : int8_t { ok = 0, exception = 1, timeout = 2, invalid = 3, not_run = 4 };

struct EvalConfig {
  std::string code;          ///< the heuristic's Python source
  std::string function;      ///< empty: the problem's published name
  double timeout = 60;       ///< seconds per instance (wall clock)
  double total_timeout = 0;  ///< seconds for all instances (0: none)
  int64_t memory_bytes = int64_t{2} << 30;
  int workers = 1;  ///< worker processes (instances in parallel)
  SandboxMode sandbox = SandboxMode::namespaces;
  AcoConfig aco;
  GlsConfig gls;
  uint64_t seed = 0;  ///< the ACO's ants: stream = instance position
};

struct InstanceResult {
  Status status = Status::not_run;
  double objective = NAN;
  std::vector<int64_t> solution;
  double runtime = 0;            ///< seconds in the worker, heuristic included
  double heuristic_seconds = 0;  ///< seconds inside the heuristic's calls
  double cpu_seconds = 0;        ///< the worker's CPU seconds (what the prompts' runtime class reads)
  std::string error;
};

struct EvalReport {
  std::vector<InstanceResult> items;
  double wall_seconds = 0;
};

/// The function each problem's evaluator calls.
std::string default_function(Problem problem);

/// Evaluates the heuristic on every instance of 'set'. Starts the Python
/// zygote in this process when needed (call before any thread starts). A
/// failing heuristic is a result, never an exception; nk::Error only for the
/// harness itself (no sandbox, no scratch folder).
EvalReport evaluate(const InstanceSet& set, const EvalConfig& config);

}  // namespace sevol
