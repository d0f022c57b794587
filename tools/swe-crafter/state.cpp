// state.cpp - one state of an instance, built (from the prepared workspace or
// from scratch) and tested.
#include "swe-crafter/state.hpp"

#include "nk/error.hpp"
#include "swe-crafter/git.hpp"
#include "swe-crafter/runlog.hpp"

namespace swec {

namespace {

/// A test of the instance's lists that 'log' does not hold at all (it did not run).
std::string unrun_listed_test(const Instance& inst, const ParsedLog& log) {
  for (const auto* list : {&inst.fail_to_pass, &inst.pass_to_pass}) {
    for (const std::string& id : *list) {
      if (!log.tests.count(id)) return id;
    }
  }
  return "";
}

/// The test command's runs on a state whose workspace is ready: 'run' runs a command there. A state that checks
/// an instance's lists runs every test they name: when the test files' selection left one out (the lists come
/// from another selection: an older validator's, a whole suite's), the run is made again with the whole suite.
template <class Runner>
void test_runs(StateRuns& out, const Instance& inst, const std::string& ws, bool with_patch, int runs, bool full_suite,
               const Runner& run) {
  std::string command = test_command(environment_of(inst), present_test_files(inst, ws), full_suite);
  const std::string whole = test_command(environment_of(inst), {}, true);
  for (int r = 0; r < runs; ++r) {
    const nk::SandboxedRun t = run(command);
    if (!t.sandbox_error.empty()) {
      out.error = "sandbox: " + t.sandbox_error;
      return;
    }
    ParsedLog log = parse_log(inst.log_parser, t.output);
    if (const std::string missing = unrun_listed_test(inst, log);
        command != whole && !missing.empty() && log.summary && !t.timed_out) {
      RunLog::get().note(std::string(with_patch ? "after" : "before") + ": " + missing +
                         ", a listed test, did not run under the test files' selection; the whole suite runs");
      command = whole;
      --r;
      continue;
    }
    if (t.timed_out) log.summary = false;
    int64_t passed = 0, failed = 0;
    for (const auto& [id, v] : log.tests) passed += v == Verdict::passed, failed += v != Verdict::passed;
    RunLog::get().verdict(std::string(with_patch ? "after" : "before") + " run " + std::to_string(r + 1) + ": " +
                          std::to_string(passed) + " passed, " + std::to_string(failed) + " not" +
                          (log.summary ? "" : ", no summary") + (t.timed_out ? ", timed out" : ""));
    out.logs.push_back(std::move(log));
  }
}

/// One state of an instance built from scratch (a fresh checkout, install
/// and build), tested 'runs' times in one workspace.
StateRuns run_state(const std::string& repo, Instance& inst, bool with_patch, int runs, bool full_suite,
                    const Sandbox& sandbox, const std::string& scratch) {
  StateRuns out;
  const std::string ws = scratch + "/ws";
  make_workspace(repo, inst.base_commit, ws);
  std::string why = apply_patch(ws, inst.test_patch, scratch);
  if (!why.empty()) {
    out.error = "test_patch does not apply: " + why;
    return out;
  }
  if (with_patch) {
    why = apply_patch(ws, inst.patch, scratch);
    if (!why.empty()) {
      out.error = "patch does not apply: " + why;
      return out;
    }
  }
  if (inst.test_cmd.empty()) {
    const Environment e = detect_fixed(ws);
    if (e.build_system.empty()) {
      out.error = "no build system recognised";
      return out;
    }
    inst.language = inst.language.empty() ? e.language : inst.language;
    inst.build_system = e.build_system;
    inst.install = e.install;
    inst.build = e.build;
    inst.test_cmd = e.test_cmd;
    inst.log_parser = e.log_parser;
  }
  if (const std::string prepare = prepare_command(inst.install, inst.build); !prepare.empty()) {
    const nk::SandboxedRun b = run_step(prepare, ws, scratch, sandbox);
    if (!b.sandbox_error.empty()) {
      out.error = "sandbox: " + b.sandbox_error;
      return out;
    }
    if (b.exit_code != 0) {
      if (with_patch) {
        out.error = "the build fails (exit " + std::to_string(b.exit_code) + ")";
      } else {
        out.logs.assign(static_cast<size_t>(runs), ParsedLog{});  // nothing runs before the fix: all fail
      }
      return out;
    }
  }
  test_runs(out, inst, ws, with_patch, runs, full_suite,
            [&](const std::string& command) { return run_step(command, ws, scratch, sandbox); });
  return out;
}

/// One state of an instance from the repository's prepared workspace: the
/// snapshot's copy moved to base_commit, the patches applied, rebuilt
/// incrementally. False when the state cannot be made this way (the caller
/// builds it from scratch): git cannot move the copy (the prepare step changed
/// files the state changes), the state changes a build description, or the
/// build fails after the fix (a stale build must not reject an instance).
bool run_state_prepared(PreparedWorkspace& prepared, Instance& inst, bool with_patch, int runs, bool full_suite,
                        StateRuns& out) {
  std::string why = prepared.restore(inst.base_commit);
  if (why.empty()) why = prepared.apply(inst.test_patch);
  if (why.empty() && with_patch) why = prepared.apply(inst.patch);
  const std::string state = with_patch ? "after" : "before";
  if (!why.empty()) {
    RunLog::get().note(state + ": the prepared workspace cannot take this state (" + why.substr(0, 200) +
                       "); built from scratch");
    return false;
  }
  std::string file;
  const PreparedWorkspace::Rebuild how = prepared.needs(&file);
  if (how == PreparedWorkspace::Rebuild::scratch) {
    RunLog::get().note(state + ": " + file + " changes; built from scratch");
    return false;
  }
  bool ran = false;
  const nk::SandboxedRun b = prepared.rebuild(how, &ran);
  const std::string made =
      state + ": from the workspace prepared at " + prepared.commit().substr(0, 12) +
      (how == PreparedWorkspace::Rebuild::prepare      ? ", install and build rerun (" + file + ")"
       : how == PreparedWorkspace::Rebuild::regenerate ? ", install and build rerun, the build regenerated (" + file + ")"
                                                       : std::string(", build only"));
  if (!ran) {
    RunLog::get().note(made + " (nothing to build)");  // no command ran
  } else {
    RunLog::get().verdict(made + ", exit " + std::to_string(b.exit_code));
  }
  if (!b.sandbox_error.empty()) {
    out.error = "sandbox: " + b.sandbox_error;
    return true;
  }
  if (b.exit_code != 0) {
    if (how == PreparedWorkspace::Rebuild::regenerate) {
      // a changed build description, regenerated: its failure may be the copy's, not the state's
      RunLog::get().note(state + ": the regenerated build fails (" + file + " changes); built from scratch");
      return false;
    }
    if (with_patch) {
      RunLog::get().note("after: the incremental build fails; built from scratch");
      return false;
    }
    out.logs.assign(static_cast<size_t>(runs), ParsedLog{});  // nothing runs before the fix: all fail
    return true;
  }
  test_runs(out, inst, prepared.folder(), with_patch, runs, full_suite,
            [&](const std::string& command) { return prepared.run(command); });
  return true;
}

}  // namespace

/// One state, from the prepared workspace when there is one and it can take
/// the state, else from scratch.
StateRuns state_runs(const std::string& repo, Instance& inst, PreparedWorkspace* prepared, bool with_patch, int runs,
                     bool full_suite, const Sandbox& sandbox) {
  StateRuns out;
  if (prepared && run_state_prepared(*prepared, inst, with_patch, runs, full_suite, out)) return out;
  ScratchFolder scratch(with_patch ? "swe-crafter-after" : "swe-crafter-before");
  return run_state(repo, inst, with_patch, runs, full_suite, sandbox, scratch.path);
}

}  // namespace swec
