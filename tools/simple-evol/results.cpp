// results.cpp - the results file that solve and eval write.
#include <cmath>

#include "nk/h5.hpp"
#include "simple-evol/simple_evol.hpp"

namespace sevol {

void write_results(nk::h5::Writer& out, const InstanceSet& set, const std::vector<InstanceResult>& results) {
  const int64_t k = static_cast<int64_t>(results.size());
  std::vector<double> objective, gap, runtime;
  std::vector<int64_t> solution, offsets = {0};
  std::vector<std::string> ids;
  double sum_obj = 0, sum_gap = 0;
  bool all_ok = true, all_gaps = true;
  for (int64_t i = 0; i < k; ++i) {
    const InstanceResult& r = results[i];
    const Instance& item = set.items[i];
    objective.push_back(r.status == Status::ok ? r.objective : NAN);
    const double g = r.status == Status::ok && !std::isnan(item.reference) ? r.objective / item.reference - 1.0 : NAN;
    gap.push_back(g);
    runtime.push_back(r.runtime);
    solution.insert(solution.end(), r.solution.begin(), r.solution.end());
    offsets.push_back(static_cast<int64_t>(solution.size()));
    ids.push_back(item.id);
    all_ok = all_ok && r.status == Status::ok;
    all_gaps = all_gaps && !std::isnan(g);
    sum_obj += objective.back();
    sum_gap += g;
  }
  out.allow_nonfinite("/objective");
  out.allow_nonfinite("/gap");
  out.write("/objective", objective.data(), {k}, "K");
  out.write("/gap", gap.data(), {k}, "K");
  out.write("/runtime", runtime.data(), {k}, "K", "s");
  out.write("/solution", solution.data(), {static_cast<int64_t>(solution.size())}, "NODES");
  out.write("/solution_offsets", offsets.data(), {k + 1}, "K+1");
  out.write_strings("/instance", ids, "K");
  out.attr("/", "problem", problem_name(set.problem));
  out.attr("/", "mean_objective", all_ok ? sum_obj / static_cast<double>(k) : NAN);
  out.attr("/", "mean_gap", all_ok && all_gaps ? sum_gap / static_cast<double>(k) : NAN);
  out.attr("/", "instances", k);
}

}  // namespace sevol
