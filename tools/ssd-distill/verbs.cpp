// verbs.cpp - tasks: generate or convert the knowledge to internalise.
#include <filesystem>

#include "nk/error.hpp"
#include "nk/log.hpp"
#include "ssd-distill/ssd.hpp"

namespace ssd {

void check_output(const std::string& path, bool no_clobber) {
  if (no_clobber && path != "-" && std::filesystem::exists(path))
    throw nk::io_error(path, "exists, and --no-clobber was given");
}

void tasks_verb(const TasksOptions& o, const nk::RunEnv& env) {
  check_output(o.output, o.no_clobber);
  TaskSpec spec = o.spec;
  spec.seed = env.seed;
  const Tasks t = o.from_jsonl.empty() ? generate_tasks(spec) : read_tasks_jsonl(o.from_jsonl);
  write_tasks(t, o.output, o.no_clobber);
  spdlog::info("tasks: {} ({} documents, {} training and {} test questions)", t.task, t.size(), t.train.size(),
               t.test.size());
}

}  // namespace ssd
