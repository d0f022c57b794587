// git.hpp - the store's repositories through the git command line (the
// well-kept tool): clones, commits of a tree, history, diffs, workspaces.
#pragma once
#include <string>
#include <vector>

namespace swec {

/// 'text' quoted for /bin/sh.
std::string sh_quote(const std::string& text);

struct CommandResult {
  int exit_code = -1;
  std::string output;
  double seconds = 0;
  bool timed_out = false;
};

/// Runs a shell command in 'folder' (no sandbox: the tool's own plumbing),
/// output captured. Never throws.
CommandResult shell(const std::string& command, const std::string& folder, double timeout = 600);

/// `git ARGS` in 'repo' (already quoted); exit 1 naming 'what' on failure.
std::string git(const std::string& repo, const std::string& args, const std::string& what);

struct Commit {
  std::string sha, parent, date, message;  ///< parent: the first parent ("" for a root commit)
};

/// First-parent history of 'rev', newest first.
std::vector<Commit> first_parent_log(const std::string& repo, const std::string& rev);
/// Paths a commit changes against 'parent'.
std::vector<std::string> changed_paths(const std::string& repo, const std::string& parent, const std::string& sha);
/// The binary diff parent..sha restricted to 'paths' ("" when none).
std::string diff_paths(const std::string& repo, const std::string& parent, const std::string& sha,
                       const std::vector<std::string>& paths);
/// Whether 'sha' names a commit of 'repo'.
bool has_commit(const std::string& repo, const std::string& sha);

/// A writable copy of 'repo' at 'sha' in 'folder' (objects shared, its own
/// work tree and index).
void make_workspace(const std::string& repo, const std::string& sha, const std::string& folder);
/// Applies a patch in a workspace (with 'index', to its index too); "" or
/// why it does not apply.
std::string apply_patch(const std::string& workspace, const std::string& patch, const std::string& scratch,
                        bool index = false);

/// "" when 'patch' applies to 'sha' of 'repo' (checked against a temporary
/// index: nothing is checked out), else why not.
std::string check_patch(const std::string& repo, const std::string& sha, const std::string& patch,
                        const std::string& scratch);

/// Commits the whole work tree of 'repo' (git add -A) with 'message';
/// returns the new commit (the current one when nothing changed).
std::string commit_all(const std::string& repo, const std::string& message, const std::string& date = "");

}  // namespace swec
