// eval.cpp - one heuristic file scored on an instance file.
#include <cmath>
#include <fstream>
#include <sstream>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "simple-evol/simple_evol.hpp"

namespace sevol {

EvalConfig eval_config(const EvalOptions& o, const nk::RunEnv& env) {
  EvalConfig config;
  config.function = o.function;
  config.timeout = o.timeout;
  config.total_timeout = o.total_timeout;
  config.memory_bytes = o.memory_mb << 20;
  config.workers = env.threads;
  config.sandbox = parse_sandbox(o.sandbox);
  config.aco.ants = o.ants;
  config.aco.iterations = o.aco_iterations;
  config.aco.greedy = o.greedy_ants;
  config.gls.iterations = o.gls_iterations;
  config.seed = env.seed;
  return config;
}

void eval_verb(const EvalOptions& o, const nk::RunEnv& env) {
  std::ifstream in(o.heuristic, std::ios::binary);
  if (!in) throw nk::io_error(o.heuristic, "cannot read the heuristic");
  std::stringstream code;
  code << in.rdbuf();
  if (code.str().size() > (size_t{1} << 24)) throw nk::input_error(o.heuristic, "", "is larger than 16 MiB: refused");
  const InstanceSet set = read_instances(o.input);
  EvalConfig config = eval_config(o, env);
  config.code = code.str();
  // the zygote starts before the output exists; nothing is written if the harness fails
  const EvalReport report = evaluate(set, config);

  const int64_t k = static_cast<int64_t>(set.items.size());
  std::vector<int8_t> status;
  std::vector<std::string> errors;
  std::vector<double> heuristic_seconds;
  int64_t ok = 0;
  double harness = 0, heuristic = 0;
  for (const InstanceResult& r : report.items) {
    status.push_back(static_cast<int8_t>(r.status));
    errors.push_back(r.error);
    heuristic_seconds.push_back(r.heuristic_seconds);
    ok += r.status == Status::ok;
    heuristic += r.heuristic_seconds;
    harness += r.runtime - r.heuristic_seconds;
  }
  nk::h5::Writer out(o.output, kResultsSchema, o.no_clobber);
  write_results(out, set, report.items);
  out.write("/status", status.data(), {k}, "K");
  out.write_strings("/error", errors, "K");
  out.write("/heuristic_seconds", heuristic_seconds.data(), {k}, "K", "s");
  out.attr("/", "heuristic", o.heuristic);
  out.attr("/", "function", config.function.empty() ? default_function(set.problem) : config.function);
  out.attr("/", "instances_ok", ok);
  out.attr("/", "wall_seconds", report.wall_seconds);
  out.attr("/", "harness_seconds", harness);
  out.attr("/", "heuristic_total_seconds", heuristic);
  out.attr("/", "sandbox", o.sandbox);
  out.commit();
  spdlog::info("{}: {} of {} instances ok; heuristic {:.3f} s, harness {:.3f} s, wall {:.3f} s", o.heuristic, ok, k,
               heuristic, harness, report.wall_seconds);
}

}  // namespace sevol
