// test_cli.cpp - the shared command line: exit codes, provenance and the run environment.
#include <doctest/doctest.h>

#include <cstdlib>

#include "nk/cli.hpp"
#include "nk/context.hpp"
#include "nk/error.hpp"

namespace {
int run_with(std::vector<std::string> args, const std::function<void()>& body = [] {}) {
  nk::cli::App cli("nk-test", "test tool");
  int value = 0;
  cli.app().add_option("--value", value)->check(CLI::Range(0, 10));
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return cli.run(static_cast<int>(argv.size()), argv.data(), body);
}

/// A tool with a seeded verb 'gen' (with --shard) and a plain verb 'build';
/// 'seen' is env() as the body sees it.
int run_verbs(std::vector<std::string> args, nk::RunEnv& seen) {
  nk::cli::App cli("nk-test", "test tool");
  cli.add_verb("build", "draws no random numbers");
  CLI::App* gen = cli.add_verb("gen", "draws random numbers", nk::cli::Randomness::seeded);
  cli.add_shard(*gen);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return cli.run(static_cast<int>(argv.size()), argv.data(), [&] { seen = cli.env(); });
}
}  // namespace

TEST_SUITE("cli") {
  TEST_CASE("parse errors exit 2, errors keep their code, success is 0") {
    CHECK(run_with({"nk-test"}) == 0);
    CHECK(run_with({"nk-test", "--bogus"}) == 2);
    CHECK(run_with({"nk-test", "--value", "11"}) == 2);
    CHECK(run_with({"nk-test", "--device", "tpu"}) == 2);
    CHECK(run_with({"nk-test"}, [] { throw nk::input_error("f.h5", "/x", "bad"); }) == 3);
    CHECK(run_with({"nk-test"}, [] { throw nk::io_error("f.h5", "gone"); }) == 4);
    CHECK(run_with({"nk-test"}, [] { throw std::runtime_error("boom"); }) == 1);
  }

  TEST_CASE("every numeric option takes a number: finite FLOATs, non-negative UINTs, never empty (exit 2)") {
    auto run_numbers = [](std::vector<std::string> args) {
      nk::cli::App cli("nk-test", "test tool");
      CLI::App* verb = cli.add_verb("fit", "has numeric options", nk::cli::Randomness::seeded);
      double rate = 0;
      std::vector<double> grid;
      int count = 0;
      verb->add_option("--rate", rate)->check(CLI::Range(0.0, 1.0));
      verb->add_option("--grid", grid)->delimiter(',');
      verb->add_option("--count", count);
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      return cli.run(static_cast<int>(argv.size()), argv.data(), [] {});
    };
    CHECK(run_numbers({"nk-test", "fit", "--rate", "0.5", "--grid", "1,2.5", "--count", "-3", "--seed", "7"}) == 0);
    for (const char* bad : {"nan", "NaN", "inf", "-inf", "", " "}) {
      CAPTURE(bad);
      CHECK(run_numbers({"nk-test", "fit", "--rate", bad}) == 2);  // CLI11's Range alone lets NaN through
      CHECK(run_numbers({"nk-test", "fit", "--grid", std::string("1,") + bad}) == (std::string(bad).empty() ? 0 : 2));  // "1," is the list {1}
    }
    CHECK(run_numbers({"nk-test", "fit", "--count", ""}) == 2);
    CHECK(run_numbers({"nk-test", "fit", "--seed", "-1"}) == 2);  // strtoull would wrap it to 2^64 - 1
    CHECK(run_numbers({"nk-test", "--seed", "-1", "fit"}) == 2);
    CHECK(run_numbers({"nk-test", "fit", "--seed", "18446744073709551616"}) == 2);  // 2^64
    CHECK(run_numbers({"nk-test", "fit", "--seed", "18446744073709551615"}) == 0);
    CHECK(run_numbers({"nk-test", "fit", "--count", "99999999999999999999"}) == 2);
    CHECK(run_numbers({"nk-test", "fit", "--rate", "1e400"}) == 2);
  }

  TEST_CASE("the run context records the tool and the command line") {
    run_with({"nk-test", "--value", "3", "--seed", "9"});
    CHECK(nk::run_context().tool == "nk-test");
    CHECK(nk::run_context().command == "nk-test --value 3 --seed 9");
    const char* argv[] = {"tool", "a b", "it's"};
    CHECK(nk::join_command(3, argv) == "tool 'a b' 'it'\\''s'");
  }

  TEST_CASE("a seeded verb shows --seed and sets nk_seed, before or after the verb; a plain verb does neither") {
    nk::cli::App cli("nk-test", "test tool");
    CLI::App* build = cli.add_verb("build", "draws no random numbers");
    CLI::App* gen = cli.add_verb("gen", "draws random numbers", nk::cli::Randomness::seeded);
    CHECK(gen->help().find("--seed") != std::string::npos);
    CHECK(build->help().find("--seed") == std::string::npos);

    nk::RunEnv env;
    for (const std::vector<std::string>& args : {std::vector<std::string>{"nk-test", "--seed", "9", "gen"},
                                                 std::vector<std::string>{"nk-test", "gen", "--seed", "9"}}) {
      CHECK(run_verbs(args, env) == 0);
      CHECK(env.seed == 9);
      CHECK(nk::run_context().seed == 9u);
    }
    CHECK(run_verbs({"nk-test", "--seed", "9", "build"}, env) == 0);
    CHECK(env.seed == 9);
    CHECK_FALSE(nk::run_context().seed.has_value());
  }

  TEST_CASE("--shard is resolved once, into env().shard and nk_shard") {
    for (const char* name :
         {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_STEP", "SLURM_ARRAY_TASK_COUNT"}) {
      unsetenv(name);
    }
    nk::RunEnv env;
    CHECK(run_verbs({"nk-test", "gen", "--shard", "1/3"}, env) == 0);
    CHECK(env.shard.text() == "1/3");
    CHECK(nk::run_context().shard == "1/3");
    CHECK(run_verbs({"nk-test", "gen"}, env) == 0);
    CHECK(env.shard.whole());
    CHECK(nk::run_context().shard.empty());
    setenv("SLURM_ARRAY_TASK_ID", "2", 1);
    setenv("SLURM_ARRAY_TASK_COUNT", "4", 1);
    CHECK(run_verbs({"nk-test", "gen"}, env) == 0);
    CHECK(env.shard.text() == "2/4");
    CHECK(run_verbs({"nk-test", "build"}, env) == 0);
    CHECK(env.shard.whole());
    CHECK(nk::run_context().shard.empty());
    unsetenv("SLURM_ARRAY_TASK_ID");
    unsetenv("SLURM_ARRAY_TASK_COUNT");
    CHECK(run_verbs({"nk-test", "gen", "--shard", "3/3"}, env) == 2);
  }

  TEST_CASE("env() has the resolved thread count and device") {
    nk::RunEnv env;
    CHECK(run_verbs({"nk-test", "--threads", "3", "--device", "cpu", "build"}, env) == 0);
    CHECK(env.threads == 3);
    CHECK(env.device == nk::DeviceKind::cpu);
    CHECK_FALSE(env.cuda());
    CHECK(run_verbs({"nk-test", "build", "--threads", "0", "--device", "cpu"}, env) == 0);
    CHECK(env.threads >= 1);
    // The default: SLURM_CPUS_PER_TASK, else OMP_NUM_THREADS (its first number), else every core.
    const char* omp = std::getenv("OMP_NUM_THREADS");
    const std::string saved = omp ? omp : "";
    setenv("OMP_NUM_THREADS", "5,2", 1);
    CHECK(run_verbs({"nk-test", "build", "--device", "cpu"}, env) == 0);
    CHECK(env.threads == 5);
    setenv("SLURM_CPUS_PER_TASK", "6", 1);
    CHECK(run_verbs({"nk-test", "build", "--device", "cpu"}, env) == 0);
    CHECK(env.threads == 6);
    CHECK(run_verbs({"nk-test", "build", "--threads", "2", "--device", "cpu"}, env) == 0);
    CHECK(env.threads == 2);
    unsetenv("SLURM_CPUS_PER_TASK");
    setenv("OMP_NUM_THREADS", "zero", 1);
    CHECK(run_verbs({"nk-test", "build", "--device", "cpu"}, env) == 0);
    CHECK(env.threads >= 1);
    if (omp) setenv("OMP_NUM_THREADS", saved.c_str(), 1); else unsetenv("OMP_NUM_THREADS");
  }

  TEST_CASE("--version names the libraries and the CUDA module state") {
    const std::string text = nk::cli::version_text("nk-test");
    CHECK(text.rfind("nk-test ", 0) == 0);
    for (const char* part : {"HDF5 ", "Eigen ", "CLI11 ", "FFTW ", "CUDA module: "}) {
      CHECK(text.find(part) != std::string::npos);
    }
  }
}
