// mine_synthetic.cpp - mine --synthetic: bugs made by one mutation of one
// line of a function (never in a test file), each committed in the store on
// top of --rev as base_commit; the gold patch is the reverse; kept when
// tests that pass at --rev fail with the bug, whose output becomes the
// problem statement.

// GCC 12 at -O3 warns of overlapping copies in "literal" + std::string&& (a false
// positive, GCC bug 105651).
#pragma GCC diagnostic ignored "-Wrestrict"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "nk/command.hpp"
#include "nk/error.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "nk/rng.hpp"
#include "swe-crafter/buildsys.hpp"
#include "swe-crafter/git.hpp"
#include "swe-crafter/instance.hpp"
#include "swe-crafter/runlog.hpp"
#include "swe-crafter/swe_crafter.hpp"
#include "swe-crafter/synthetic.hpp"
#include "swe-crafter/testrule.hpp"
#include "swe-crafter/workspace.hpp"

namespace fs = std::filesystem;

namespace swec {

namespace {

std::string chomp(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

/// The suite run at --rev and then on one bug after another, on the
/// repository's prepared workspace (shared_workspace: prepared once, at
/// --rev unless an earlier stage prepared it): each bug starts from a copy of
/// the snapshot, its file rewritten (in a later second than anything built
/// from it), rebuilt by the build command alone and tested. validate later
/// checks every admitted bug on its own.
class SuiteRunner {
 public:
  SuiteRunner(const std::string& repo, const std::string& rev, const Environment& env, const Sandbox& sandbox)
      : prepared_(shared_workspace(repo, rev, env, sandbox)), rev_(rev), env_(env) {}

  /// The verdicts at --rev, and the run's output.
  ParsedLog clean(std::string& output) {
    if (!prepared_.error().empty()) {
      output = prepared_.error();
      return {};
    }
    if (const std::string why = prepared_.restore(rev_); !why.empty()) throw nk::io_error(prepared_.folder(), why);
    const nk::SandboxedRun b = prepared_.rebuild(prepared_.needs());
    if (b.exit_code != 0) {
      output = prepared_.clean_paths(b.sandbox_error.empty() ? b.output : b.sandbox_error);
      return {};
    }
    return test(output);
  }

  /// The verdicts with 'path' holding 'content' instead (rebuilt first), and the run's output.
  ParsedLog with_file(const std::string& path, const std::string& content, std::string& output) {
    if (!prepared_.error().empty()) {
      output = prepared_.error();
      return {};
    }
    if (const std::string why = prepared_.restore(rev_); !why.empty()) throw nk::io_error(prepared_.folder(), why);
    prepared_.write_file(path, content);
    const nk::SandboxedRun b = prepared_.rebuild(prepared_.needs());
    if (b.exit_code != 0) {
      output = prepared_.clean_paths(b.sandbox_error.empty() ? b.output : b.sandbox_error);
      return {};
    }
    // a bug that makes the suite run ten times longer than at --rev (at least 30 s) hangs it: such a bug is
    // dropped (SWE-smith drops mutants that time out), before it costs every later run the whole --timeout
    return test(output, std::max(30.0, 10.0 * clean_seconds_));
  }

  /// Whether the last with_file() run hit its time limit.
  bool hung() const { return hung_; }

 private:
  ParsedLog test(std::string& output, double limit = 0) {
    const nk::SandboxedRun t = prepared_.run(env_.test_cmd, limit);
    output = prepared_.clean_paths(t.sandbox_error.empty() ? t.output : t.sandbox_error);
    if (limit == 0) clean_seconds_ = t.seconds;
    hung_ = limit > 0 && t.timed_out;
    return parse_log(env_.log_parser, t.output);
  }

  PreparedWorkspace& prepared_;
  double clean_seconds_ = 0;
  bool hung_ = false;
  std::string rev_;
  Environment env_;
};

/// A commit on top of 'rev' whose 'path' holds 'content' (plumbing only:
/// no branch moves, nothing checked out), kept by a ref under refs/swe-crafter/.
std::string commit_file(const std::string& repo, const std::string& rev, const std::string& path,
                        const std::string& content, const std::string& message, const std::string& date,
                        const std::string& scratch) {
  const std::string file = scratch + "/blob", index = scratch + "/index";
  {
    std::ofstream f(file, std::ios::binary);
    f << content;
  }
  const std::string blob = chomp(git(repo, "hash-object -w " + sh_quote(file), "storing the mutated file"));
  const std::string entry = git(repo, "ls-tree " + sh_quote(rev) + " -- " + sh_quote(path), "reading the file's mode");
  const std::string mode = entry.substr(0, entry.find(' '));
  const std::string idx = "GIT_INDEX_FILE=" + sh_quote(index) + " ";
  const CommandResult r1 =
      shell(idx + "git read-tree " + sh_quote(rev) + " && " + idx + "git update-index --cacheinfo " +
                sh_quote(mode + "," + blob + "," + path) + " && " + idx + "git write-tree",
            repo);
  if (r1.exit_code != 0) throw nk::Error(nk::Exit::runtime, "writing the mutated tree: " + r1.output);
  const std::string tree = chomp(r1.output);
  const std::string dates = "GIT_AUTHOR_DATE=" + sh_quote(date) + " GIT_COMMITTER_DATE=" + sh_quote(date) + " ";
  const CommandResult r2 =
      shell(dates + "git commit-tree " + sh_quote(tree) + " -p " + sh_quote(rev) + " -m " + sh_quote(message), repo);
  if (r2.exit_code != 0) throw nk::Error(nk::Exit::runtime, "committing the mutation: " + r2.output);
  const std::string sha = chomp(r2.output);
  git(repo, "update-ref " + sh_quote("refs/swe-crafter/synthetic/" + sha) + " " + sha, "keeping the mutation");
  std::remove(index.c_str());
  return sha;
}

}  // namespace

void mine_synthetic(const MineOptions& o, const nk::RunEnv& run_env, const std::string& repo, Environment env) {
  const std::string name = fs::path(repo).filename().string();
  // the bugs are commits: they go into the store's copy, never into a user's repository
  std::error_code ec;
  const fs::path repos = fs::weakly_canonical(fs::absolute(fs::path(o.store) / "repos"), ec);
  if (fs::weakly_canonical(repo, ec).parent_path() != repos)
    throw nk::usage_error("mine --synthetic commits its bugs in the store: fetch " + repo +
                          " first (swe-crafter fetch git:" + repo + ") and name it by its store name");
  const std::string rev = chomp(git(repo, "rev-parse " + sh_quote(o.rev + "^{commit}"), "resolving --rev"));
  const std::string date = chomp(git(repo, "log -1 --format=%aI " + sh_quote(rev), "reading the date"));
  const Sandbox sandbox = make_sandbox(o.sandbox, o.timeout, o.memory, "repositories' code");
  RunLog::get().context(name, "mine:synthetic");
  ScratchFolder scratch("swe-crafter-mine");
  if (env.test_cmd.empty()) {
    const std::string ws = scratch.path + "/ws";
    make_workspace(repo, rev, ws);
    env = detect_fixed(ws);
    fs::remove_all(ws);
    if (env.build_system.empty()) throw nk::input_error(o.input, "", "no build system recognised at " + o.rev);
  }
  // the suite at --rev: the tests a bug may break
  std::string output;
  SuiteRunner suite(repo, rev, env, sandbox);
  const ParsedLog clean = suite.clean(output);
  std::set<std::string> passing;
  for (const auto& [id, v] : clean.tests) {
    if (v == Verdict::passed) passing.insert(id);
  }
  if (passing.empty()) throw nk::input_error(o.input, "", "no test passes at " + o.rev + " (see env)");
  // every mutation of every source file, in a seeded order
  struct Site {
    std::string path;
    Mutation m;
  };
  std::vector<Site> sites;
  std::istringstream files(git(repo, "ls-tree -r --name-only " + sh_quote(rev), "listing the files"));
  std::string path;
  while (std::getline(files, path)) {
    const std::string language = language_of(path);
    if (path.empty() || is_test_file(path) || language.empty() || language == "shell" || language == "haskell")
      continue;
    const std::string text = git(repo, "show " + sh_quote(rev + ":" + path), "reading " + path);
    for (const Mutation& m : candidate_mutations(text, language)) sites.push_back({path, m});
  }
  nk::Rng rng(nk::mix64(run_env.seed ^ 0x5e7e71c));
  for (size_t i = sites.size(); i > 1; --i) std::swap(sites[i - 1], sites[rng.below(i)]);
  const int64_t attempts = std::min<int64_t>(static_cast<int64_t>(sites.size()), 10 * o.synthetic);
  std::string out;
  int64_t kept = 0, tried = 0;
  nk::Progress progress("mine --synthetic", attempts);
  for (const Site& s : sites) {
    if (kept >= o.synthetic || tried >= attempts) break;
    ++tried;
    const std::string original = git(repo, "show " + sh_quote(rev + ":" + s.path), "reading " + s.path);
    const std::string mutated = apply_mutation(original, s.m);
    const std::string message =
        "synthetic bug (" + s.m.kind + ") in " + s.path + " line " + std::to_string(s.m.line + 1);
    const std::string sha = commit_file(repo, rev, s.path, mutated, message, date, scratch.path);
    const ParsedLog buggy = suite.with_file(s.path, mutated, output);
    if (suite.hung()) {
      RunLog::get().verdict("the bug hangs the suite: dropped");
      git(repo, "update-ref -d " + sh_quote("refs/swe-crafter/synthetic/" + sha), "dropping a mutation");
      progress.update(tried);
      continue;
    }
    std::vector<std::string> broken;
    for (const std::string& id : passing) {
      if (!buggy.passed(id)) broken.push_back(id);
    }
    progress.update(tried);
    if (broken.empty()) {
      git(repo, "update-ref -d " + sh_quote("refs/swe-crafter/synthetic/" + sha), "dropping a mutation");
      continue;
    }
    Instance i;
    i.repo = name;
    i.instance_id = name + "-synthetic-" + sha.substr(0, 12);
    i.base_commit = sha;
    i.environment_setup_commit = sha;
    i.patch = diff_paths(repo, sha, rev, {s.path});
    i.problem_statement = std::to_string(broken.size()) + " test" + (broken.size() > 1 ? "s fail" : " fails") + ":\n";
    for (size_t k = 0; k < broken.size() && k < 10; ++k) i.problem_statement += "- " + broken[k] + "\n";
    const std::string tail = output.size() > 1500 ? output.substr(output.size() - 1500) : output;
    i.problem_statement += "\nThe end of the test run's output:\n```\n" + tail +
                           (tail.empty() || tail.back() == '\n' ? "" : "\n") + "```\n";
    if (!o.agent_cmd.empty()) {
      // an agent (an LLM, as SWE-smith uses) writes the issue from the bug, the failing tests and the output
      nlohmann::json ask = {{"type", "statement"},
                            {"instance_id", i.instance_id},
                            {"language", language_of(s.path)},
                            {"bug", diff_paths(repo, rev, sha, {s.path})},
                            {"failing_tests", broken},
                            {"output", tail}};
      try {
        nk::Coprocess agent(o.agent_cmd, "--agent-cmd");
        const std::string line = ask.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
        agent.write(line.data(), line.size());
        const nlohmann::json reply = nlohmann::json::parse(agent.read_line(size_t{1} << 22, "the statement"));
        agent.finish();
        const std::string text =
            reply.is_object() && reply.contains("problem_statement") && reply["problem_statement"].is_string()
                ? reply["problem_statement"].get<std::string>()
                : "";
        if (text.find_first_not_of(" \t\r\n") == std::string::npos) throw std::runtime_error("no problem_statement");
        i.problem_statement = text;
        i.hints_text = "statement written by --agent-cmd";
      } catch (const std::exception& e) {
        // a broken agent costs this bug its written statement, not the run: the failing output stays
        spdlog::warn("{}: the statement agent failed ({}); the failing output is the statement", i.instance_id,
                     e.what());
      }
    }
    i.created_at = date;
    i.language = language_of(s.path);
    i.build_system = env.build_system;
    i.install = env.install;
    i.build = env.build;
    i.test_cmd = env.test_cmd;
    i.log_parser = env.log_parser;
    i.source = "synthetic";
    i.repo_path = repo;
    out += to_json_line(i);
    ++kept;
  }
  progress.finish();
  spdlog::info("{}: {} mutation sites, {} tried, {} break a test at {}", name, sites.size(), tried, kept, o.rev);
  write_text(o.output, out, o.no_clobber);
}

}  // namespace swec
