// distill.cpp - agent trajectories on validated instances: an agent works
// in a workspace at base_commit through bash actions (in the sandbox) and
// submits; its diff, with the test files restored to base + test_patch, is
// graded on FAIL_TO_PASS and PASS_TO_PASS; resolved trajectories are kept.

// GCC 12 at -O3 warns of overlapping copies in "literal" + std::string&& (a false
// positive, GCC bug 105651).
#pragma GCC diagnostic ignored "-Wrestrict"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "nk/command.hpp"
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
#include "swe-crafter/synthetic.hpp"
#include "swe-crafter/testrule.hpp"
#include "swe-crafter/workspace.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace swec {

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// Who acts: one JSON line in, one JSON line out.
class Agent {
 public:
  virtual ~Agent() = default;
  virtual std::string respond(const std::string& line) = 0;
};

/// --agent-cmd: a program per instance, spoken to in JSON lines.
class CommandAgent : public Agent {
 public:
  explicit CommandAgent(const std::string& command) : process_(command, "--agent-cmd") {}
  std::string respond(const std::string& line) override {
    const std::string out = line + "\n";
    std::string write_error;
    try {
      process_.write(out.data(), out.size());
    } catch (const nk::Error& e) {
      write_error = e.what();  // it may have answered and exited before reading: its answer still counts
    }
    try {
      return process_.read_line(size_t{1} << 24, "the agent's action");
    } catch (const nk::Error&) {
      if (!write_error.empty()) throw nk::Error(nk::Exit::runtime, write_error);
      throw;
    }
  }

 private:
  nk::Coprocess process_;
};

/// The builtin repair baseline (no LLM): run the tests, localise by the
/// source lines the failing output names (and their neighbours), the
/// functions it calls and those the failing tests' lines (or, when no line
/// is named, the failing tests' files) call, try the inverse single-line edits there (operators,
/// comparisons, constants minus or plus one, swapped arguments) one at a
/// time with the tests after each, submit the first that makes a failing
/// test the problem statement names (else any failing test) pass and
/// breaks no passing one (a test that fails after it must
/// fail again in a second run to count: flaky tests do not).
class BuiltinAgent : public Agent {
 public:
  explicit BuiltinAgent(std::string workspace) : ws_(std::move(workspace)) {}

  std::string respond(const std::string& line) override {
    const json msg = json::parse(line);
    if (msg.value("type", "") == "task") {
      test_cmd_ = msg.value("test_cmd", "");
      parser_ = msg.value("log_parser", "");
      // a failing test's own output, where the runner hides it: ctest's per test, automake's test-suite.log
      if (const size_t at = test_cmd_.find("ctest");
          parser_ == "ctest" && at != std::string::npos && test_cmd_.find("--output-on-failure") == std::string::npos)
        test_cmd_.insert(at + 5, " --output-on-failure");
      if (parser_ == "automake")
        test_cmd_ = "{ " + test_cmd_ + "; }; nk_s=$?; find . -name test-suite.log -exec cat {} + 2>/dev/null; exit $nk_s";
      runner_ = test_cmd_;
      if (const std::string build = msg.value("build", ""); !build.empty() && build != "true") {
        // built before every test run (blib for MakeMaker, the CMake tree, ...); a failed build shows its end
        test_cmd_ = "(" + build + ") > \"$TMPDIR/nk-agent-build.log\" 2>&1 || { tail -n 60 \"$TMPDIR/nk-agent-build.log\"; exit 1; }; " + test_cmd_;
      }
      statement_ = msg.value("problem_statement", "");
      return json{{"action", "bash"}, {"command", test_cmd_}}.dump();
    }
    if (cleaned_) return submit();  // the clean-up ran: the submission
    const std::string output = msg.value("output", "");
    ParsedLog log;
    try {
      log = parse_log(parser_, output);
    } catch (const std::exception&) {
      return submit();
    }
    if (!started_) {
      started_ = true;
      for (const auto& [id, v] : log.tests) (v == Verdict::passed ? passing_ : failing_).insert(id);
      // no test ran at all (a build or collection failure): the target is that tests run again
      broken_build_ = log.tests.empty() && !output.empty();
      if (failing_.empty() && !broken_build_) return submit();
      // the failing tests the problem statement names are the target: those of its first paragraph, else
      // of all of it, else every failing one
      const std::string first = statement_.substr(0, statement_.find("\n\n"));
      for (const std::string* text : std::vector<const std::string*>{&first, &statement_}) {
        for (const std::string& id : failing_) {
          const size_t sep = id.rfind("::");
          const std::string short_name = sep == std::string::npos ? id : id.substr(sep + 2);
          if (text->find(id) != std::string::npos || text->find(short_name) != std::string::npos) target_.insert(id);
        }
        if (!target_.empty()) break;
      }
      if (target_.empty()) target_ = failing_;
      if (!broken_build_) target_cmd_ = select_tests(runner_, parser_, target_);
      if (!target_cmd_.empty()) target_cmd_ = test_cmd_.substr(0, test_cmd_.size() - runner_.size()) + target_cmd_;
      plan(output);
      spdlog::debug("the builtin agent: {} failing tests, {} targeted, {} candidate edits", failing_.size(),
                    target_.size(), edits_.size());
    } else if (verifying_) {
      // the edit fixed tests but others failed: they count only if they fail again (flaky tests do not)
      verifying_ = false;
      bool again = false;
      for (const std::string& id : broken_) again = again || !log.passed(id);
      if (!again && fixes(log)) return submit();
    } else if (fixes(log)) {
      if (!target_cmd_.empty() && !full_run_) {
        // the edit ran the target tests alone: the whole suite, once, before it counts
        full_run_ = true;
        return bash(test_cmd_);
      }
      full_run_ = false;
      broken_.clear();
      for (const std::string& id : passing_) {
        if (!log.passed(id)) broken_.push_back(id);
      }
      if (broken_.empty()) return submit();
      verifying_ = true;
      return bash(test_cmd_);
    }
    full_run_ = false;
    if (next_ >= edits_.size()) {
      // nothing worked: the original back, then submit (graded unresolved)
      if (!restored_ && next_ > 0) {
        restored_ = true;
        const Edit& last = edits_[next_ - 1];
        return bash(write_command(last.path, originals_[last.path]));
      }
      return submit();
    }
    const Edit& e = edits_[next_++];
    std::string cmd;
    if (next_ > 1 && edits_[next_ - 2].path != e.path)
      cmd += write_command(edits_[next_ - 2].path, originals_[edits_[next_ - 2].path]);
    cmd += write_command(e.path, e.content) + (target_cmd_.empty() ? test_cmd_ : target_cmd_);
    return bash(cmd);
  }

  /// The runner's command narrowed to the given tests, where the runner selects tests by name and the command
  /// is the runner alone (no shell operators): pytest's node ids, go test -run, cargo test's filters, ctest -R,
  /// phpunit --filter; "" where it cannot be narrowed (the edits then run the whole suite).
  static std::string select_tests(const std::string& runner, const std::string& parser,
                                  const std::set<std::string>& ids) {
    if (ids.empty() || runner.find_first_of(";|&<>`$") != std::string::npos) return "";
    if (parser == "pytest") {
      std::string out = runner;
      for (const std::string& id : ids) out += " " + sh_quote(id);
      return out;
    }
    if (parser == "gotest" && runner.find("go test") != std::string::npos) {
      std::set<std::string> top;  // a subtest runs with its test
      for (const std::string& id : ids) top.insert(id.substr(0, id.find('/')));
      return runner + " -run " + sh_quote("^(" + regex_alternation(top) + ")$");
    }
    if (parser == "cargo" && runner.find("cargo test") != std::string::npos && runner.find(" -- ") == std::string::npos) {
      std::string out = runner + " --";
      for (const std::string& id : ids) out += " " + sh_quote(id);
      return out;
    }
    if (parser == "ctest") return runner + " -R " + sh_quote("^(" + regex_alternation(ids) + ")$");
    if (parser == "phpunit") {
      std::set<std::string> methods;  // Class::method, a data provider's sets with it
      for (const std::string& id : ids) methods.insert(id.substr(0, id.find(" with data set ")));
      return runner + " --filter " + sh_quote("/^(" + regex_alternation(methods) + ")( |$)/");
    }
    return "";
  }

 private:
  struct Edit {
    std::string path, content;
  };

  static std::string bash(const std::string& command) { return json{{"action", "bash"}, {"command", command}}.dump(); }

  /// What the builds left in the work tree (untracked and ignored files: __pycache__, blib, object files)
  /// removed, then the submission: the diff holds the edit alone.
  std::string submit() {
    if (!cleaned_) {
      cleaned_ = true;
      return bash("git clean -fdxq");
    }
    return json{{"action", "submit"}}.dump();
  }

  /// The file rewritten; its time moved on a second when the rewrite kept it (a build's bytecode cache,
  /// Python's, compares whole seconds and the size, which an inverted operator keeps).
  static std::string write_command(const std::string& path, const std::string& content) {
    std::string body = content;
    if (!body.empty() && body.back() != '\n') body += '\n';
    const std::string q = sh_quote(path);
    return "nk_t=$(stat -c %Y " + q + " 2>/dev/null || echo 0); cat > " + q + " <<'NK_BUILTIN_EOF'\n" + body +
           "NK_BUILTIN_EOF\n[ \"$(stat -c %Y " + q + ")\" -gt \"$nk_t\" ] || touch -d \"@$((nk_t + 1))\" " + q + "\n";
  }

  /// Some target test (failing at the start) passes; after a broken build, some test passes.
  bool fixes(const ParsedLog& log) const {
    if (broken_build_) {
      for (const auto& [id, v] : log.tests) {
        if (v == Verdict::passed) return true;
      }
      return false;
    }
    for (const std::string& id : target_) {
      if (log.passed(id)) return true;
    }
    return false;
  }

  /// The identifiers 'text' calls (NAME followed by '('), language keywords left out.
  static std::set<std::string> called_names(const std::string& text) {
    static const std::set<std::string> keywords = {"if",     "for",    "while",   "switch", "return", "sizeof",
                                                   "catch",  "elsif",  "unless",  "until",  "defined", "typeof",
                                                   "require", "function", "print", "printf", "not"};
    std::set<std::string> names;
    for (size_t at = text.find('('); at != std::string::npos; at = text.find('(', at + 1)) {
      size_t end = at;
      while (end > 0 && text[end - 1] == ' ') --end;
      size_t start = end;
      while (start > 0 && (std::isalnum(static_cast<unsigned char>(text[start - 1])) || text[start - 1] == '_'))
        --start;
      if (end - start >= 2 && end - start <= 64 && !std::isdigit(static_cast<unsigned char>(text[start]))) {
        std::string n = text.substr(start, end - start);
        if (!keywords.count(n)) names.insert(std::move(n));
      }
    }
    return names;
  }

  /// Whether line 'k' of 'text' begins the definition of 'name': def NAME / def self.NAME (Python, Ruby),
  /// func, fn, function, sub NAME; a method or C function whose line holds NAME( and a brace; a C function
  /// whose brace stands on the next line (GNU style "name (args)" at the line's start included).
  static bool defines(const std::vector<std::string>& text, size_t k, const std::string& name) {
    const std::string& line = text[k];
    if (line.find(name) == std::string::npos) return false;
    for (const std::string& head : {"def " + name, "def self." + name, "func " + name + "(", "fn " + name,
                                    "function " + name + "(", "sub " + name}) {
      const size_t h = line.find(head);
      if (h == std::string::npos) continue;
      if (head.back() == '(') return true;  // func NAME( and function NAME( hold their parameter list's start
      const size_t after = h + head.size();
      if (after == line.size() || line[after] == '(' || line[after] == ' ' || line[after] == '<' ||
          line[after] == '{' || line[after] == ';')
        return true;
    }
    {
      // a line that a keyword starts is a statement
      std::istringstream words(line);
      std::string first;
      words >> first;
      for (const char* kw : {"if", "while", "for", "switch", "return", "else", "do", "}"}) {
        if (first == kw || first.rfind(std::string(kw) + "(", 0) == 0) return false;
      }
    }
    auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    for (size_t at = line.find(name); at != std::string::npos; at = line.find(name, at + 1)) {
      const size_t end = at + name.size();
      if ((at > 0 && word(line[at - 1])) || (end < line.size() && word(line[end]))) continue;  // part of a word
      const char before = at == 0 ? ' ' : line[at - 1];
      // JavaScript's assigned functions: NAME = function, NAME: function, const NAME = (...) =>
      for (const char* tail : {" = function", ": function", " = (", " = async"}) {
        if (line.compare(end, std::strlen(tail), tail) == 0) return true;
      }
      // NAME( after a space, a tab, '*' or '::' (C, C++, methods), then a brace on the line or, for a definition
      // at column 0 (GNU style: its type on the line before), on a following line
      if (!(before == ' ' || before == '\t' || before == '*' || before == ':')) continue;
      size_t p = end;
      while (p < line.size() && line[p] == ' ') ++p;
      if (p >= line.size() || line[p] != '(') continue;
      const size_t last = line.find_last_not_of(" \t");
      if (line[last] == ';' || line.find('=') < at) continue;  // a declaration, or a call's result assigned
      if (line.find('{', p) != std::string::npos) return true;
      if (line[0] == ' ' || line[0] == '\t') continue;
      for (size_t j = k + 1; j < text.size() && j <= k + 8; ++j) {
        const size_t first = text[j].find_first_not_of(" \t");
        if (first == std::string::npos) continue;
        if (text[j][first] == '{') return true;
        if (text[j].find(';') != std::string::npos) break;
      }
    }
    return false;
  }

  /// Source lines the output names: "path:LINE", 'File "path", line LINE' (Python) or "at path line LINE"
  /// (Perl; blib/lib/X, the copy MakeMaker builds and tests, is lib/X).
  void plan(const std::string& output) {
    std::vector<std::pair<std::string, int64_t>> refs, test_refs;
    std::set<std::pair<std::string, int64_t>> seen;
    auto add = [&](std::string path, int64_t line) {
      if (path.rfind("./", 0) == 0) path = path.substr(2);
      if (path.rfind(ws_ + "/", 0) == 0) path = path.substr(ws_.size() + 1);  // PHPUnit names files by absolute paths
      std::error_code ec;
      if (path.rfind("blib/lib/", 0) == 0 && fs::is_regular_file(fs::path(ws_) / path.substr(5), ec))
        path = path.substr(5);
      if (line <= 0 || language_of(path).empty() || !fs::is_regular_file(fs::path(ws_) / path, ec)) return;
      if (!seen.insert({path, line}).second) return;
      // a test's line: what it calls is looked up below; a source line is a place to edit
      (is_test_file(path) ? test_refs : refs).emplace_back(path, line);
    };
    for (size_t at = 0; at < output.size(); ++at) {
      // path:LINE
      if (output[at] == ':' && at + 1 < output.size() && std::isdigit(static_cast<unsigned char>(output[at + 1]))) {
        size_t start = at;
        while (start > 0 && !std::isspace(static_cast<unsigned char>(output[start - 1])) && output[start - 1] != '"' &&
               output[start - 1] != '(')
          --start;
        size_t end = at + 1;
        while (end < output.size() && std::isdigit(static_cast<unsigned char>(output[end]))) ++end;
        if (end - at - 1 < 8) add(output.substr(start, at - start), std::stoll(output.substr(at + 1, end - at - 1)));
      }
    }
    for (size_t at = output.find("File \""); at != std::string::npos; at = output.find("File \"", at + 1)) {
      const size_t q = output.find('"', at + 6);
      const size_t l = output.find(", line ", q);
      if (q == std::string::npos || l != q + 1) continue;
      size_t end = l + 7;
      while (end < output.size() && std::isdigit(static_cast<unsigned char>(output[end]))) ++end;
      if (end > l + 7 && end - l - 7 < 8)
        add(output.substr(at + 6, q - at - 6), std::stoll(output.substr(l + 7, end - l - 7)));
    }
    for (size_t at = output.find(" at "); at != std::string::npos; at = output.find(" at ", at + 1)) {
      const size_t path_end = output.find(" line ", at + 4);
      if (path_end == std::string::npos || path_end - at > 4 + 300) continue;
      const std::string path = output.substr(at + 4, path_end - at - 4);
      if (path.empty() || path.find_first_of(" \n\t") != std::string::npos) continue;
      size_t end = path_end + 6;
      while (end < output.size() && std::isdigit(static_cast<unsigned char>(output[end]))) ++end;
      if (end > path_end + 6 && end - path_end - 6 < 8) add(path, std::stoll(output.substr(path_end + 6, end - path_end - 6)));
    }
    // functions the output calls by name (an assertion in a test names the function, not its file), and
    // those the failing test's lines call (C, JavaScript and Ruby failures name the test's line): the lines
    // after their definitions
    std::set<std::string> names = called_names(output);
    for (const auto& [path, line] : test_refs) {
      std::istringstream text(read_file(fs::path(ws_) / path));
      std::string l;
      for (int64_t number = 1; std::getline(text, l); ++number) {
        if (number >= line - 6 && number <= line + 1) names.merge(called_names(l));
      }
    }
    // the failing tests' own names: test "mul", test_mul, TestParse, TestAdd#test_add or AddTest::testAdd name a
    // function
    for (std::string id : target_) {
      const size_t data_set = id.find(" with data set ");  // PHPUnit's data providers: "Class::testX with data set #0"
      if (data_set != std::string::npos) id.resize(data_set);
      const size_t cut = id.find_last_of(":#/. ");
      std::string n = cut == std::string::npos ? id : id.substr(cut + 1);
      for (const char* prefix : {"test_", "test-", "Test", "test"}) {
        if (n.rfind(prefix, 0) == 0 && n.size() > std::strlen(prefix)) {
          n = n.substr(std::strlen(prefix));
          break;
        }
      }
      if (n.size() < 2) continue;
      names.insert(n);
      std::string lower = n;
      lower[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(lower[0])));
      names.insert(lower);
    }
    const std::string listing = git(ws_, "ls-files", "listing the workspace");
    if (refs.empty() && test_refs.empty()) {
      // nothing named a line (ctest, automake and minitest name tests only): the failing tests' files
      std::istringstream files(listing);
      std::string path;
      while (std::getline(files, path)) {
        if (!is_test_file(path) || language_of(path).empty()) continue;
        std::string stem = fs::path(path).stem().string();
        if (stem.rfind("test_", 0) == 0 || stem.rfind("test-", 0) == 0) stem = stem.substr(5);
        if (stem.size() < 3) continue;
        bool named = false;
        for (const std::string& id : target_) named = named || id.find(stem) != std::string::npos;
        if (named) names.merge(called_names(read_file(fs::path(ws_) / path)));
      }
    }
    if (!names.empty()) {
      std::istringstream files(listing);
      std::string path;
      while (std::getline(files, path)) {
        if (is_test_file(path) || language_of(path).empty()) continue;
        std::vector<std::string> text;
        {
          std::ifstream f(fs::path(ws_) / path);
          for (std::string l; std::getline(f, l);) text.push_back(l);
        }
        for (size_t number = 0; number < text.size(); ++number) {
          for (const std::string& n : names) {
            if (!defines(text, number, n)) continue;
            for (int64_t k = 1; k <= 30; ++k) add(path, static_cast<int64_t>(number) + 1 + k);
            break;
          }
        }
      }
    }
    // candidate edits: the named lines first, then their neighbours
    std::set<std::pair<std::string, int64_t>> lines;
    for (int64_t radius : {0, 1, 2, 3}) {
      for (const auto& [path, line] : refs) {
        for (int64_t l : {line - radius, line + radius}) {
          if (l < 1 || !lines.insert({path, l}).second) continue;
          if (!originals_.count(path)) originals_[path] = read_file(fs::path(ws_) / path);
          const std::string& text = originals_[path];
          for (const Mutation& m : candidate_mutations(text, language_of(path), true)) {
            if (m.line != l - 1 || m.removes) continue;
            edits_.push_back({path, apply_mutation(text, m)});
            if (m.kind == "constant") {
              // the inverse of "plus one" is minus one
              Mutation minus = m;
              std::string after = m.after;
              size_t i = 0;
              while (i < after.size() && !(after[i] != m.before[i])) ++i;
              size_t j = i;
              while (j < after.size() && std::isdigit(static_cast<unsigned char>(after[j]))) ++j;
              const long long v = std::stoll(after.substr(i, j - i)) - 2;
              if (v >= 0) {
                minus.after = after.substr(0, i) + std::to_string(v) + after.substr(j);
                edits_.push_back({path, apply_mutation(text, minus)});
              }
            }
          }
        }
      }
    }
  }

  std::string ws_, test_cmd_, parser_, statement_;
  std::string runner_;      ///< the test command alone (test_cmd_ builds first)
  std::string target_cmd_;  ///< test_cmd_ narrowed to the target tests ("": the whole suite every time)
  bool started_ = false, restored_ = false, verifying_ = false, broken_build_ = false, cleaned_ = false;
  bool full_run_ = false;  ///< the last command ran the whole suite after the targets passed
  std::set<std::string> failing_, passing_, target_;
  std::vector<std::string> broken_;
  std::vector<Edit> edits_;
  size_t next_ = 0;
  std::map<std::string, std::string> originals_;
};

/// What the work tree holds besides base before the agent starts (the
/// environment's install and build: object files, generated sources): the
/// untracked files, and the tracked files already changed with their hashes.
struct Baseline {
  std::set<std::string> untracked;
  std::map<std::string, std::string> changed;
};

std::string file_hash(const std::string& ws, const std::string& path) {
  const CommandResult r = shell("git hash-object -- " + sh_quote(path) + " 2>/dev/null", ws);
  return r.exit_code == 0 ? r.output : "";
}

Baseline work_tree_baseline(const std::string& ws) {
  Baseline b;
  std::istringstream others(git(ws, "ls-files --others --exclude-standard -z", "listing untracked files"));
  for (std::string p; std::getline(others, p, '\0');) b.untracked.insert(p);
  std::istringstream changed(git(ws, "diff --name-only --no-renames -z", "listing changed files"));
  for (std::string p; std::getline(changed, p, '\0');) b.changed[p] = file_hash(ws, p);
  return b;
}

/// The diff of the work tree against 'base': test files, and what was there
/// before the agent started (untracked files, changed files it left as they
/// were), left out.
std::string agent_patch(const std::string& ws, const std::string& base, const Baseline& before) {
  git(ws, "add -A", "staging the agent's work");
  std::istringstream names(
      git(ws, "diff --cached --no-renames --name-only -z " + sh_quote(base), "listing the agent's diff"));
  std::vector<std::string> keep;
  std::string p;
  while (std::getline(names, p, '\0')) {
    if (p.empty() || is_test_file(p) || before.untracked.count(p)) continue;
    if (const auto c = before.changed.find(p); c != before.changed.end() && c->second == file_hash(ws, p)) continue;
    keep.push_back(p);
  }
  if (keep.empty()) return "";
  std::string args = "diff --cached --no-renames --binary --full-index " + sh_quote(base) + " --";
  for (const std::string& k : keep) args += " " + sh_quote(k);
  return git(ws, args, "writing the agent's diff");
}

}  // namespace

void distill_verb(const DistillOptions& o, const nk::RunEnv& run_env) {
  std::vector<Instance> instances = read_instances(o.input);
  const auto [first, last] = nk::shard_range(run_env.shard, static_cast<int64_t>(instances.size()));
  instances = std::vector<Instance>(instances.begin() + first, instances.begin() + last);
  const Sandbox sandbox = make_sandbox(o.sandbox, o.timeout, o.memory, "agents' commands");
  std::vector<std::string> repos;
  for (const Instance& i : instances) {
    if (i.fail_to_pass.empty())
      bad_input(o.input, "instance " + i.instance_id, "no FAIL_TO_PASS: distill takes validated instances");
    if (i.test_cmd.empty() || i.log_parser.empty())
      bad_input(o.input, "instance " + i.instance_id, "no test_cmd or log_parser: validate it first");
    const std::string repo = resolve_repo(o.store, i.repo_path.empty() ? i.repo : i.repo_path);
    if (!has_commit(repo, i.base_commit))
      bad_input(o.input, "instance " + i.instance_id, "base_commit " + i.base_commit + " is not in " + repo);
    repos.push_back(repo);
  }
  std::string kept;
  std::ostream& out = o.report ? *o.report : std::cout;
  int resolved = 0;
  nk::Progress progress("distill", static_cast<int64_t>(instances.size()));
  for (size_t k = 0; k < instances.size(); ++k) {
    const Instance& inst = instances[k];
    const std::string repo_name = fs::path(repos[k]).filename().string();
    RunLog::get().context(repo_name, "distill");
    const Environment env = environment_of(inst);
    // the agent works in a copy of the repository's prepared workspace moved to base_commit (built: its first
    // build is incremental), else in a fresh one where the environment's install step has run (a GOPATH link,
    // ...), as in the grading
    PreparedWorkspace* prepared = o.fresh ? nullptr : &shared_workspace(repos[k], inst.base_commit, env, sandbox);
    if (prepared && (!prepared->error().empty() || !prepared->restore(inst.base_commit).empty())) prepared = nullptr;
    std::optional<ScratchFolder> scratch;
    std::string ws;
    if (prepared) {
      ws = prepared->folder();
    } else {
      scratch.emplace("swe-crafter-agent");
      ws = scratch->path + "/ws";
      make_workspace(repos[k], inst.base_commit, ws);
      if (!inst.install.empty() && inst.install != "true") run_step(inst.install, ws, scratch->path, sandbox);
    }
    auto run = [&](const std::string& command) {
      return prepared ? prepared->run(command) : run_step(command, ws, scratch->path, sandbox);
    };
    const Baseline baseline = work_tree_baseline(ws);
    json steps = json::array();
    std::string ended = "submitted";
    try {
      std::unique_ptr<Agent> agent;
      if (o.agent_cmd.empty()) {
        agent = std::make_unique<BuiltinAgent>(ws);
      } else {
        agent = std::make_unique<CommandAgent>(o.agent_cmd);
      }
      std::string message = json{
          {"type", "task"},
          {"instance_id", inst.instance_id},
          {"problem_statement", inst.problem_statement},
          {"build", inst.build},
          {"test_cmd", inst.test_cmd},
          {"log_parser",
           inst.log_parser}}.dump(-1, ' ', false, json::error_handler_t::replace);
      int step = 0;
      const nk::Stopwatch trajectory_timer;
      for (;; ++step) {
        if (step > 0 && o.max_seconds > 0 && trajectory_timer.seconds() >= o.max_seconds) {
          ended = "time budget";
          break;
        }
        if (step >= o.max_steps) {
          ended = "max steps";
          break;
        }
        const std::string reply = agent->respond(message);
        json action;
        try {
          action = json::parse(reply);
        } catch (const std::exception&) {
          ended = "the agent's reply is not JSON";
          break;
        }
        const std::string kind = action.is_object() ? action.value("action", "") : "";
        if (kind == "submit") break;
        if (kind != "bash" || !action.contains("command") || !action["command"].is_string()) {
          ended = "unknown action";
          break;
        }
        const std::string command = action["command"].get<std::string>();
        const nk::SandboxedRun r = run(command);
        std::string output = r.sandbox_error.empty() ? r.output : "sandbox: " + r.sandbox_error;
        if (output.size() > 10000) output = output.substr(output.size() - 10000);
        steps.push_back({{"command", command}, {"output", output}, {"exit_code", r.exit_code}});
        spdlog::debug("{} step {}: {} -> exit {}", inst.instance_id, step + 1, command.substr(0, command.find('\n')),
                      r.exit_code);
        message = json{{"type", "observation"}, {"output", output}, {"exit_code", r.exit_code}}.dump(
            -1, ' ', false, json::error_handler_t::replace);
      }
    } catch (const nk::Error& e) {
      ended = std::string("the agent failed: ") + e.what();  // a broken agent ends its trajectory, not the run
    }
    // grading: the agent's diff without test files, on base + test_patch
    const std::string patch = agent_patch(ws, inst.base_commit, baseline);
    spdlog::debug("{}: the agent's diff:\n{}", inst.instance_id, patch);
    RunLog::get().context(repo_name, "grade");
    bool ok = false;
    std::string why;
    auto verdict = [&](const ParsedLog& log) {
      ok = true;
      for (const auto* list : {&inst.fail_to_pass, &inst.pass_to_pass}) {
        for (const std::string& id : *list) ok = ok && log.passed(id);
      }
      why = ok ? "resolved" : "tests fail";
    };
    // the agent's patch as the state after the fix, built and tested as validate builds and tests it (from the
    // prepared workspace when it can take the state: a stale build never fails an agent)
    Instance graded = inst;
    graded.patch = patch;
    const StateRuns after = state_runs(repos[k], graded, prepared, true, 1, false, sandbox);
    if (!after.error.empty()) {
      why = after.error;
    } else {
      verdict(after.logs.at(0));
    }
    RunLog::get().trajectory(repo_name, inst.instance_id, o.agent_cmd.empty() ? "builtin" : o.agent_cmd, ok,
                             static_cast<int64_t>(steps.size()));
    out << inst.instance_id << "\t" << (ok ? "resolved" : "unresolved") << "\t" << steps.size() << " steps, "
              << ended << "; " << why << "\n";
    out.flush();
    if (ok) {
      ++resolved;
      json t;
      t["instance_id"] = inst.instance_id;
      t["agent"] = o.agent_cmd.empty() ? "builtin" : o.agent_cmd;
      t["steps"] = steps;
      t["patch"] = patch;
      t["resolved"] = true;
      kept += t.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    }
    progress.update(static_cast<int64_t>(k + 1));
  }
  progress.finish();
  spdlog::info("{} instances: {} resolved by {}", instances.size(), resolved,
               o.agent_cmd.empty() ? "the builtin agent" : "--agent-cmd");
  write_text(o.output, kept, o.no_clobber);
}

}  // namespace swec
