// instance.hpp - SWE-bench's instance, one JSON object per line, with this
// tool's fields beside the standard ones.
#pragma once
#include <string>
#include <vector>

#include "swe-crafter/buildsys.hpp"

namespace swec {

struct Instance {
  // SWE-bench's fields
  std::string instance_id, repo, base_commit, patch, test_patch, problem_statement, hints_text, created_at;
  std::string version = "0", environment_setup_commit;
  std::vector<std::string> fail_to_pass, pass_to_pass;
  // this tool's
  std::string language, build_system, install, build, test_cmd, log_parser;
  std::string source = "git";           ///< git, release, debian-patch or synthetic
  std::string repo_path;                ///< the store repository holding base_commit
  std::vector<std::string> test_files;  ///< the files test_patch touches (SWE-bench's directives)
};

std::string to_json_line(const Instance& instance);

/// The instance's commands and log parser as an Environment.
Environment environment_of(const Instance& instance);
/// The instance's test files that exist in 'work_tree' (what its test
/// command is narrowed to).
std::vector<std::string> present_test_files(const Instance& instance, const std::string& work_tree);

/// "input 'FILE': WHERE: MESSAGE" on one line (newlines joined by "; "), exit 3.
[[noreturn]] void bad_input(const std::string& file, const std::string& where, const std::string& message);

/// Every instance of a JSONL file ('-' = standard input). Malformed JSON, a
/// missing field or a duplicate instance_id is exit 3 naming file and line.
std::vector<Instance> read_instances(const std::string& path);

/// A file's whole text ("" when it cannot be read).
std::string read_text(const std::string& path);

/// Writes lines to 'path' ('-' = standard output) all at once, or not at all.
void write_text(const std::string& path, const std::string& text, bool no_clobber);

}  // namespace swec
