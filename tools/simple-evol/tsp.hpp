// tsp.hpp - the travelling salesman side: the distance matrix as numpy builds
// it, tour lengths, and the reference solvers of solve --method (exact,
// nn, fi, ils). Tours are permutations of 0..n-1 starting at node 0.
#pragma once
#include <cstdint>
#include <vector>

#include "nk/rng.hpp"

namespace sevol {

/// [n,n] row-major: d(i,j) = sqrt(dx*dx + dy*dy), rounded as numpy and
/// scipy.spatial.distance_matrix round it (no fused multiply-add).
std::vector<double> distance_matrix(const std::vector<double>& coords);

/// The closed tour's length, summed in tour order from node tour[0] (the
/// order ReEvo's evaluator adds in).
double tour_length(const std::vector<double>& dist, const std::vector<int64_t>& tour);

/// Largest n the exact solver accepts (its table holds 2^(n-1) (n-1) doubles).
inline constexpr int64_t kHeldKarpMax = 20;
/// Held-Karp dynamic programme: an optimal tour (n <= kHeldKarpMax).
std::vector<int64_t> tsp_held_karp(const std::vector<double>& dist, int64_t n);
/// Nearest neighbour from node 0 (ties: the lower index).
std::vector<int64_t> tsp_nearest_neighbor(const std::vector<double>& dist, int64_t n);
/// Farthest insertion from node 0 and its farthest node; each new node is
/// inserted where it lengthens the tour least (ties: the lower index / the
/// earlier position).
std::vector<int64_t> tsp_farthest_insertion(const std::vector<double>& dist, int64_t n);
/// 2-opt + Or-opt local search; with kicks > 0, iterated local search:
/// a segment double-bridge kick in a random window, local search, keep if
/// shorter. Starts from farthest insertion.
std::vector<int64_t> tsp_local_search(const std::vector<double>& dist, int64_t n, std::vector<int64_t> tour);
std::vector<int64_t> tsp_ils(const std::vector<double>& dist, int64_t n, int64_t kicks, nk::Rng& rng);

}  // namespace sevol
