// test_cli.cpp - the shared command line: exit codes and provenance.
#include <doctest/doctest.h>

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

  TEST_CASE("the run context records the tool and the command line") {
    run_with({"nk-test", "--value", "3", "--seed", "9"});
    CHECK(nk::run_context().tool == "nk-test");
    CHECK(nk::run_context().command == "nk-test --value 3 --seed 9");
    const char* argv[] = {"tool", "a b", "it's"};
    CHECK(nk::join_command(3, argv) == "tool 'a b' 'it'\\''s'");
  }

  TEST_CASE("--version names the libraries and the CUDA module state") {
    const std::string text = nk::cli::version_text("nk-test");
    CHECK(text.rfind("nk-test ", 0) == 0);
    for (const char* part : {"HDF5 ", "Eigen ", "CLI11 ", "FFTW ", "CUDA module: "}) {
      CHECK(text.find(part) != std::string::npos);
    }
  }
}
