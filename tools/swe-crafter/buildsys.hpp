// buildsys.hpp - a repository's build system and test interface, and the
// commands that build and test it, run in the sandbox on a workspace copy.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "nk/sandbox.hpp"
#include "swe-crafter/parsers.hpp"

namespace swec {

struct Environment {
  std::string language, build_system, install, build, test_cmd, log_parser;
  std::vector<std::string> evidence;  ///< what the choice rests on ("manifest: go.mod", ...)
  bool ok = false;
  int attempts = 0;
};

/// The fixed method (as SWE-bench and SWE-Gym prepare environments): one
/// command set per build system, picked by the manifest at the top of the
/// work tree (Cargo.toml, go.mod, Python's manifests or test files,
/// CMakeLists.txt, Makefile.PL or t/*.t, a Makefile with a check or test
/// target, composer.json, package.json). build_system "" when none is
/// recognised.
Environment detect_fixed(const std::string& work_tree);

/// install then build as one command ("" when there is nothing to do):
/// what every state runs before its tests.
std::string prepare_command(const std::string& install, const std::string& build);

/// The work tree's tracked files (at most 'limit').
std::vector<std::string> tracked_files(const std::string& work_tree, size_t limit = 20000);

/// The test command narrowed to the given test files where the runner takes
/// files or packages (pytest, prove, go test); the whole suite otherwise.
std::string test_command(const Environment& env, const std::vector<std::string>& test_files, bool full_suite);

/// The names as one extended regular expression that matches any of them: each name's metacharacters (and '/',
/// PHPUnit's delimiter) escaped, joined by '|' (ctest -R, go test -run, phpunit --filter).
std::string regex_alternation(const std::set<std::string>& names);

struct Sandbox {
  nk::SandboxMode mode = nk::SandboxMode::namespaces;
  double timeout = 900;      ///< seconds per command
  int64_t memory_bytes = 0;  ///< a memory cgroup's limit per command (0: none)
};

/// The sandbox of --sandbox, --timeout and --memory (MiB); the namespace mode
/// where it cannot run is exit 1, saying why ('whose': whose code would run
/// unconfined).
Sandbox make_sandbox(const std::string& mode, double timeout, double memory_mib, const std::string& whose);

/// A private folder under $TMPDIR, removed with what it holds at the end of
/// the scope.
struct ScratchFolder {
  std::string path;
  explicit ScratchFolder(const std::string& name);
  ~ScratchFolder();
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
};

struct StepResult {
  nk::SandboxedRun run;
  ParsedLog log;  ///< for test steps
};

/// Runs a command in 'workspace' inside the sandbox: writes only to
/// 'scratch' (the workspace, HOME and TMPDIR live there), no network.
nk::SandboxedRun run_step(const std::string& command, const std::string& workspace, const std::string& scratch,
                          const Sandbox& sandbox);

}  // namespace swec
