// env.cpp - a repository's environment: build system, commands, and whether
// they build it and run its tests (in the sandbox, on a workspace copy).
#include <filesystem>
#include <nlohmann/json.hpp>

#include "nk/error.hpp"
#include "nk/log.hpp"
#include "swe-crafter/buildsys.hpp"
#include "swe-crafter/git.hpp"
#include "swe-crafter/instance.hpp"
#include "swe-crafter/swe_crafter.hpp"

namespace fs = std::filesystem;

namespace swec {

void env_verb(const EnvOptions& o, const nk::RunEnv&) {
  const std::string repo = resolve_repo(o.store, o.input);
  if (!has_commit(repo, o.rev)) throw nk::input_error(o.input, "", "no commit '" + o.rev + "'");
  const Sandbox sandbox = make_sandbox(o.sandbox, o.timeout, "repositories' code");
  ScratchFolder scratch("swe-crafter-env");
  const std::string ws = scratch.path + "/ws";
  make_workspace(repo, o.rev, ws);
  Environment e = detect_fixed(ws);
  nlohmann::ordered_json j;
  std::string build_log, test_log;
  int64_t tests = 0;
  bool summary = false;
  if (!e.build_system.empty()) {
    e.attempts = 1;
    const nk::SandboxedRun b = run_step(e.build, ws, scratch.path, sandbox);
    build_log = b.sandbox_error.empty() ? b.output : b.sandbox_error;
    if (b.exit_code == 0) {
      const nk::SandboxedRun t = run_step(e.test_cmd, ws, scratch.path, sandbox);
      test_log = t.output;
      const ParsedLog log = parse_log(e.log_parser, t.output);
      tests = static_cast<int64_t>(log.tests.size());
      summary = log.summary;
    }
    e.ok = b.exit_code == 0 && tests >= 1 && summary;
  }
  j["repo"] = fs::path(repo).filename().string();
  j["rev"] = o.rev;
  j["method"] = o.method;
  j["language"] = e.language;
  j["build_system"] = e.build_system;
  j["install"] = e.install;
  j["build"] = e.build;
  j["test_cmd"] = e.test_cmd;
  j["log_parser"] = e.log_parser;
  j["ok"] = e.ok;
  j["attempts"] = e.attempts;
  j["evidence"] = e.evidence;
  j["tests_found"] = tests;
  j["summary_found"] = summary;
  auto tail = [](const std::string& s) { return s.size() > 4000 ? s.substr(s.size() - 4000) : s; };
  j["build_log_tail"] = tail(build_log);
  j["test_log_tail"] = tail(test_log);
  spdlog::info("{}: {} ({}), {} tests, environment {}", fs::path(repo).filename().string(),
               e.build_system.empty() ? "no build system recognised" : e.build_system, e.language, tests,
               e.ok ? "works" : "fails");
  write_text(o.output, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", o.no_clobber);
}

}  // namespace swec
