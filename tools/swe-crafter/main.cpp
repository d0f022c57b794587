// main.cpp - swe-crafter: executable multilingual SWE instances from real
// repositories (SWE-Crafter): fetch, env, mine, validate, distill, run,
// stats, doctor.
#include "nk/cli.hpp"
#include "swe-crafter/runlog.hpp"
#include "swe-crafter/swe_crafter.hpp"

int main(int argc, char** argv) {
  nk::cli::App cli("swe-crafter",
                   "SWE-Crafter: executable SWE instances (repository, commit, issue, gold patch, fail-to-pass tests) "
                   "from real repositories");
  cli.app().require_subcommand(1);
  auto store = [](CLI::App* verb, swec::StoreOptions& o) {
    verb->add_option("--store", o.store, "The store: a git repository per source (default ./swe-store)");
  };
  auto log = [](CLI::App* verb, swec::StoreOptions& o) {
    verb->add_option("--log", o.log, "The run log (HDF5): every command, environment, verdict and trajectory");
  };

  swec::FetchOptions fetch;
  CLI::App* fetch_verb = cli.add_verb(
      "fetch", "A source into the store as a git repository: git:PATH, debian-bin:PKG, debian-src:PKG, pypi:NAME");
  fetch_verb
      ->add_option("source", fetch.source,
                   "git:PATH (a clone; the repository is only read), debian-bin:PKG (an installed package's source "
                   "tree, e.g. golang-*-dev), debian-src:PKG|FILE.dsc (a source package: upstream, then a commit per "
                   "Debian patch) or pypi:NAME[==VERSION] (consecutive releases' sdists, a commit each)")
      ->required();
  fetch_verb->add_option("--versions", fetch.versions, "pypi: consecutive releases, ending at VERSION or the latest")
      ->check(CLI::Range(1, 1000));
  fetch_verb->add_option("--pypi-index", fetch.pypi_index,
                         "pypi: the JSON API (default https://pypi.org/pypi; a mirror, or file://FOLDER laid out as "
                         "FOLDER/NAME/json)");
  fetch_verb->add_option("--name", fetch.name, "The repository's name in the store (default: from the source)");
  store(fetch_verb, fetch);

  swec::EnvOptions env;
  CLI::App* env_verb = cli.add_verb("env", "Detect build system and test interface, build and test in the sandbox");
  env_verb->add_option("-i,--input", env.input, "A repository (folder or store name)")->required();
  nk::cli::App::add_output(*env_verb, env.output, env.no_clobber, "env.json");
  env_verb
      ->add_option("--method", env.method,
                   "skills (evidence-selected skills, failures fixed and retried; default) or fixed (one command "
                   "set per build system, as SWE-bench and SWE-Gym)")
      ->check(CLI::IsMember({"skills", "fixed"}));
  env_verb->add_option("--skills", env.skills, "A folder of more *.skill files (repeatable)");
  env_verb->add_option("--induce", env.induce,
                       "Write what worked (when it took more than the first attempt) as a skill into this folder, "
                       "merged with one that runs the same commands");
  env_verb->add_option("--attempts", env.attempts, "Attempts at most (skills)")->check(CLI::Range(1, 1000));
  env_verb->add_option("--rev", env.rev, "The commit to build (default HEAD)");
  env_verb->add_option("--sandbox", env.sandbox, "namespace (no network, writes only to scratch) or none")
      ->check(CLI::IsMember({"namespace", "none"}));
  env_verb->add_option("--timeout", env.timeout, "Seconds per command (its process group is killed)")
      ->check(CLI::Range(1.0, 1e6));
  env_verb->add_option("--memory", env.memory, "MiB per command, by a memory cgroup where one can be made (0: none)")
      ->check(CLI::Range(0.0, 1e9));
  store(env_verb, env);
  log(env_verb, env);

  swec::MineOptions mine;
  CLI::App* mine_verb = cli.add_verb(
      "mine", "Candidate instances: commits touching code and tests, split by the test-file rule; or synthetic bugs",
      nk::cli::Randomness::seeded);
  mine_verb->add_option("-i,--input", mine.input, "A repository (folder or store name)")->required();
  nk::cli::App::add_output(*mine_verb, mine.output, mine.no_clobber, "candidates (JSONL)");
  mine_verb->add_option("--rev", mine.rev, "The history's tip (default HEAD; first parents only)");
  mine_verb->add_option("--env", mine.env_file, "env.json whose commands the candidates carry");
  mine_verb->add_option("--max", mine.max, "Candidates at most (0: all)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  mine_verb
      ->add_option("--synthetic", mine.synthetic,
                   "N SWE-smith-style bugs (one mutated line of a function) that break tests passing at --rev")
      ->check(CLI::Range(int64_t{0}, int64_t{100000}));
  mine_verb->add_option("--agent-cmd", mine.agent_cmd,
                        "--synthetic: an agent (an LLM) that writes each bug's problem statement: one JSON line in "
                        "(the bug, failing tests, output), one out ({\"problem_statement\": ...})");
  mine_verb
      ->add_option("--sandbox", mine.sandbox, "--synthetic: namespace (no network, writes only to scratch) or none")
      ->check(CLI::IsMember({"namespace", "none"}));
  mine_verb->add_option("--timeout", mine.timeout, "--synthetic: seconds per command")->check(CLI::Range(1.0, 1e6));
  mine_verb->add_option("--memory", mine.memory, "MiB per command, by a memory cgroup where one can be made (0: none)")
      ->check(CLI::Range(0.0, 1e9));
  store(mine_verb, mine);
  log(mine_verb, mine);

  swec::ValidateOptions val;
  CLI::App* validate_verb =
      cli.add_verb("validate", "Fail-to-pass validation (or, for instances with FAIL_TO_PASS, the harness re-check)");
  validate_verb->add_option("-i,--input", val.input, "Candidates or instances (JSONL, '-' = standard input)")
      ->required();
  nk::cli::App::add_optional_output(*validate_verb, val.output, val.no_clobber,
                                    "the admitted instances (or those that hold) as JSONL");
  validate_verb->add_option("--runs", val.runs, "Runs of each state (a test that varies within a state is flaky)")
      ->check(CLI::Range(1, 100));
  validate_verb->add_option("--status-maps", val.status_maps,
                            "Every run's test statuses as JSON lines (instance_id, state, run, summary, status: "
                            "test -> PASSED|FAILED|SKIPPED|ERROR), for SWE-bench's grading");
  validate_verb->add_flag("--full-suite", val.full_suite,
                          "Run the whole suite, not only the test files test_patch touches");
  validate_verb->add_flag("--fresh", val.fresh,
                          "Build every state from scratch (a fresh checkout, install and build), as SWE-bench's "
                          "harness does; by default a repository's states share a workspace prepared once and "
                          "rebuild only what they change");
  validate_verb->add_option("--sandbox", val.sandbox, "namespace (no network, writes only to scratch) or none")
      ->check(CLI::IsMember({"namespace", "none"}));
  validate_verb->add_option("--timeout", val.timeout, "Seconds per command (its process group is killed)")
      ->check(CLI::Range(1.0, 1e6));
  validate_verb
      ->add_option("--memory", val.memory, "MiB per command, by a memory cgroup where one can be made (0: none)")
      ->check(CLI::Range(0.0, 1e9));
  cli.add_shard(*validate_verb);
  store(validate_verb, val);
  log(validate_verb, val);

  swec::DistillOptions dist;
  CLI::App* distill_verb =
      cli.add_verb("distill", "Agent trajectories on validated instances; the resolved ones kept (JSONL)");
  distill_verb->add_option("-i,--input", dist.input, "Validated instances (JSONL, '-' = standard input)")->required();
  nk::cli::App::add_output(*distill_verb, dist.output, dist.no_clobber, "resolved trajectories (JSONL)");
  distill_verb->add_option("--agent", dist.agent, "builtin: the non-LLM repair baseline")
      ->check(CLI::IsMember({"builtin"}));
  distill_verb->add_option("--agent-cmd", dist.agent_cmd,
                           "An agent as a command: JSON lines in (task, observations), JSON lines out (actions)");
  distill_verb->add_option("--max-steps", dist.max_steps, "Actions per trajectory")->check(CLI::Range(1, 100000));
  distill_verb
      ->add_option("--max-seconds", dist.max_seconds,
                   "Wall-clock seconds per trajectory: no action starts after them (0: no limit)")
      ->check(CLI::Range(0.0, 1e7));
  distill_verb->add_flag("--fresh", dist.fresh,
                         "The agent's workspace and the grading from scratch (by default both start from the "
                         "repository's prepared workspace, as validate's states do)");
  distill_verb->add_option("--sandbox", dist.sandbox, "namespace (no network, writes only to scratch) or none")
      ->check(CLI::IsMember({"namespace", "none"}));
  distill_verb->add_option("--timeout", dist.timeout, "Seconds per command (its process group is killed)")
      ->check(CLI::Range(1.0, 1e6));
  distill_verb
      ->add_option("--memory", dist.memory, "MiB per command, by a memory cgroup where one can be made (0: none)")
      ->check(CLI::Range(0.0, 1e9));
  cli.add_shard(*distill_verb);
  store(distill_verb, dist);
  log(distill_verb, dist);

  swec::RunOptions runo;
  CLI::App* run_verb = cli.add_verb(
      "run", "The whole pipeline over a corpus: fetch, env, mine, validate, distill per source (resumable)",
      nk::cli::Randomness::seeded);
  run_verb->add_option("--corpus", runo.corpus, "A source per line (as fetch takes them), a name after it")->required();
  run_verb->add_option("-o,--output", runo.output, "The run's folder (a folder per repository; resumed when there)")
      ->required();
  run_verb->add_option("--method", runo.method, "Environments: skills (default) or fixed")
      ->check(CLI::IsMember({"skills", "fixed"}));
  run_verb->add_option("--versions", runo.versions, "pypi sources: consecutive releases")->check(CLI::Range(1, 1000));
  run_verb->add_option("--pypi-index", runo.pypi_index, "pypi sources: the JSON API (see fetch)");
  run_verb->add_flag("--fixed-too", runo.fixed_too, "Also try the fixed method on each repository (for the tables)");
  run_verb->add_option("--skills", runo.skills, "A folder of more *.skill files (repeatable)");
  run_verb->add_option("--induce", runo.induce, "Write what worked as skills into this folder (see env)");
  run_verb->add_option("--attempts", runo.attempts, "Environment attempts at most (skills)")
      ->check(CLI::Range(1, 1000));
  run_verb->add_flag("!--no-history", runo.history, "Do not mine the history (only --synthetic bugs)");
  run_verb->add_option("--max", runo.max, "History candidates per repository at most (0: all)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  run_verb->add_option("--synthetic", runo.synthetic, "Synthetic bugs per repository (default 0)")
      ->check(CLI::Range(int64_t{0}, int64_t{100000}));
  run_verb->add_option("--runs", runo.runs, "Validation runs of each state")->check(CLI::Range(1, 100));
  run_verb->add_flag("--fresh", runo.fresh,
                     "Validation and distillation build every state from scratch (validate --fresh, distill --fresh)");
  run_verb->add_option("--agent", runo.agent, "builtin (default) or none (no trajectories)")
      ->check(CLI::IsMember({"builtin", "none"}));
  run_verb->add_option("--agent-cmd", runo.agent_cmd, "An agent as a command (see distill)");
  run_verb->add_option("--max-steps", runo.max_steps, "Actions per trajectory")->check(CLI::Range(1, 100000));
  run_verb->add_option("--max-seconds", runo.max_seconds, "Wall-clock seconds per trajectory (0: no limit)")
      ->check(CLI::Range(0.0, 1e7));
  run_verb->add_option("--sandbox", runo.sandbox, "namespace (no network, writes only to scratch) or none")
      ->check(CLI::IsMember({"namespace", "none"}));
  run_verb->add_option("--timeout", runo.timeout, "Seconds per command (its process group is killed)")
      ->check(CLI::Range(1.0, 1e6));
  run_verb->add_option("--memory", runo.memory, "MiB per command, by a memory cgroup where one can be made (0: none)")
      ->check(CLI::Range(0.0, 1e9));
  cli.add_shard(*run_verb);
  store(run_verb, runo);
  log(run_verb, runo);

  swec::StatsOptions stats;
  CLI::App* stats_verb =
      cli.add_verb("stats", "Tables by language from run logs (run.h5 or logs joined by nk-data merge); an SVG");
  stats_verb->add_option("-i,--input", stats.inputs, "Run logs (repeatable)")->required();
  nk::cli::App::add_optional_output(*stats_verb, stats.output, stats.no_clobber,
                                    "the table (Markdown; default stdout)");
  stats_verb->add_option("--svg", stats.svg, "Environments' success by language, fixed against skills, as SVG");

  swec::DoctorOptions doc;
  CLI::App* doctor_verb = cli.add_verb(
      "doctor", "Toolchains, the sandbox and memory limits on this machine; with -i a repository's Debian build "
                "dependencies, installed or not (TSV)");
  store(doctor_verb, doc);
  doctor_verb->add_option("-i,--input", doc.inputs, "A repository with debian/control (folder or store name; repeatable)");
  doctor_verb->add_flag("--missing", doc.missing,
                        "With -i: only the packages not installed, one per line (for apt-get install)");

  int status = 0;
  const int rc = cli.run(argc, argv, [&] {
    if (*fetch_verb) swec::fetch_verb(fetch, cli.env());
    auto write_log = [](const std::string& path) {
      if (!path.empty()) swec::RunLog::get().write(path, false);
    };
    if (*env_verb) swec::env_verb(env, cli.env()), write_log(env.log);
    if (*mine_verb) swec::mine_verb(mine, cli.env()), write_log(mine.log);
    if (*validate_verb) status = swec::validate_verb(val, cli.env()), write_log(val.log);
    if (*distill_verb) swec::distill_verb(dist, cli.env()), write_log(dist.log);
    if (*run_verb) swec::run_verb(runo, cli.env());
    if (*stats_verb) swec::stats_verb(stats, cli.env());
    if (*doctor_verb) swec::doctor_verb(doc, cli.env());
  });
  return rc != 0 ? rc : status;
}
