// workspace.cpp - prepared workspaces: install and build once, then a copy of
// the snapshot per state, moved by git and rebuilt incrementally.

// GCC 12 at -O3 warns of overlapping copies in "literal" + std::string&& (a false
// positive, GCC bug 105651).
#pragma GCC diagnostic ignored "-Wrestrict"
#include "swe-crafter/workspace.hpp"

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "nk/error.hpp"
#include "swe-crafter/git.hpp"
#include "swe-crafter/testrule.hpp"

namespace fs = std::filesystem;

namespace swec {

namespace {

/// Removes a folder that builds may have left read-only (Go's module cache).
void remove_tree(const std::string& folder) {
  shell("chmod -R u+w " + sh_quote(folder) + " 2>/dev/null; rm -rf " + sh_quote(folder), ".", 1800);
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace

PreparedWorkspace::PreparedWorkspace(const std::string& repo, const std::string& rev, const Environment& env,
                                     const Sandbox& sandbox)
    : scratch_("swe-crafter-ws"), env_(env), sandbox_(sandbox), rev_(rev) {
  run_ = scratch_.path + "/run";
  base_ = scratch_.path + "/base";
  ws_ = run_ + "/ws";
  try {
    make_workspace(repo, rev, ws_);
  } catch (const std::exception& e) {
    error_ = e.what();
    return;
  }
  if (const std::string prepare = prepare_command(env.install, env.build); !prepare.empty()) {
    const nk::SandboxedRun b = run_step(prepare, ws_, run_, sandbox_);
    if (b.exit_code != 0) {
      error_ = !b.sandbox_error.empty() ? "sandbox: " + b.sandbox_error
               : b.output.empty()       ? "the prepare step exited " + std::to_string(b.exit_code)
                                        : b.output;
      return;
    }
  }
  prepared_at_ = std::chrono::system_clock::now();
  // cp -a keeps links, modes and times: make and its kin see what was built as up to date
  const CommandResult c = shell("cp -a " + sh_quote(run_) + " " + sh_quote(base_), ".", 1800);
  if (c.exit_code != 0) error_ = "copying the prepared workspace failed: " + c.output;
}

PreparedWorkspace::~PreparedWorkspace() {
  remove_tree(scratch_.path);
}

std::string PreparedWorkspace::restore(const std::string& rev) {
  if (!error_.empty()) return "the workspace was not prepared";
  if (!waited_) {
    // every file written from now on lies in a later second than anything the prepare wrote: make compares
    // times, Python's bytecode cache whole seconds (and the size, which a flipped operator keeps)
    std::this_thread::sleep_until(prepared_at_ + std::chrono::milliseconds(1100));
    waited_ = true;
  }
  remove_tree(run_);
  const CommandResult c = shell("cp -a " + sh_quote(base_) + " " + sh_quote(run_), ".", 1800);
  if (c.exit_code != 0) return "copying the prepared workspace failed: " + c.output;
  // the copy's files are new inodes: the index's stat data is refreshed, or git takes every file for changed
  shell("git update-index -q --refresh > /dev/null 2>&1", ws_);
  if (rev == rev_) return "";
  const CommandResult r =
      shell("git -c advice.detachedHead=false checkout -q --detach " + sh_quote(rev) + " 2>&1", ws_);
  return r.exit_code == 0 ? "" : "git checkout " + rev + ": " + trimmed(r.output);
}

std::string PreparedWorkspace::apply(const std::string& patch) { return apply_patch(ws_, patch, run_, true); }

void PreparedWorkspace::write_file(const std::string& path, const std::string& content) {
  const fs::path file = fs::path(ws_) / path;
  {
    std::ofstream f(file, std::ios::binary | std::ios::trunc);
    f << content;
    if (!f.flush()) throw nk::io_error(file.string(), "cannot write the file");
  }
  git(ws_, "add -- " + sh_quote(path), "staging " + path);
}

PreparedWorkspace::Rebuild PreparedWorkspace::needs(std::string* why) const {
  // what the state changes against the snapshot's commit: the index holds the checkout and the patches, not
  // what the prepare step wrote into the work tree
  Rebuild how = Rebuild::build;
  std::istringstream changes(
      git(ws_, "diff --cached --name-status --no-renames " + sh_quote(rev_), "listing the state's changes"));
  std::string line;
  while (std::getline(changes, line)) {
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    const std::string path = line.substr(tab + 1);
    const Rebuild here = is_build_description(path)
                             ? (line[0] == 'M' && regenerates_from(env_.build_system, path) ? Rebuild::regenerate
                                                                                             : Rebuild::scratch)
                         : line[0] != 'M' && (is_code_file(path) || is_test_file(path)) ? Rebuild::prepare
                                                                                        : Rebuild::build;
    if (here > how) {
      how = here;
      if (why) *why = path;
    }
  }
  return how;
}

nk::SandboxedRun PreparedWorkspace::rebuild(Rebuild how, bool* ran) {
  const std::string command = prepare_command(how == Rebuild::build ? std::string() : env_.install, env_.build);
  if (ran) *ran = !command.empty();
  if (command.empty()) {
    nk::SandboxedRun nothing;
    nothing.exit_code = 0;
    return nothing;
  }
  return run_step(command, ws_, run_, sandbox_);
}

nk::SandboxedRun PreparedWorkspace::run(const std::string& command, double timeout) {
  Sandbox limited = sandbox_;
  if (timeout > 0 && timeout < limited.timeout) limited.timeout = timeout;
  return run_step(command, ws_, run_, limited);
}

std::string PreparedWorkspace::clean_paths(std::string output) const {
  for (size_t at; (at = output.find(ws_)) != std::string::npos;) output.replace(at, ws_.size(), ".");
  for (size_t at; (at = output.find(run_)) != std::string::npos;) output.replace(at, run_.size(), ".");
  return output;
}

PreparedWorkspace& shared_workspace(const std::string& repo, const std::string& rev, const Environment& env,
                                    const Sandbox& sandbox) {
  static std::unique_ptr<PreparedWorkspace> held;
  static std::string held_key;
  const std::string key = repo + '\n' + env.install + '\n' + env.build + '\n' +
                          std::to_string(static_cast<int>(sandbox.mode)) + '\n' + std::to_string(sandbox.timeout) +
                          '\n' + std::to_string(sandbox.memory_bytes);
  if (!held || key != held_key) {
    held.reset();  // its folder goes before the next is made
    held = std::make_unique<PreparedWorkspace>(repo, rev, env, sandbox);
    held_key = key;
  }
  return *held;
}

}  // namespace swec
