// solve.cpp - the reference solvers over an instance file, one instance per
// OpenMP task; --store-reference makes the result the gap's denominator.
#include <omp.h>

#include <cmath>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "nk/rng.hpp"
#include "nk/timer.hpp"
#include "simple-evol/cvrp.hpp"
#include "simple-evol/fssp.hpp"
#include "simple-evol/simple_evol.hpp"
#include "simple-evol/tsp.hpp"

namespace sevol {

namespace {

const char* methods_of(Problem p) {
  switch (p) {
    case Problem::tsp:
      return "exact, nn, fi, ils";
    case Problem::cvrp:
      return "savings, ils";
    case Problem::fssp:
      return "neh, ig";
  }
  return "";
}

bool known(Problem p, const std::string& m) {
  switch (p) {
    case Problem::tsp:
      return m == "exact" || m == "nn" || m == "fi" || m == "ils";
    case Problem::cvrp:
      return m == "savings" || m == "ils";
    case Problem::fssp:
      return m == "neh" || m == "ig";
  }
  return false;
}

InstanceResult solve_one(const InstanceSet& set, size_t k, const std::string& method, int64_t iterations,
                         uint64_t seed) {
  const Instance& item = set.items[k];
  InstanceResult r;
  nk::Stopwatch clock;
  nk::Rng rng = nk::Rng(seed).split(k);
  if (set.problem == Problem::tsp) {
    const int64_t n = item.nodes();
    const std::vector<double> dist = distance_matrix(item.coords);
    if (method == "exact") {
      r.solution = tsp_held_karp(dist, n);
    } else if (method == "nn") {
      r.solution = tsp_nearest_neighbor(dist, n);
    } else if (method == "fi") {
      r.solution = tsp_farthest_insertion(dist, n);
    } else {
      r.solution = tsp_ils(dist, n, iterations > 0 ? iterations : 100 * n, rng);
    }
    r.objective = tour_length(dist, r.solution);
  } else if (set.problem == Problem::cvrp) {
    const std::vector<double> dist = distance_matrix(item.coords);
    r.solution =
        method == "savings" ? cvrp_savings(item, dist) : cvrp_ils(item, dist, iterations > 0 ? iterations : 3000, rng);
    r.objective = routes_length(dist, item.nodes(), r.solution);
  } else {
    const FlowShop shop = FlowShop::from(item);
    if (method == "neh") {
      r.solution = fssp_neh(shop);
    } else {
      IgConfig ig;
      if (iterations > 0) ig.iterations = iterations;
      r.solution = fssp_ig(shop, ig, rng);
    }
    r.objective = makespan(shop, r.solution);
  }
  r.status = Status::ok;
  r.runtime = clock.seconds();
  return r;
}

}  // namespace

void solve_verb(const SolveOptions& o, const nk::RunEnv& env) {
  const InstanceSet set = read_instances(o.input);
  if (!known(set.problem, o.method)) {
    throw nk::usage_error("--method: '" + o.method + "' is not a " + problem_name(set.problem) + " method (" +
                          methods_of(set.problem) + ")");
  }
  if (o.method == "exact") {
    for (const Instance& item : set.items) {
      if (item.nodes() > kHeldKarpMax) {
        throw nk::input_error(o.input, "/instances/" + item.id + "/coords",
                              "has " + std::to_string(item.nodes()) + " nodes; the exact solver takes at most " +
                                  std::to_string(kHeldKarpMax));
      }
    }
  }
  const int64_t k = static_cast<int64_t>(set.items.size());
  std::vector<InstanceResult> results(static_cast<size_t>(k));
  nk::Progress progress("solve " + o.method, k);
  int64_t done = 0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(env.threads)
  for (int64_t i = 0; i < k; ++i) {
    results[i] = solve_one(set, static_cast<size_t>(i), o.method, o.iterations, env.seed);
#pragma omp critical
    progress.update(++done);
  }
  progress.finish();
  nk::h5::Writer out(o.output, kResultsSchema, o.no_clobber);
  write_results(out, set, results);
  out.attr("/", "method", o.method);
  if (o.store_reference) {
    InstanceSet with_ref = set;
    for (int64_t i = 0; i < k; ++i) with_ref.items[i].reference = results[i].objective;
    write_instances(out, with_ref);
    out.attr("/", "reference_method", o.method);
  }
  out.commit();
  double mean = 0;
  for (const auto& r : results) mean += r.objective / static_cast<double>(k);
  spdlog::info("{} {}: mean objective {:.6g} over {} instances", problem_name(set.problem), o.method, mean, k);
}

}  // namespace sevol
