// parsers.cpp - per-test verdicts from test runners' logs.
#include "swe-crafter/parsers.hpp"

#include <cctype>
#include <sstream>

#include <nlohmann/json.hpp>

#include "nk/error.hpp"

namespace swec {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::passed:
      return "passed";
    case Verdict::failed:
      return "failed";
    case Verdict::skipped:
      return "skipped";
    case Verdict::error:
      return "error";
  }
  return "?";
}

bool ParsedLog::passed(const std::string& id) const {
  const auto it = tests.find(id);
  return it != tests.end() && it->second == Verdict::passed;
}

const std::vector<std::string>& parser_names() {
  static const std::vector<std::string> names = {"pytest",   "gotest",   "cargo",      "tap",      "tape", "ctest",
                                                 "automake", "minitest", "rspec-json", "test-unit",
                                                 "phpunit"};
  return names;
}

namespace {

bool starts(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t a = 0;
  while (a < s.size() && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  return s.substr(a);
}

/// The first whitespace-separated word of s.
std::string first_word(const std::string& s) {
  const size_t end = s.find_first_of(" \t");
  return s.substr(0, end);
}

void pytest_line(const std::string& line, ParsedLog& out) {
  // -rA short summary: "PASSED path::test", "FAILED path::test - message", "ERROR path - message"
  static const std::pair<const char*, Verdict> words[] = {{"PASSED ", Verdict::passed},
                                                          {"XFAIL ", Verdict::passed},
                                                          {"FAILED ", Verdict::failed},
                                                          {"XPASS ", Verdict::failed},
                                                          {"ERROR ", Verdict::error}};
  for (const auto& [word, verdict] : words) {
    if (starts(line, word)) {
      const std::string id = first_word(line.substr(std::string(word).size()));
      if (!id.empty()) out.tests[id] = verdict;
      return;
    }
  }
  if (starts(line, "SKIPPED ")) return;  // "SKIPPED [1] path:line: reason" names no test
  // "===== 2 passed, 1 failed in 0.12s =====", "==== no tests ran in 0.01s ===="
  if (starts(line, "==") && line.find(" in ") != std::string::npos &&
      (line.find(" passed") != std::string::npos || line.find(" failed") != std::string::npos ||
       line.find(" error") != std::string::npos || line.find("no tests ran") != std::string::npos ||
       line.find(" skipped") != std::string::npos))
    out.summary = true;
}

void gotest_line(const std::string& raw, ParsedLog& out) {
  const std::string line = trim(raw);
  static const std::pair<const char*, Verdict> words[] = {
      {"--- PASS: ", Verdict::passed}, {"--- FAIL: ", Verdict::failed}, {"--- SKIP: ", Verdict::skipped}};
  for (const auto& [word, verdict] : words) {
    if (starts(line, word)) {
      const std::string id = first_word(line.substr(std::string(word).size()));
      if (!id.empty()) out.tests[id] = verdict;
      return;
    }
  }
  // a package's summary: "ok  \tpkg\t0.01s", "FAIL\tpkg\t0.01s", "FAIL\tpkg [build failed]"
  if (starts(raw, "ok  \t") || starts(raw, "FAIL\t") || starts(raw, "?   \t")) out.summary = true;
}

void cargo_line(const std::string& line, ParsedLog& out) {
  // "test tests::adds ... ok", "test tests::subs ... FAILED", "test x ... ignored"
  if (starts(line, "test ") && line.find(" ... ") != std::string::npos) {
    const size_t dots = line.find(" ... ");
    const std::string id = line.substr(5, dots - 5);
    const std::string result = trim(line.substr(dots + 5));
    if (starts(result, "ok")) {
      out.tests[id] = Verdict::passed;
    } else if (starts(result, "FAILED")) {
      out.tests[id] = Verdict::failed;
    } else if (starts(result, "ignored")) {
      out.tests[id] = Verdict::skipped;
    }
    return;
  }
  if (starts(line, "test result: ")) out.summary = true;
}

struct TapState {
  std::string file;
};

void tap_line(const std::string& raw, ParsedLog& out, TapState& state) {
  std::string line = raw;
  // prove -v: "t/basic.t .. " (the file), possibly followed by the first TAP line
  const size_t dots = line.find(" ..");
  if (dots != std::string::npos && dots > 0 && line.find(' ') == dots && !starts(line, "ok") &&
      !starts(line, "not ok")) {
    state.file = line.substr(0, dots);
    size_t rest = dots + 1;
    while (rest < line.size() && line[rest] == '.') ++rest;
    line = trim(line.substr(rest));
    if (line.empty()) return;
  }
  line = trim(line);
  const bool ok = starts(line, "ok ");
  const bool not_ok = starts(line, "not ok ");
  if (ok || not_ok) {
    std::string rest = line.substr(ok ? 3 : 7);
    const std::string number = first_word(rest);
    rest = trim(rest.substr(number.size()));
    std::string directive;
    const size_t hash = rest.find(" # ");
    if (hash != std::string::npos) {
      directive = rest.substr(hash + 3);
      rest = rest.substr(0, hash);
    } else if (starts(rest, "# ")) {
      directive = rest.substr(2);
      rest.clear();
    }
    if (starts(rest, "- ")) rest = rest.substr(2);
    rest = trim(rest);
    const std::string id = (state.file.empty() ? "" : state.file + "::") + (rest.empty() ? number : rest);
    std::string d;
    for (char c : directive) d += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (starts(d, "skip")) {
      out.tests[id] = Verdict::skipped;
    } else if (starts(d, "todo")) {
      out.tests[id] = Verdict::skipped;
    } else {
      out.tests[id] = ok ? Verdict::passed : Verdict::failed;
    }
    return;
  }
  // prove's summary, or the "# tests N" plan comment of TAP producers such as mocha's tap reporter
  if (starts(line, "Result: ") || starts(line, "All tests successful") || starts(line, "Files=") ||
      starts(line, "# tests "))
    out.summary = true;
}

struct TapeState {
  std::string heading;  ///< the "# name" comment that opened the current test
};

void tape_line(const std::string& raw, ParsedLog& out, TapeState& state) {
  // tape: a test is a "# name" comment followed by its assertions ("ok N message", "not ok N message", whose
  // messages repeat across tests); the test fails when any of its assertions fails. "# tests N" ends the run.
  const std::string line = trim(raw);
  if (raw.empty() || raw[0] == ' ') return;  // YAML diagnostics are indented
  if (starts(line, "# ")) {
    const std::string name = trim(line.substr(2));
    // the closing counts: "# tests 5", "# pass  3", "# fail  1", "# todo 1", "# skip 1", "# ok"
    const std::string word = first_word(name), count = trim(name.substr(word.size()));
    const bool number = !count.empty() && count.find_first_not_of("0123456789") == std::string::npos;
    if (name == "ok" || (number && (word == "tests" || word == "pass" || word == "fail" || word == "todo" ||
                                    word == "skip"))) {
      if (word == "tests") out.summary = true;
      return;
    }
    state.heading = name;
    if (!out.tests.count(name)) out.tests[name] = Verdict::passed;
    return;
  }
  const bool ok = starts(line, "ok ");
  const bool not_ok = starts(line, "not ok ");
  if ((!ok && !not_ok) || state.heading.empty()) return;
  std::string lower;
  for (char c : line) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const bool directive = lower.find(" # skip") != std::string::npos || lower.find(" # todo") != std::string::npos;
  if (not_ok && !directive) out.tests[state.heading] = Verdict::failed;
}

/// A runner's progress mark: . passed (test-unit's N, a notification, too), F failed, E error, one of
/// 'skips' skipped (minitest's S; test-unit's O omitted and P pending).
bool mark_verdict(char mark, const std::string& skips, Verdict& v) {
  if (mark == '.' || mark == 'N') {
    v = Verdict::passed;
  } else if (mark == 'F') {
    v = Verdict::failed;
  } else if (mark == 'E') {
    v = Verdict::error;
  } else if (skips.find(mark) != std::string::npos) {
    v = Verdict::skipped;
  } else {
    return false;
  }
  return true;
}

void minitest_line(const std::string& line, ParsedLog& out) {
  // minitest -v: "TestCalc#test_adds = 0.00 s = ." (. passed, F failed, E error, S skipped); the summary
  // "3 runs, 2 assertions, 1 failures, 0 errors, 1 skips"
  // (spec-style names hold spaces: "Calc#test_0001_adds two numbers = 0.00 s = .")
  const size_t last = line.rfind(" = ");
  if (last != std::string::npos && last > 3) {
    const size_t prev = line.rfind(" = ", last - 1);
    const std::string mark = trim(line.substr(last + 3)), time = prev == std::string::npos ? "" : line.substr(prev + 3, last - prev - 3);
    const std::string id = prev == std::string::npos ? "" : line.substr(0, prev);
    if (mark.size() == 1 && time.size() > 2 && time.substr(time.size() - 2) == " s" && id.find('#') != std::string::npos &&
        id[0] != ' ') {
      if (Verdict v; mark_verdict(mark[0], "S", v)) out.tests[id] = v;
      return;
    }
  }
  if (line.find(" runs, ") != std::string::npos && line.find(" assertions, ") != std::string::npos &&
      line.find(" failures, ") != std::string::npos)
    out.summary = true;
}

struct TestUnitState {
  std::vector<std::pair<size_t, std::string>> contexts;  ///< (indent, name) of the open test cases
};

void test_unit_line(const std::string& line, ParsedLog& out, TestUnitState& state) {
  // test-unit -v: a test case's name on a line of its own ("TestCalc: ", nested cases indented deeper), its
  // tests indented under it ("  test_add:\t\t\t.: (0.000216)"; . passed, F failed, E error, O omitted,
  // P pending, N notified), a failure's report between the mark and its time; the summary
  // "5 tests, 3 assertions, 1 failures, 1 errors, 0 pendings, 1 omissions, 0 notifications"
  size_t indent = 0;
  while (indent < line.size() && line[indent] == ' ') ++indent;
  const size_t tab = line.find(":\t");
  if (tab != std::string::npos && tab > indent) {
    size_t mark = tab + 1;
    while (mark < line.size() && line[mark] == '\t') ++mark;
    if (mark >= line.size()) return;
    while (!state.contexts.empty() && state.contexts.back().first >= indent) state.contexts.pop_back();
    std::string id;
    for (const auto& [at, name] : state.contexts) {
      if (!id.empty()) id += "::";
      id += name;
    }
    id += '#';
    id.append(line, indent, tab - indent);
    if (Verdict v; mark_verdict(line[mark], "OP", v)) out.tests[id] = v;
    return;
  }
  if (line.size() > indent + 2 && line.compare(line.size() - 2, 2, ": ") == 0 && line.find('\t') == std::string::npos &&
      line.find(' ', indent) == line.size() - 1) {
    while (!state.contexts.empty() && state.contexts.back().first >= indent) state.contexts.pop_back();
    state.contexts.emplace_back(indent, line.substr(indent, line.size() - 2 - indent));
    return;
  }
  if (line.find(" tests, ") != std::string::npos && line.find(" assertions, ") != std::string::npos &&
      line.find(" failures, ") != std::string::npos)
    out.summary = true;
}

void rspec_json_line(const std::string& line, ParsedLog& out) {
  // rspec --format json: one JSON document on a line ({"version": ..., "examples": [...], "summary": ...});
  // an example's id is its file and full description
  const std::string t = trim(line);
  if (!starts(t, "{\"version\"") || t.find("\"examples\"") == std::string::npos) return;
  const nlohmann::json doc = nlohmann::json::parse(t, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("examples") || !doc["examples"].is_array()) return;
  for (const nlohmann::json& e : doc["examples"]) {
    if (!e.is_object()) continue;
    const std::string file = e.value("file_path", ""), name = e.value("full_description", ""),
                      status = e.value("status", "");
    if (name.empty()) continue;
    const std::string id = (file.rfind("./", 0) == 0 ? file.substr(2) : file) + "::" + name;
    out.tests[id] = status == "passed"    ? Verdict::passed
                    : status == "pending" ? Verdict::skipped
                                          : Verdict::failed;
  }
  if (doc.contains("summary")) out.summary = true;
}

void ctest_line(const std::string& raw, ParsedLog& out) {
  // "1/3 Test #1: name ..........   Passed    0.01 sec", "2/3 Test #2: name ....***Failed  0.01 sec"
  const std::string line = trim(raw);
  const size_t hash = line.find("Test #");
  if (hash != std::string::npos && line.find(": ", hash) != std::string::npos) {
    const size_t colon = line.find(": ", hash);
    std::string rest = line.substr(colon + 2);
    const size_t space = rest.find(' ');
    const std::string id = rest.substr(0, space);
    if (rest.find("Passed") != std::string::npos) {
      out.tests[id] = Verdict::passed;
    } else if (rest.find("***Not Run") != std::string::npos || rest.find("***Skipped") != std::string::npos ||
               rest.find(" Skipped") != std::string::npos) {
      out.tests[id] = Verdict::skipped;
    } else if (rest.find("***") != std::string::npos || rest.find("Failed") != std::string::npos) {
      out.tests[id] = Verdict::failed;
    }
    return;
  }
  if (line.find("tests passed, ") != std::string::npos && line.find(" out of ") != std::string::npos)
    out.summary = true;
}

void automake_line(const std::string& line, ParsedLog& out) {
  static const std::pair<const char*, Verdict> words[] = {{"PASS: ", Verdict::passed}, {"XFAIL: ", Verdict::passed},
                                                          {"FAIL: ", Verdict::failed}, {"XPASS: ", Verdict::failed},
                                                          {"ERROR: ", Verdict::error}, {"SKIP: ", Verdict::skipped}};
  for (const auto& [word, verdict] : words) {
    if (starts(line, word)) {
      const std::string id = first_word(line.substr(std::string(word).size()));
      if (!id.empty()) out.tests[id] = verdict;
      return;
    }
  }
  if (starts(line, "# TOTAL: ")) out.summary = true;
}

struct TeamcityState {
  std::string current;  ///< the test that started last
  bool reported = false;  ///< it failed or was ignored
};

/// The value of NAME='...' in a TeamCity service message, its |-escapes undone.
std::string teamcity_attribute(const std::string& message, const std::string& name) {
  const std::string key = " " + name + "='";
  const size_t at = message.find(key);
  if (at == std::string::npos) return "";
  std::string out;
  for (size_t i = at + key.size(); i < message.size(); ++i) {
    const char c = message[i];
    if (c == '\'') break;
    if (c == '|' && i + 1 < message.size()) {
      const char e = message[++i];
      out += e == 'n' ? '\n' : e == 'r' ? '\r' : e;  // |' || |[ |] stand for the character itself
      continue;
    }
    out += c;
  }
  return out;
}

void phpunit_line(const std::string& line, ParsedLog& out, TeamcityState& state) {
  // phpunit --teamcity: "##teamcity[testStarted name='m with data set #0' locationHint='php_qn://FILE::\NS\Class::m
  // with data set #0' ...]", then testFailed or testIgnored, then testFinished; the id is the locationHint's
  // Class::method (the file's path is the workspace's, which differs between runs); the summary is "OK (N tests, M
  // assertions)" or "Tests: N, Assertions: M, Failures: F."
  const size_t at = line.find("##teamcity[");
  if (at == std::string::npos) {
    if ((starts(line, "OK (") && line.find(" assertion") != std::string::npos) ||
        (starts(line, "Tests: ") && line.find(", Assertions: ") != std::string::npos))
      out.summary = true;
    return;
  }
  const std::string message = line.substr(at + 11);
  const std::string kind = message.substr(0, message.find(' '));
  if (kind == "testStarted") {
    const std::string hint = teamcity_attribute(message, "locationHint");
    const size_t sep = hint.find("::\\");
    state.current = sep == std::string::npos ? teamcity_attribute(message, "name") : hint.substr(sep + 3);
    state.reported = false;
  } else if (state.current.empty()) {
    return;
  } else if (kind == "testFailed") {
    out.tests[state.current] = Verdict::failed;
    state.reported = true;
  } else if (kind == "testIgnored") {
    out.tests[state.current] = Verdict::skipped;
    state.reported = true;
  } else if (kind == "testFinished") {
    if (!state.reported) out.tests[state.current] = Verdict::passed;
    state.current.clear();
  }
}

}  // namespace

ParsedLog parse_log(const std::string& parser, const std::string& log) {
  bool known = false;
  for (const std::string& n : parser_names()) known = known || n == parser;
  if (!known)
    throw nk::usage_error("log parser '" + parser +
                          "' (expected pytest, gotest, cargo, tap, tape, ctest, automake, minitest, rspec-json, test-unit or phpunit)");
  ParsedLog out;
  std::istringstream in(log);
  std::string line;
  TapState tap;
  TapeState tape;
  TestUnitState test_unit;
  TeamcityState teamcity;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (parser == "pytest") {
      pytest_line(line, out);
    } else if (parser == "gotest") {
      gotest_line(line, out);
    } else if (parser == "cargo") {
      cargo_line(line, out);
    } else if (parser == "tap") {
      tap_line(line, out, tap);
    } else if (parser == "tape") {
      tape_line(line, out, tape);
    } else if (parser == "ctest") {
      ctest_line(line, out);
    } else if (parser == "minitest") {
      minitest_line(line, out);
    } else if (parser == "rspec-json") {
      rspec_json_line(line, out);
    } else if (parser == "phpunit") {
      phpunit_line(line, out, teamcity);
    } else if (parser == "test-unit") {
      test_unit_line(line, out, test_unit);
    } else {
      automake_line(line, out);
    }
  }
  return out;
}

}  // namespace swec
