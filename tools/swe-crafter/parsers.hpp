// parsers.hpp - test runners' logs read into per-test verdicts: pytest (-rA),
// go test -v, cargo test, TAP (prove -v, mocha's tap reporter), tape's TAP
// (tests by their "# name" comments), ctest, automake's test-driver,
// minitest -v, rspec --format json, test-unit -v and phpunit --teamcity, each with the runner's summary line as evidence that the
// suite ran (SWE-bench's graders want it).
#pragma once
#include <map>
#include <string>
#include <vector>

namespace swec {

enum class Verdict { passed, failed, skipped, error };
const char* verdict_name(Verdict v);

struct ParsedLog {
  std::map<std::string, Verdict> tests;  ///< test id -> verdict (the last line about a test wins)
  bool summary = false;                  ///< the runner's summary line was seen
  bool passed(const std::string& id) const;
};

/// The parsers this tool has: pytest, gotest, cargo, tap, tape, ctest, automake, minitest, rspec-json,
/// test-unit, phpunit.
const std::vector<std::string>& parser_names();
/// Throws a usage error for an unknown name.
ParsedLog parse_log(const std::string& parser, const std::string& log);

}  // namespace swec
