// fssp.hpp - the permutation flow shop (makespan): NEH, iterated greedy and
// the guided local search whose perturbation an evolved heuristic supplies
// (EoH's FSSP-GLS as published). Sequences are permutations of job indices.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nk/rng.hpp"
#include "simple-evol/problem.hpp"

namespace sevol {

/// Processing times job-major, p[j * m + k], as the GLS heuristic sees them
/// (time_matrix [n, m]).
struct FlowShop {
  int64_t n = 0, m = 0;
  std::vector<double> p;
  static FlowShop from(const Instance& item);
  /// Every time an integer: the accelerated evaluations (heads and tails,
  /// Taillard's insertion) are then exact and used.
  bool integral() const;
};

/// Completion time of the last job on the last machine (c_k = max(c_k,
/// c_{k-1}) + p, job by job: the published makespan's order of operations).
double makespan(const FlowShop& shop, const std::vector<int64_t>& seq);

/// NEH: jobs by decreasing total time (ties: lower index first), each
/// inserted at the first position of least makespan.
std::vector<int64_t> fssp_neh(const FlowShop& shop);

struct IgConfig {
  int64_t iterations = 1000;
  int64_t destruction = 4;   ///< jobs removed per iteration (Ruiz and Stuetzle's d)
  double temperature = 0.4;  ///< T: accept worse with exp(-delta/Temp), Temp = T sum(p)/(10 n m)
};
/// Ruiz and Stuetzle's iterated greedy from NEH, with insertion local search.
std::vector<int64_t> fssp_ig(const FlowShop& shop, const IgConfig& config, nk::Rng& rng);

/// What the GLS asks of a heuristic: given the current sequence, fill a
/// perturbed matrix [n, m] (job-major) and the jobs to perturb; return an
/// empty string, or why the answer is not usable (the instance is then
/// invalid). Throwing is allowed (an exception in the heuristic).
using Perturbation = std::function<std::string(const std::vector<int64_t>& seq, std::vector<double>& matrix,
                                               std::vector<int64_t>& jobs)>;

struct GlsConfig {
  int64_t iterations = 1000;
  int64_t reset_every = 50;  ///< back to the best sequence every this many iterations
  int64_t perturb_jobs = 5;  ///< the heuristic's list is cut to this length
};

struct GlsResult {
  std::vector<int64_t> best;
  double best_makespan = 0;
  std::string invalid;  ///< non-empty: the heuristic's answer was unusable (why)
};

/// EoH's FSSP-GLS, step for step: NEH; per iteration a swap pass then a
/// relocate pass on the true times (threshold: the previous pass's makespan,
/// as published), the heuristic's perturbed matrix and jobs, then the same
/// two passes on the perturbed matrix over those jobs (as positions in the
/// swap pass, as job indices in the relocate pass); every reset_every
/// iterations back to the best. See simple-evol(1) FSSP-GLS.
GlsResult fssp_gls(const FlowShop& shop, const GlsConfig& config, const Perturbation& perturb);

}  // namespace sevol
