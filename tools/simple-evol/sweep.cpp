// sweep.cpp - problems x frameworks x surrogate rungs x seeds, one evolve run
// file each, on a preset's data (made once by the tool's own gen and solve).
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "nk/atomic_file.hpp"
#include "nk/error.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "nk/rng.hpp"
#include "nk/shard.hpp"
#include "simple-evol/frameworks.hpp"
#include "simple-evol/simple_evol.hpp"

extern char** environ;

namespace sevol {

namespace {

/// Runs this binary with 'args' (gen and solve use OpenMP: a child keeps this
/// process, the Python zygote, single-threaded).
void run_self(const std::vector<std::string>& args) {
  std::vector<std::string> all = {"simple-evol", "-q"};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), environ) != 0) {
    throw nk::Error(nk::Exit::runtime, "sweep: cannot start simple-evol " + args[0]);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string line;
    for (const std::string& a : args) line += " " + a;
    throw nk::Error(nk::Exit::runtime, "sweep: 'simple-evol" + line + "' failed");
  }
}

struct Dataset {
  std::string train;
  std::vector<std::string> tests;
};

/// The preset's files in DIR/data, made when missing (same --seed, same files).
Dataset prepare(const std::string& folder, const std::string& problem, const std::string& preset, uint64_t seed,
                int threads) {
  namespace fs = std::filesystem;
  const fs::path data = fs::path(folder) / "data";
  fs::create_directories(data);
  const bool paper = preset == "paper";
  const std::string s = std::to_string(seed), t = std::to_string(threads);
  Dataset d;
  auto make = [&](const std::string& name, std::vector<std::string> gen, const std::string& method,
                  const std::string& iterations) {
    const std::string target = (data / (problem + "-" + name + ".h5")).string();
    if (!fs::exists(target)) {
      const std::string raw = (data / (problem + "-" + name + ".raw.h5")).string();
      gen.insert(gen.begin(), "gen");
      gen.insert(gen.end(), {"--problem", problem, "--seed", s, "-o", raw});
      run_self(gen);
      if (method.empty()) {
        fs::rename(raw, target);
      } else {
        run_self({"solve", "-i", raw, "--method", method, "--iterations", iterations, "--store-reference", "--seed", s,
                  "--threads", t, "-o", target});
        fs::remove(raw);
      }
    }
    return target;
  };
  if (problem == "tsp") {
    d.train = make("train", {"--count", paper ? "64" : "16", "--nodes", paper ? "50" : "30"}, "ils", "0");
    for (const char* n : paper ? std::vector<const char*>{"50", "100", "200"} : std::vector<const char*>{"50"}) {
      d.tests.push_back(make(std::string("test") + n, {"--count", paper ? "64" : "16", "--nodes", n}, "ils", "0"));
    }
  } else if (problem == "cvrp") {
    d.train =
        make("train", {"--count", paper ? "10" : "4", "--nodes", paper ? "50" : "20"}, "ils", paper ? "0" : "300");
    for (const char* n : paper ? std::vector<const char*>{"50", "100", "200"} : std::vector<const char*>{"30"}) {
      d.tests.push_back(
          make(std::string("test") + n, {"--count", paper ? "64" : "8", "--nodes", n}, "ils", paper ? "0" : "300"));
    }
  } else {
    d.train =
        make("train", {"--count", paper ? "16" : "4", "--jobs", paper ? "50" : "20"}, "ig", paper ? "1000" : "300");
    d.tests.push_back(make("test", {"--taillard", paper ? "all" : "20x5"}, "", ""));
  }
  return d;
}

}  // namespace

void sweep_verb(const SweepOptions& o, const nk::RunEnv& env) {
  namespace fs = std::filesystem;
  if (o.preset != "small" && o.preset != "paper")
    throw nk::usage_error("--preset: '" + o.preset + "' (small or paper)");
  const std::vector<int> rungs = parse_rungs(o.rungs);
  for (const std::string& p : o.problems) parse_problem(p, "--problems");
  for (const std::string& f : o.frameworks) framework_shape(f);
  struct Item {
    std::string problem, framework;
    int rung;
    int64_t seed;
  };
  std::vector<Item> items;
  for (const std::string& p : o.problems) {
    for (const std::string& f : o.frameworks) {
      for (int r : rungs) {
        for (int64_t s = 1; s <= o.seeds; ++s) items.push_back({p, f, r, s});
      }
    }
  }
  const auto [begin, end] = nk::shard_range(env.shard, static_cast<int64_t>(items.size()));
  fs::create_directories(fs::path(o.output) / "runs");
  const bool paper = o.preset == "paper";
  nk::Progress progress("sweep", end - begin);
  for (int64_t i = begin; i < end; ++i) {
    const Item& it = items[i];
    const std::string name =
        it.problem + "-" + it.framework + "-r" + std::to_string(it.rung) + "-s" + std::to_string(it.seed) + ".h5";
    const std::string target = (fs::path(o.output) / "runs" / name).string();
    if (fs::exists(target)) {  // a resumed sweep keeps finished runs
      progress.update(i - begin + 1);
      continue;
    }
    const Dataset data = prepare(o.output, it.problem, o.preset, env.seed, env.threads);
    EvolveOptions e;
    e.input = data.train;
    e.tests = data.tests;
    e.output = target;
    e.framework = it.framework;
    e.llm = "surrogate:" + std::to_string(it.rung);
    e.budget = o.budget > 0 ? o.budget : paper ? 820 : 60;
    e.eval = o.eval;
    if (!paper) {
      e.eval.ants = 10;
      e.eval.aco_iterations = 20;
      e.eval.gls_iterations = 50;
    }
    nk::RunEnv run_env = env;
    run_env.seed = nk::mix64(env.seed ^ static_cast<uint64_t>(it.seed) * 0x9e3779b97f4a7c15ULL);
    {
      const nk::PublishNow publish;  // each run is there to resume from, whatever happens to the next
      evolve_verb(e, run_env);
    }
    progress.update(i - begin + 1);
  }
  progress.finish();
  spdlog::info("sweep: {} runs (items {}..{} of {}) in {}", end - begin, begin, end, items.size(), o.output);
}

}  // namespace sevol
