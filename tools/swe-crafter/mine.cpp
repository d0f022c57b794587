// mine.cpp - candidate instances from a repository's history: commits that
// touch code and tests, split by the test-file rule.
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <nlohmann/json.hpp>

#include "nk/error.hpp"
#include "nk/log.hpp"
#include "swe-crafter/buildsys.hpp"
#include "swe-crafter/git.hpp"
#include "swe-crafter/instance.hpp"
#include "swe-crafter/swe_crafter.hpp"
#include "swe-crafter/testrule.hpp"

namespace fs = std::filesystem;

namespace swec {

void mine_synthetic(const MineOptions& o, const nk::RunEnv& env, const std::string& repo, Environment environment);

void mine_verb(const MineOptions& o, const nk::RunEnv& run_env) {
  if (!o.agent_cmd.empty() && o.synthetic == 0)
    throw nk::usage_error("--agent-cmd writes synthetic bugs' statements: it needs --synthetic N");
  const std::string repo = resolve_repo(o.store, o.input);
  const std::string name = fs::path(repo).filename().string();
  if (!has_commit(repo, o.rev)) throw nk::input_error(o.input, "", "no commit '" + o.rev + "'");
  nlohmann::json env_json;
  if (!o.env_file.empty()) {
    std::ifstream f(o.env_file);
    if (!f) throw nk::io_error(o.env_file, "cannot open");
    try {
      env_json = nlohmann::json::parse(f);
    } catch (const std::exception& e) {
      throw nk::input_error(o.env_file, "", std::string("not JSON: ") + e.what());
    }
  }
  auto env_field = [&](const char* key) {
    return env_json.is_object() && env_json.contains(key) && env_json[key].is_string()
               ? env_json[key].get<std::string>()
               : std::string();
  };
  if (o.synthetic > 0) {
    mine_synthetic(o, run_env, repo,
                   Environment{env_field("language"),
                               env_field("build_system"),
                               env_field("install"),
                               env_field("build"),
                               env_field("test_cmd"),
                               env_field("log_parser"),
                               {}});
    return;
  }
  std::string out;
  int64_t kept = 0, seen = 0, no_tests = 0, no_code = 0;
  for (const Commit& c : first_parent_log(repo, o.rev)) {
    if (c.parent.empty()) continue;
    ++seen;
    std::vector<std::string> tests, rest;
    std::map<std::string, int> languages;
    bool code = false;
    for (const std::string& p : changed_paths(repo, c.parent, c.sha)) {
      if (is_test_file(p)) {
        tests.push_back(p);
      } else {
        rest.push_back(p);
        if (is_code_file(p)) {
          code = true;
          const std::string l = language_of(p);
          if (!l.empty()) ++languages[l];
        }
      }
    }
    if (tests.empty()) {
      ++no_tests;
      continue;
    }
    if (!code) {
      ++no_code;
      continue;
    }
    Instance i;
    i.repo = name;
    i.instance_id = name + "-" + c.sha.substr(0, 12);
    i.base_commit = c.parent;
    i.environment_setup_commit = c.parent;
    i.patch = diff_paths(repo, c.parent, c.sha, rest);
    i.test_patch = diff_paths(repo, c.parent, c.sha, tests);
    // the store's trailers say where a commit came from (a release, a Debian patch); they are not the statement
    std::string statement, source = "git";
    {
      std::istringstream lines(c.message);
      std::string line;
      while (std::getline(lines, line)) {
        if (line.rfind("Swe-Crafter-Source: ", 0) == 0) {
          source = line.substr(20);
        } else if (line.rfind("Swe-Crafter-", 0) != 0) {
          statement += line + "\n";
        }
      }
      while (!statement.empty() && (statement.back() == '\n' || statement.back() == ' ')) statement.pop_back();
    }
    i.problem_statement = statement;
    i.created_at = c.date;
    i.test_files = tests;
    int most = 0;
    for (const auto& [l, n] : languages) {
      if (n > most) {
        most = n;
        i.language = l;
      }
    }
    i.build_system = env_field("build_system");
    i.install = env_field("install");
    i.build = env_field("build");
    i.test_cmd = env_field("test_cmd");
    i.log_parser = env_field("log_parser");
    if (!env_field("language").empty()) i.language = env_field("language");
    i.source = source;
    i.repo_path = repo;
    out += to_json_line(i);
    ++kept;
    if (o.max > 0 && kept >= o.max) break;
  }
  spdlog::info("{}: {} commits with a parent, {} candidates ({} without tests, {} without code)", name, seen, kept,
               no_tests, no_code);
  write_text(o.output, out, o.no_clobber);
}

}  // namespace swec
