// taillard.hpp - Taillard's (1993) permutation flow-shop benchmark: his
// generator (a Lehmer LCG), the 120 instances' seeds and best-known upper
// bounds, and his machine/job lower bound.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "simple-evol/problem.hpp"

namespace sevol {

struct TaillardEntry {
  const char* name;  ///< "ta001" .. "ta120"
  int jobs, machines;
  int64_t time_seed;
  int upper_bound;  ///< best known makespan (older values for the 50x20, 100x20, 200x20, 500x20 classes)
  int lower_bound;  ///< Taillard's bound, as computed by taillard_lower_bound
  int64_t sum_p;    ///< sum of all processing times: a checksum of the generator
};

/// The 120 instances in Taillard's order.
const std::vector<TaillardEntry>& taillard_table();

/// Taillard's generator: seed' = 16807 seed mod (2^31 - 1) by Schrage's
/// method, p = 1 + floor(seed'/(2^31-1) * 99), machine by machine, job by job.
/// Returns [machines, jobs] machine-major.
std::vector<int32_t> taillard_processing(int64_t time_seed, int64_t jobs, int64_t machines);

/// max(max over machines i of (min head before i + sum on i + min tail after
/// i), max over jobs of its total time).
int64_t taillard_lower_bound(const Instance& item);

/// The instances a --taillard list names: "ta001", a class "20x5" (jobs x
/// machines: its ten instances), "all" (the 110 up to 200 jobs) or "all500"
/// (all 120), comma-separated. Unknown names are exit 3 naming the option.
std::vector<TaillardEntry> taillard_select(const std::string& list);

/// A flow-shop instance from a table entry (reference = upper bound).
Instance taillard_instance(const TaillardEntry& entry);

}  // namespace sevol
