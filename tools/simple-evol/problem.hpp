// problem.hpp - the three problems of simple-evol(1) and their instance files:
// TSP (constructive), CVRP (ACO) and the permutation flow shop (GLS).
//
// Instance file (simple-evol.instances/1; h5py files in this layout without
// nk_schema are accepted): root attribute problem = tsp|cvrp|fssp, one group
// per instance /instances/NNNNNN holding
//   tsp   coords float64 [n,2]
//   cvrp  coords float64 [n+1,2] (row 0 the depot), demand int32 [n+1]
//         (demand[0] = 0), attribute capacity
//   fssp  processing int32 [m,n] (machine x job), attributes name,
//         time_seed, upper_bound, lower_bound
// and optionally the attribute reference (a best-known objective: the gap's
// denominator).
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace nk::h5 {
class Writer;
}

namespace sevol {

inline constexpr const char* kInstancesSchema = "simple-evol.instances/1";
inline constexpr const char* kResultsSchema = "simple-evol.results/1";

enum class Problem { tsp, cvrp, fssp };
std::string problem_name(Problem p);
/// "tsp", "cvrp" or "fssp"; anything else is a usage error naming 'option'.
Problem parse_problem(const std::string& text, const std::string& option);

/// Bounds that refuse absurd sizes before anything is allocated.
inline constexpr int64_t kMaxNodes = 20000;  ///< a distance matrix of 3.2 GB
inline constexpr int64_t kMaxJobs = 100000;
inline constexpr int64_t kMaxMachines = 10000;
inline constexpr int64_t kMaxCells = 100000000;  ///< machines x jobs
inline constexpr int64_t kMaxInstances = 1000000;

struct Instance {
  std::string id;  ///< the group name, e.g. "000007"
  // tsp and cvrp: coords [nodes, 2] row-major (cvrp: row 0 the depot)
  std::vector<double> coords;
  std::vector<int32_t> demand;  ///< cvrp: [nodes], demand[0] = 0
  int64_t capacity = 0;         ///< cvrp
  // fssp: processing [machines, jobs] machine-major, as Taillard lists it
  std::vector<int32_t> processing;
  int64_t machines = 0, jobs = 0;
  std::string name;        ///< fssp: e.g. "ta001"; empty when generated
  int64_t time_seed = -1;  ///< fssp: Taillard's time seed; -1 when none
  double upper_bound = NAN, lower_bound = NAN;
  double reference = NAN;  ///< best-known objective; NaN when none

  int64_t nodes() const { return static_cast<int64_t>(coords.size() / 2); }
  /// p(job, machine)
  int32_t p(int64_t job, int64_t machine) const { return processing[machine * jobs + job]; }
};

struct InstanceSet {
  Problem problem = Problem::tsp;
  std::vector<Instance> items;
};

/// Reads and checks an instance file ('-': standard input). Exit 3 naming file,
/// dataset and index: a missing or unknown problem attribute, no instances,
/// NaN/Inf coordinates, fewer than 3 nodes (tsp; cvrp: fewer than 2
/// customers), demand < 0, demand[0] != 0, a customer's demand above the
/// capacity, capacity < 1, processing <= 0, wrong ranks or shapes, sizes above
/// the bounds, a non-finite or non-positive reference.
InstanceSet read_instances(const std::string& path);
/// The checks read_instances applies, for sets built in memory.
void validate_instances(const std::string& path, const InstanceSet& set);

/// Writes every instance under /instances and the root attribute problem.
void write_instances(nk::h5::Writer& out, const InstanceSet& set);

/// The group name of instance k: six digits, zero-padded.
std::string instance_id(int64_t k);

}  // namespace sevol
