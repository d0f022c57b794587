// gen.cpp - instance files: random TSP/CVRP/flow-shop sets as in the AHD
// literature, Taillard's flow-shop benchmark, TSPLIB/CVRPLIB imports.
#include <cmath>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/rng.hpp"
#include "simple-evol/simple_evol.hpp"
#include "simple-evol/taillard.hpp"

namespace sevol {

void gen_verb(const GenOptions& o, const nk::RunEnv& env) {
  InstanceSet set;
  if (!o.from_tsplib.empty()) {
    set = read_tsplib(o.from_tsplib);
  } else {
    set.problem = parse_problem(o.problem, "--problem");
    if (!o.taillard.empty()) {
      if (set.problem != Problem::fssp) throw nk::usage_error("--taillard: only with --problem fssp");
      int64_t k = 0;
      for (const TaillardEntry& e : taillard_select(o.taillard)) {
        Instance item = taillard_instance(e);
        item.id = instance_id(k++);
        set.items.push_back(std::move(item));
      }
    } else {
      const nk::Rng root(env.seed);
      for (int64_t k = 0; k < o.count; ++k) {
        nk::Rng rng = root.split(static_cast<uint64_t>(k));
        Instance item;
        item.id = instance_id(k);
        if (set.problem == Problem::tsp) {
          item.coords.resize(static_cast<size_t>(2 * o.nodes));
          for (double& c : item.coords) c = rng.uniform();
        } else if (set.problem == Problem::cvrp) {
          item.coords = {0.5, 0.5};
          item.demand = {0};
          for (int64_t v = 0; v < o.nodes; ++v) {
            item.coords.push_back(rng.uniform());
            item.coords.push_back(rng.uniform());
          }
          for (int64_t v = 0; v < o.nodes; ++v) item.demand.push_back(static_cast<int32_t>(1 + rng.below(9)));
          item.capacity = o.capacity;
        } else {
          item.jobs = o.jobs;
          item.machines = o.machines > 0 ? o.machines : 2 + static_cast<int64_t>(rng.below(19));
          // Taillard's own generator from a drawn time seed: anyone can regenerate the instance
          item.time_seed = 1 + static_cast<int64_t>(rng.below(2147483646));
          item.processing = taillard_processing(item.time_seed, item.jobs, item.machines);
          item.name = "gen" + item.id;
          item.lower_bound = static_cast<double>(taillard_lower_bound(item));
        }
        set.items.push_back(std::move(item));
      }
    }
  }
  validate_instances(o.from_tsplib.empty() ? "(generated)" : o.from_tsplib, set);
  nk::h5::Writer out(o.output, kInstancesSchema, o.no_clobber);
  write_instances(out, set);
  out.commit();
  spdlog::info("{} {} instances -> {}", set.items.size(), problem_name(set.problem), nk::display_name(o.output, true));
}

}  // namespace sevol
