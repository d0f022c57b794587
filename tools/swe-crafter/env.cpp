// env.cpp - a repository's environment: build system, commands, and whether
// they build it and run its tests (in the sandbox, on a workspace copy).
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "nk/error.hpp"
#include "nk/log.hpp"
#include "nk/shipped.hpp"
#include "swe-crafter/buildsys.hpp"
#include "swe-crafter/git.hpp"
#include "swe-crafter/instance.hpp"
#include "swe-crafter/runlog.hpp"
#include "swe-crafter/skills.hpp"
#include "swe-crafter/testrule.hpp"
#include "swe-crafter/swe_crafter.hpp"

namespace fs = std::filesystem;

namespace swec {

namespace {

/// Tests that ran (passed or failed; errors and skips do not count).
int64_t tests_run(const ParsedLog& log) {
  int64_t n = 0;
  for (const auto& [id, v] : log.tests) n += v == Verdict::passed || v == Verdict::failed;
  return n;
}

struct Attempt {
  bool ok = false;
  int64_t tests = 0;
  bool summary = false;
  double test_seconds = 0;  ///< wall clock of the test run
  std::string build_log, test_log;
};

/// setup, build, then the tests: whether the environment works.
Attempt attempt(const Environment& e, const std::string& ws, const std::string& scratch, const Sandbox& sandbox) {
  Attempt a;
  if (const std::string prepare = prepare_command(e.install, e.build); !prepare.empty()) {
    const nk::SandboxedRun r = run_step(prepare, ws, scratch, sandbox);
    a.build_log = r.sandbox_error.empty() ? r.output : r.sandbox_error;
    if (r.exit_code != 0) {
      RunLog::get().verdict("build fails (" + RunLog::get().attempts.back().verdict + ")");
      return a;
    }
  }
  const nk::SandboxedRun t = run_step(e.test_cmd, ws, scratch, sandbox);
  a.test_log = t.output;
  const ParsedLog log = parse_log(e.log_parser, t.output);
  a.tests = tests_run(log);
  a.summary = log.summary;
  a.test_seconds = t.seconds;
  a.ok = a.tests >= 1 && a.summary && !t.timed_out;
  RunLog::get().verdict(a.ok ? "works: " + std::to_string(a.tests) + " tests ran"
                        : t.timed_out ? "timed out"
                        : a.tests == 0 ? "no test ran"
                                       : "no runner summary");
  return a;
}

std::string exports(const std::map<std::string, std::string>& env) {
  std::string out;
  for (const auto& [k, v] : env) out += "export " + k + "=" + sh_quote(v) + "; ";
  return out;
}

}  // namespace

void env_verb(const EnvOptions& o, const nk::RunEnv&) {
  if (!o.induce.empty() && o.method != "skills") throw nk::Error(nk::Exit::usage, "--induce needs --method skills");
  const std::string repo = resolve_repo(o.store, o.input);
  if (!has_commit(repo, o.rev)) throw nk::input_error(o.input, "", "no commit '" + o.rev + "'");
  std::vector<Skill> skills;
  if (o.method == "skills") {
    std::vector<std::string> folders = {shipped_skills()};
    folders.insert(folders.end(), o.skills.begin(), o.skills.end());
    skills = load_skills(folders);
  }
  const Sandbox sandbox = make_sandbox(o.sandbox, o.timeout, o.memory, "repositories' code");
  const std::string name = fs::path(repo).filename().string();
  RunLog::get().context(name, "env:" + o.method);
  ScratchFolder scratch("swe-crafter-env");
  const std::string ws = scratch.path + "/ws";
  make_workspace(repo, o.rev, ws);
  nlohmann::ordered_json j;
  Environment e;
  Attempt result;
  std::string induced;
  if (o.method == "fixed") {
    // one command set by the manifest, no evidence beyond it, no retries
    e = detect_fixed(ws);
    if (!e.build_system.empty()) {
      e.attempts = 1;
      result = attempt(e, ws, scratch.path, sandbox);
    }
  } else {
    // every skill whose evidence holds, most specific first; a failure a skill recognises is fixed and retried.
    // Commands already run are not run again (an induced skill's are its base skill's with the fixes it needed:
    // when it fails, the base skill goes on from the fixes the induced one tried), nor counted as an attempt.
    int attempts = 0;
    std::map<std::string, Attempt> tried;
    // {helpers}: the shipped helper scripts a skill may run (data/swe-crafter/helpers)
    const std::string helpers =
        fs::path(nk::shipped_data("swe-crafter/helpers/cargo-drop-missing-dev-deps.py")).parent_path().string();
    // a base skill whose induced skill matched in full and failed: its fixes ran from where experience with the
    // most similar repositories starts (the induced skill's baked fixes, then the base's other fixes); the base
    // skill and its other induced skills are not tried from scratch
    std::set<std::string> exhausted;
    for (SkillMatch m : matching_skills(skills, ws, tracked_files(ws))) {
      m.vars.emplace("helpers", helpers);
      if (attempts >= o.attempts) break;
      if (exhausted.count(m.skill->base.empty() ? m.skill->name : m.skill->base)) {
        spdlog::info("{}: not tried (an induced skill of its base failed)", m.skill->name);
        continue;
      }
      // each skill starts from the checked-out tree: what an earlier skill built or configured (a CMake cache that
      // holds its options, a configure's Makefiles) must not decide this one's result
      if (attempts > 0) shell("git clean -fdxq && git checkout -q -- .", ws);
      const Skill& s = *m.skill;
      std::map<std::string, std::string> extra;
      std::vector<std::string> applied, raw_exports, raw_runs;  // the fixes, {variables} unexpanded
      while (attempts < o.attempts) {
        Environment c{s.language, s.build_system, "", "", "", s.log_parser, m.evidence};
        const std::string pre = exports(extra);
        // the commands a fix ran belong to the environment: every later workspace (mine, validate, distill) runs them
        std::string setup;
        for (const std::string& r : raw_runs) setup += (setup.empty() ? "" : " && ") + ("{ " + expand(r, m.vars) + "; }");
        if (!s.setup.empty()) setup += (setup.empty() ? "" : " && ") + expand(s.setup, m.vars);
        c.install = setup.empty() ? "" : pre + setup;
        c.build = s.build.empty() ? "" : pre + expand(s.build, m.vars);
        c.test_cmd = pre + expand(s.test, m.vars);
        c.evidence.insert(c.evidence.begin(), "skill: " + s.name);
        c.evidence.insert(c.evidence.end(), applied.begin(), applied.end());
        const std::string key = c.install + "\n" + c.build + "\n" + c.test_cmd;
        if (const auto known = tried.find(key); known != tried.end()) {
          result = known->second;  // a failure (a success ends the search): its log chooses the next fix
          c.evidence.push_back("the same commands failed before: not run again");
        } else {
          ++attempts;
          result = attempt(c, ws, scratch.path, sandbox);
          tried[key] = result;
        }
        c.attempts = attempts;
        e = c;
        if (result.ok) break;
        const std::string log = result.build_log + result.test_log;
        const Skill::Fix* fix = nullptr;
        for (const Skill::Fix& f : s.fixes) {
          if (log.find(f.pattern) != std::string::npos &&
              std::find(applied.begin(), applied.end(), "fix: " + f.pattern + " => " + f.action) == applied.end()) {
            fix = &f;
            break;
          }
        }
        if (!fix) break;
        applied.push_back("fix: " + fix->pattern + " => " + fix->action);
        if (fix->action.rfind("env ", 0) == 0) {
          const std::string kv = fix->action.substr(4);
          extra[kv.substr(0, kv.find('='))] = expand(kv.substr(kv.find('=') + 1), m.vars);
          raw_exports.push_back(kv);
        } else {
          run_step(expand(fix->action.substr(4), m.vars), ws, scratch.path, sandbox);
          raw_runs.push_back(fix->action.substr(4));
        }
      }
      if (result.ok && !o.induce.empty()) {
        // what worked, written back as a skill when it took more than the first attempt, or when an induced skill
        // worked (a repository more: its evidence becomes what they share). An induced skill's evidence is its
        // base skill's and this tree's features, never the evidence of the repositories it came from.
        Skill from = s;
        if (!s.base.empty()) {
          const auto root = std::find_if(skills.begin(), skills.end(), [&](const Skill& k) { return k.name == s.base; });
          if (root != skills.end()) from.evidence = root->evidence;
        }
        if (attempts > 1 || !s.base.empty()) {
          induced = induce_skill(o.induce, from, raw_exports, raw_runs,
                                 tree_features(tracked_files(ws), ws, s.language), fs::path(repo).filename().string());
          spdlog::info("induced {}", induced);
        } else {
          spdlog::info("nothing to induce: the first attempt worked");
        }
      }
      if (result.ok) break;
      if (!s.base.empty() && !m.partial) exhausted.insert(s.base);
    }
    e.attempts = attempts;
  }
  if (e.language == "c" || e.language == "cpp") {
    // one skill builds both: the tree's sources say which it is (headers say nothing: .h serves both)
    size_t c = 0, cpp = 0;
    for (const std::string& f : tracked_files(ws)) {
      if (f.size() > 2 && f.compare(f.size() - 2, 2, ".h") == 0) continue;
      const std::string l = language_of(f);
      c += l == "c";
      cpp += l == "cpp";
    }
    if (c + cpp > 0) e.language = cpp > c ? "cpp" : "c";
  }
  e.ok = result.ok;
  RunLog::get().repository(name, e.language, o.method, e.ok, e.attempts, result.test_seconds);
  const int64_t tests = result.tests;
  const bool summary = result.summary;
  const std::string build_log = result.build_log, test_log = result.test_log;
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
  j["test_seconds"] = result.test_seconds;
  j["induced"] = induced.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(induced);
  auto tail = [](const std::string& s) { return s.size() > 4000 ? s.substr(s.size() - 4000) : s; };
  j["build_log_tail"] = tail(build_log);
  j["test_log_tail"] = tail(test_log);
  spdlog::info("{}: {} ({}), {} tests, environment {}", fs::path(repo).filename().string(),
               e.build_system.empty() ? "no build system recognised" : e.build_system, e.language, tests,
               e.ok ? "works" : "fails");
  write_text(o.output, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", o.no_clobber);
}

}  // namespace swec
