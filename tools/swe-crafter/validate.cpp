// validate.cpp - fail-to-pass validation: each candidate's tests run before
// (base + test_patch) and after (base + test_patch + patch) the fix, --runs
// times each; or, for instances that carry FAIL_TO_PASS, the re-check of
// SWE-bench's harness (the gold patch makes every listed test pass). The
// states of a repository's instances start from one workspace prepared once
// (install and build) and rebuild what their commit and patches change;
// --fresh builds every state from scratch.
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "nk/error.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "nk/shard.hpp"
#include "nk/timer.hpp"
#include "swe-crafter/buildsys.hpp"
#include "swe-crafter/git.hpp"
#include "swe-crafter/instance.hpp"
#include "swe-crafter/runlog.hpp"
#include "swe-crafter/state.hpp"
#include "swe-crafter/swe_crafter.hpp"
#include "swe-crafter/workspace.hpp"

namespace fs = std::filesystem;

namespace swec {

namespace {

bool all_pass(const std::vector<ParsedLog>& logs, const std::string& id) {
  for (const ParsedLog& l : logs) {
    if (!l.passed(id)) return false;
  }
  return true;
}
bool all_fail(const std::vector<ParsedLog>& logs, const std::string& id) {
  for (const ParsedLog& l : logs) {
    if (l.passed(id)) return false;
  }
  return true;
}

}  // namespace

int validate_verb(const ValidateOptions& o, const nk::RunEnv& run_env) {
  std::vector<Instance> instances = read_instances(o.input);
  // --shard: a contiguous block of the instances, so that the shards' outputs concatenate to the whole run's
  const auto [first, last] = nk::shard_range(run_env.shard, static_cast<int64_t>(instances.size()));
  instances = std::vector<Instance>(instances.begin() + first, instances.begin() + last);
  const Sandbox sandbox = make_sandbox(o.sandbox, o.timeout, o.memory, "repositories' code");
  // every instance's repository first: a bad one fails before any work
  std::vector<std::string> repos;
  {
    ScratchFolder scratch("swe-crafter-check");
    for (const Instance& i : instances) {
      const std::string where = i.repo_path.empty() ? i.repo : i.repo_path;
      const std::string repo = resolve_repo(o.store, where);
      if (!has_commit(repo, i.base_commit))
        bad_input(o.input, "instance " + i.instance_id, "base_commit " + i.base_commit + " is not in " + repo);
      if (!i.log_parser.empty()) {
        bool known = false;
        for (const std::string& n : parser_names()) known = known || n == i.log_parser;
        if (!known) bad_input(o.input, "instance " + i.instance_id, "unknown log_parser '" + i.log_parser + "'");
      }
      std::string why = check_patch(repo, i.base_commit, i.test_patch, scratch.path);
      if (!why.empty()) bad_input(o.input, "instance " + i.instance_id, "test_patch does not apply: " + why);
      // the gold patch on top of the test patch, as validation applies them
      why = check_patch(repo, i.base_commit, i.test_patch + i.patch, scratch.path);
      if (!why.empty()) bad_input(o.input, "instance " + i.instance_id, "patch does not apply: " + why);
      repos.push_back(repo);
    }
  }
  std::string kept, maps;
  std::ostream& out = o.report ? *o.report : std::cout;
  int failures = 0, admitted = 0;
  // the repository's prepared workspace (shared with mine and distill in one process: one at a time, per
  // repository and install and build commands; instances come grouped by repository); none with --fresh, where
  // every state is built from scratch as SWE-bench's harness does
  auto prepare = [&](size_t k) -> PreparedWorkspace* {
    const Instance& inst = instances[k];
    if (o.fresh || inst.test_cmd.empty()) return nullptr;
    PreparedWorkspace& prepared = shared_workspace(repos[k], inst.base_commit, environment_of(inst), sandbox);
    return prepared.error().empty() ? &prepared : nullptr;
  };
  nk::Progress progress("validate", static_cast<int64_t>(instances.size()));
  for (size_t k = 0; k < instances.size(); ++k) {
    Instance& inst = instances[k];
    const bool recheck = !inst.fail_to_pass.empty();
    std::string verdict, reason;
    const nk::Stopwatch timer;
    const std::string repo_name = fs::path(repos[k]).filename().string();
    RunLog::get().context(repo_name, recheck ? "recheck" : "validate");
    size_t n_f2p = inst.fail_to_pass.size(), n_p2p = inst.pass_to_pass.size(), n_flaky = 0;
    if (recheck) {
      // SWE-bench's harness: with the gold patch every FAIL_TO_PASS and PASS_TO_PASS test passes
      const StateRuns after = state_runs(repos[k], inst, prepare(k), true, o.runs, o.full_suite, sandbox);
      if (!after.error.empty()) {
        reason = after.error;
      } else {
        for (const auto* list : {&inst.fail_to_pass, &inst.pass_to_pass}) {
          for (const std::string& id : *list) {
            if (reason.empty() && !all_pass(after.logs, id))
              reason = std::string(list == &inst.fail_to_pass ? "FAIL_TO_PASS" : "PASS_TO_PASS") + " test " + id +
                       " does not pass";
          }
        }
      }
      verdict = reason.empty() ? "ok" : "fail";
      if (reason.empty()) {
        reason = std::to_string(inst.fail_to_pass.size()) + " fail-to-pass and " +
                 std::to_string(inst.pass_to_pass.size()) + " pass-to-pass tests hold";
        kept += to_json_line(inst);
      } else {
        ++failures;
      }
    } else {
      PreparedWorkspace* prepared = prepare(k);
      StateRuns before = state_runs(repos[k], inst, prepared, false, o.runs, o.full_suite, sandbox), after;
      if (before.error.empty()) after = state_runs(repos[k], inst, prepared, true, o.runs, o.full_suite, sandbox);
      std::set<std::string> ids;
      for (const auto* state : {&before, &after}) {
        for (const ParsedLog& l : state->logs) {
          for (const auto& [id, v] : l.tests) ids.insert(id);
        }
      }
      if (!o.status_maps.empty()) {
        // SWE-bench's status names, so that its grading can read them
        auto name = [](Verdict v) {
          return v == Verdict::passed ? "PASSED" : v == Verdict::failed ? "FAILED" : v == Verdict::skipped ? "SKIPPED"
                                                                                                         : "ERROR";
        };
        for (const auto* state : {&before, &after}) {
          for (size_t r = 0; r < state->logs.size(); ++r) {
            nlohmann::ordered_json m = nlohmann::ordered_json::object();
            for (const auto& [id, v] : state->logs[r].tests) m[id] = name(v);
            nlohmann::ordered_json line = {{"instance_id", inst.instance_id},
                                           {"state", state == &before ? "before" : "after"},
                                           {"run", r + 1},
                                           {"summary", state->logs[r].summary},
                                           {"status", m}};
            maps += line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
          }
        }
      }
      std::vector<std::string> f2p, p2p, p2f, flaky;
      for (const std::string& id : ids) {
        const bool bp = all_pass(before.logs, id), bf = all_fail(before.logs, id);
        const bool ap = all_pass(after.logs, id), af = all_fail(after.logs, id);
        if (!(bp || bf) || !(ap || af)) {
          flaky.push_back(id);
        } else if (bf && ap) {
          f2p.push_back(id);
        } else if (bp && ap) {
          p2p.push_back(id);
        } else if (bp && af) {
          p2f.push_back(id);
        }
      }
      bool summary = !after.logs.empty();
      for (const ParsedLog& l : after.logs) summary = summary && l.summary;
      if (!before.error.empty() || !after.error.empty()) {
        reason = before.error.empty() ? after.error : before.error;
      } else if (!summary) {
        reason = "no runner summary after the fix (the suite did not run to its end)";
      } else if (!p2f.empty()) {
        reason = std::to_string(p2f.size()) + " pass-to-fail tests (first: " + p2f[0] + ")";
      } else if (f2p.empty()) {
        reason = flaky.empty()
                     ? "no fail-to-pass test"
                     : "no fail-to-pass test (" + std::to_string(flaky.size()) + " flaky, first: " + flaky[0] + ")";
      }
      verdict = reason.empty() ? "admitted" : "rejected";
      n_flaky = flaky.size();
      if (reason.empty()) {
        inst.fail_to_pass = f2p;
        inst.pass_to_pass = p2p;
        n_f2p = f2p.size();
        n_p2p = p2p.size();
        reason = std::to_string(f2p.size()) + " fail-to-pass, " + std::to_string(p2p.size()) + " pass-to-pass, " +
                 std::to_string(flaky.size()) + " flaky";
        kept += to_json_line(inst);
        ++admitted;
      }
    }
    RunLog::get().candidate(repo_name, inst.instance_id, inst.source, verdict, reason, static_cast<int64_t>(n_f2p),
                            static_cast<int64_t>(n_p2p), static_cast<int64_t>(n_flaky), o.runs, timer.seconds());
    out << inst.instance_id << "\t" << verdict << "\t" << reason << "\n";
    out.flush();
    progress.update(static_cast<int64_t>(k + 1));
  }
  progress.finish();
  if (!o.output.empty()) write_text(o.output, kept, o.no_clobber);
  if (!o.status_maps.empty()) write_text(o.status_maps, maps, o.no_clobber);
  spdlog::info("{} instances: {} admitted, {} re-checks failed", instances.size(), admitted, failures);
  return failures > 0 ? 1 : 0;
}

}  // namespace swec
