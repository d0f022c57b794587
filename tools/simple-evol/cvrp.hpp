// cvrp.hpp - capacitated vehicle routing: solutions as node sequences
// "0 a b 0 c 0" (every route from and back to the depot 0), the reference
// solvers (Clarke-Wright savings, an iterated local search) and the ACO that
// an evolved heuristic matrix steers (ReEvo's CVRP-ACO).
#pragma once
#include <cstdint>
#include <vector>

#include "nk/rng.hpp"
#include "simple-evol/problem.hpp"

namespace sevol {

/// Sum of d over consecutive nodes of the sequence.
double routes_length(const std::vector<double>& dist, int64_t nodes, const std::vector<int64_t>& routes);
/// Empty when 'routes' serves every customer exactly once within capacity,
/// starting and ending at the depot; else what is wrong.
std::string check_routes(const Instance& item, const std::vector<int64_t>& routes);

/// Clarke-Wright savings, parallel version (savings d0i + d0j - dij, largest
/// first, ties by (i, j)).
std::vector<int64_t> cvrp_savings(const Instance& item, const std::vector<double>& dist);
/// From the savings solution: relocate, swap and intra-route 2-opt to a local
/// optimum, then 'kicks' ruin-and-recreate rounds (remove n/20 to n/6
/// customers, near a random one or scattered, reinsert each in random order
/// at its cheapest feasible place, local search), accepted by record-to-record
/// travel (better than the current, or within a threshold of the best that
/// shrinks from 2% to 0).
std::vector<int64_t> cvrp_ils(const Instance& item, const std::vector<double>& dist, int64_t kicks, nk::Rng& rng);

struct AcoConfig {
  int64_t ants = 30;
  int64_t iterations = 100;
  double decay = 0.9;  ///< pheromone kept per iteration
  double alpha = 1, beta = 1;
  bool greedy = false;  ///< each ant takes the most probable move (lowest index on ties): deterministic
};

/// ReEvo's CVRP-ACO with the heuristic matrix 'eta' [nodes, nodes] (already
/// clipped to >= 1e-9): ants move with probability ~ tau^alpha eta^beta among
/// unvisited customers that fit and the depot (not from the depot while
/// customers remain); pheromone tau <- decay tau + sum over ants of 1/L on
/// their edges, floored at 1e-10. Returns the best routes found.
std::vector<int64_t> cvrp_aco(const Instance& item, const std::vector<double>& dist, const std::vector<double>& eta,
                              const AcoConfig& config, nk::Rng& rng);

}  // namespace sevol
