// workspace.hpp - a repository's workspace prepared (install and build) once
// at one commit and kept as a snapshot; each state to test starts from a copy
// of it at the same path (build trees hold absolute paths), is moved to its
// commit and patches by git, and rebuilds only what changed.
#pragma once
#include <chrono>
#include <string>

#include "swe-crafter/buildsys.hpp"

namespace swec {

class PreparedWorkspace {
 public:
  /// Checks out 'rev' of 'repo' in a private folder and runs the install and
  /// build steps of 'env' there (in the sandbox); the snapshot is kept when
  /// they succeed.
  PreparedWorkspace(const std::string& repo, const std::string& rev, const Environment& env, const Sandbox& sandbox);
  ~PreparedWorkspace();
  PreparedWorkspace(const PreparedWorkspace&) = delete;
  PreparedWorkspace& operator=(const PreparedWorkspace&) = delete;

  /// "" when prepared; else the prepare's output, or why it could not run.
  const std::string& error() const { return error_; }
  /// The commit the snapshot was prepared at.
  const std::string& commit() const { return rev_; }

  /// A fresh copy of the snapshot at folder(), checked out at 'rev' (git
  /// rewrites only the files that differ). "" or why not: the caller then
  /// builds the state from scratch.
  std::string restore(const std::string& rev);
  /// Applies a patch to the copy, its index too (so that rebuild() sees the
  /// files it adds or deletes); "" or why it does not apply.
  std::string apply(const std::string& patch);
  /// Replaces a tracked file's content in the copy (index too).
  void write_file(const std::string& path, const std::string& content);
  /// What the state's changes against the snapshot's commit need: the build
  /// step alone when they change only existing files that are not build
  /// descriptions; install and build again when they add, delete or rename
  /// code or test files (a CMake glob, a new test file; documentation and
  /// data need no rebuild); install and build again when they change a
  /// build description that the build system regenerates its build from
  /// (regenerates_from: CMake's CMakeLists.txt, Cargo.toml, go.mod; the
  /// caller goes to scratch when that build fails, in either state); a
  /// build from scratch when they change another build description
  /// (is_build_description: a stale tree could differ from a fresh one).
  /// 'why' names the file that decided.
  enum class Rebuild { build, prepare, regenerate, scratch };
  Rebuild needs(std::string* why = nullptr) const;
  /// Runs the build step (Rebuild::build) or install and build (otherwise)
  /// in the copy; 'ran' says whether there was a command to run (exit 0
  /// when there was none).
  nk::SandboxedRun rebuild(Rebuild how, bool* ran = nullptr);
  /// Runs a command in the copy, in the sandbox; 'timeout' > 0 lowers the
  /// sandbox's time limit for this command.
  nk::SandboxedRun run(const std::string& command, double timeout = 0);

  const std::string& folder() const { return ws_; }
  /// 'output' with the copy's paths written as "." (a statement must not
  /// depend on where the run happened).
  std::string clean_paths(std::string output) const;

 private:
  ScratchFolder scratch_;
  Environment env_;
  Sandbox sandbox_;
  std::string rev_, run_, base_, ws_, error_;
  std::chrono::system_clock::time_point prepared_at_;
  bool waited_ = false;
};

/// The process's prepared workspace for a repository, its install and build
/// commands and the sandbox: made at 'rev' when there is none for them (the
/// one before is dropped: one snapshot at a time), so that mine --synthetic,
/// validate and distill of one run share it. A failed prepare is kept (its
/// error() says why) and not retried for the same key.
PreparedWorkspace& shared_workspace(const std::string& repo, const std::string& rev, const Environment& env,
                                    const Sandbox& sandbox);

}  // namespace swec
