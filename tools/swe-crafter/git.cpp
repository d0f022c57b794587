// git.cpp - git through its command line.
#include "swe-crafter/git.hpp"

// GCC 12 at -O3 warns of overlapping copies in "literal" + std::string&& (a false
// positive, GCC bug 105651); these files build commands that way throughout.
#pragma GCC diagnostic ignored "-Wrestrict"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "nk/error.hpp"
#include "nk/sandbox.hpp"

namespace swec {

std::string sh_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

CommandResult shell(const std::string& command, const std::string& folder, double timeout) {
  nk::SandboxSpec spec;
  spec.workdir = folder;
  spec.forbid_processes = false;
  spec.file_bytes = int64_t{1} << 40;
  const nk::SandboxedRun r = nk::run_sandboxed(command, nk::SandboxMode::none, spec, timeout,
                                               {{"GIT_CONFIG_NOSYSTEM", "1"},
                                                {"GIT_AUTHOR_NAME", "swe-crafter"},
                                                {"GIT_AUTHOR_EMAIL", "swe-crafter@localhost"},
                                                {"GIT_COMMITTER_NAME", "swe-crafter"},
                                                {"GIT_COMMITTER_EMAIL", "swe-crafter@localhost"},
                                                {"LC_ALL", "C"}},
                                               size_t{256} << 20);
  CommandResult out;
  out.exit_code = r.exit_code;
  out.output = r.sandbox_error.empty() ? r.output : r.sandbox_error;
  out.seconds = r.seconds;
  out.timed_out = r.timed_out;
  return out;
}

std::string git(const std::string& repo, const std::string& args, const std::string& what) {
  const CommandResult r = shell("git " + args + " 2>&1", repo);
  if (r.exit_code != 0) {
    std::string tail = r.output;
    if (tail.size() > 400) tail = "..." + tail.substr(tail.size() - 400);
    while (!tail.empty() && tail.back() == '\n') tail.pop_back();
    throw nk::Error(nk::Exit::runtime, what + ": git " + args + " exited " + std::to_string(r.exit_code) + ": " + tail);
  }
  return r.output;
}

std::vector<Commit> first_parent_log(const std::string& repo, const std::string& rev) {
  // records end with \x1e, fields split by \x1f
  const std::string text =
      git(repo, "log --first-parent --format=%H%x1f%P%x1f%aI%x1f%B%x1e " + sh_quote(rev), "reading the history");
  std::vector<Commit> out;
  std::istringstream in(text);
  std::string record;
  while (std::getline(in, record, '\x1e')) {
    while (!record.empty() && (record.front() == '\n')) record.erase(0, 1);
    if (record.empty()) continue;
    std::vector<std::string> f;
    std::istringstream fields(record);
    std::string field;
    while (std::getline(fields, field, '\x1f')) f.push_back(field);
    if (f.size() < 4) continue;
    Commit c;
    c.sha = f[0];
    c.parent = f[1].substr(0, f[1].find(' '));
    c.date = f[2];
    c.message = f[3];
    while (!c.message.empty() && c.message.back() == '\n') c.message.pop_back();
    out.push_back(c);
  }
  return out;
}

std::vector<std::string> changed_paths(const std::string& repo, const std::string& parent, const std::string& sha) {
  const std::string text =
      git(repo, "diff --no-renames --name-only -z " + sh_quote(parent) + " " + sh_quote(sha), "listing a diff");
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string path;
  while (std::getline(in, path, '\0')) {
    if (!path.empty()) out.push_back(path);
  }
  return out;
}

std::string diff_paths(const std::string& repo, const std::string& parent, const std::string& sha,
                       const std::vector<std::string>& paths) {
  if (paths.empty()) return "";
  std::string args = "diff --no-renames --binary --full-index " + sh_quote(parent) + " " + sh_quote(sha) + " --";
  for (const std::string& p : paths) args += " " + sh_quote(p);
  return git(repo, args, "writing a diff");
}

bool has_commit(const std::string& repo, const std::string& sha) {
  return shell("git cat-file -e " + sh_quote(sha + "^{commit}") + " 2>/dev/null", repo).exit_code == 0;
}

void make_workspace(const std::string& repo, const std::string& sha, const std::string& folder) {
  git(".", "clone -q --shared --no-checkout " + sh_quote(repo) + " " + sh_quote(folder), "making a workspace");
  git(folder, "checkout -q --detach " + sh_quote(sha), "checking out " + sha);
}

std::string apply_patch(const std::string& workspace, const std::string& patch, const std::string& scratch,
                        bool index) {
  if (patch.empty()) return "";
  const std::string file = scratch + "/patch.diff";
  {
    std::ofstream f(file, std::ios::binary);
    f << patch;
    if (!f.flush()) return "cannot write " + file;
  }
  const CommandResult r =
      shell(std::string("git apply ") + (index ? "--index " : "") + "--whitespace=nowarn " + sh_quote(file) + " 2>&1",
            workspace);
  std::remove(file.c_str());
  if (r.exit_code == 0) return "";
  std::string why = r.output;
  while (!why.empty() && why.back() == '\n') why.pop_back();
  return why.empty() ? "git apply exited " + std::to_string(r.exit_code) : why;
}

std::string check_patch(const std::string& repo, const std::string& sha, const std::string& patch,
                        const std::string& scratch) {
  if (patch.empty()) return "";
  const std::string file = scratch + "/check.diff", index = scratch + "/check.index";
  {
    std::ofstream f(file, std::ios::binary);
    f << patch;
    if (!f.flush()) return "cannot write " + file;
  }
  const std::string env = "GIT_INDEX_FILE=" + sh_quote(index) + " ";
  CommandResult r = shell(env + "git read-tree " + sh_quote(sha) + " 2>&1", repo);
  if (r.exit_code == 0)
    r = shell(env + "git apply --cached --check --whitespace=nowarn " + sh_quote(file) + " 2>&1", repo);
  std::remove(index.c_str());
  if (r.exit_code == 0) return "";
  std::string why = r.output;
  while (!why.empty() && why.back() == '\n') why.pop_back();
  return why.empty() ? "git apply exited " + std::to_string(r.exit_code) : why;
}

std::string commit_all(const std::string& repo, const std::string& message, const std::string& date) {
  git(repo, "add -A", "staging");
  const std::string dates =
      date.empty() ? "" : "GIT_AUTHOR_DATE=" + sh_quote(date) + " GIT_COMMITTER_DATE=" + sh_quote(date) + " ";
  const CommandResult r =
      shell(dates + "git commit -q --allow-empty-message --no-verify -m " + sh_quote(message) + " 2>&1", repo);
  if (r.exit_code != 0 && r.output.find("nothing to commit") == std::string::npos)
    throw nk::Error(nk::Exit::runtime, "committing in '" + repo + "': " + r.output);
  std::string head = git(repo, "rev-parse HEAD", "reading HEAD");
  while (!head.empty() && head.back() == '\n') head.pop_back();
  return head;
}

}  // namespace swec
