// state.hpp - one state of an instance, tested: base_commit with the test
// patch (before) and the fix (after), from the repository's prepared
// workspace when it can take the state, else from scratch. validate's
// verdicts and distill's grading both run their states here.
#pragma once
#include <string>
#include <vector>

#include "swe-crafter/buildsys.hpp"
#include "swe-crafter/instance.hpp"
#include "swe-crafter/parsers.hpp"
#include "swe-crafter/workspace.hpp"

namespace swec {

struct StateRuns {
  std::vector<ParsedLog> logs;  ///< one per run
  std::string error;            ///< the state could not be tested (a patch does not apply, the build fails)
};

/// The state before (base_commit + test_patch) or, with 'with_patch', after
/// the fix (+ inst.patch), built and tested 'runs' times: from 'prepared'
/// (null: none) when it can take the state, else from scratch in a scratch
/// folder. A build that fails before the fix counts every test as failing
/// (runs empty logs); after it, it is an error. Fills inst's commands from
/// the fixed method when it has none. Every command is logged in RunLog.
StateRuns state_runs(const std::string& repo, Instance& inst, PreparedWorkspace* prepared, bool with_patch, int runs,
                     bool full_suite, const Sandbox& sandbox);

}  // namespace swec
