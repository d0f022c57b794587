// sandbox.hpp - where untrusted code runs: a forked child in new user and
// network namespaces (no network, loopback included), writes confined by
// Landlock to the folders it is given, optionally no new processes, and
// resource limits. simple-evol's heuristic workers and swe-crafter's build
// and test commands run in it.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace nk {

enum class SandboxMode {
  namespaces,  ///< user + network namespaces, Landlock, rlimits (the default)
  none,        ///< rlimits only: for machines without unprivileged namespaces
};

/// "namespace" or "none"; anything else is a usage error naming 'option'.
SandboxMode parse_sandbox(const std::string& text, const std::string& option = "--sandbox");

struct SandboxSpec {
  std::vector<std::string> writable;        ///< the only folders (with what is beneath) that may be written
  std::string workdir;                      ///< the working folder
  int64_t memory_bytes = 0;                 ///< address space beyond what the process maps now (0: none)
  /// run_sandboxed: a memory cgroup's limit for the command and all it
  /// starts (cgroup v2, else v1, where a child cgroup can be made; 0: none).
  /// Unlike RLIMIT_AS it leaves the JVM's, Go's and node's reservations be.
  int64_t cgroup_memory_bytes = 0;
  double cpu_seconds = 0;                   ///< RLIMIT_CPU (0: none)
  int64_t file_bytes = int64_t{256} << 20;  ///< RLIMIT_FSIZE
  int64_t processes = 0;                    ///< RLIMIT_NPROC above the user's current count (0: no limit)
  bool forbid_processes = true;             ///< seccomp: fork, vfork, clone and clone3 fail (EPERM)
  bool null_stdio = true;                   ///< standard input, output and error on /dev/null
};

/// Enters the sandbox in a freshly forked, single-threaded child: its own
/// process group, killed with its parent, working folder spec.workdir; in
/// the namespaces the user keeps its own uid and gid (mapped to themselves).
/// Besides spec.writable, /dev/null stays writable. Returns "" or why a step
/// failed. Under SandboxMode::none the seccomp filter is best effort.
std::string enter_sandbox(SandboxMode mode, const SandboxSpec& spec);

/// "" when a memory cgroup can be made here (v2, else v1), else why not;
/// 'kind' gets "cgroup v2" or "cgroup v1".
std::string memory_cgroup_unavailable(std::string& kind);

/// A new private folder under $TMPDIR (or /tmp) named NAME-XXXXXX; "" when
/// it cannot be made ('why' then says why).
std::string make_scratch(const std::string& name, std::string& why);

/// "" when the namespace sandbox works on this machine (probed once in a
/// forked child), else why not.
std::string namespace_sandbox_unavailable();

struct SandboxedRun {
  int exit_code = -1;         ///< the shell's status; 128 + signal when killed; -1 when it never ran
  bool timed_out = false;     ///< killed (with its process group) at the time limit
  double seconds = 0;         ///< wall clock
  std::string output;         ///< standard output and error interleaved (the last max_output bytes)
  bool truncated = false;     ///< output was longer than max_output
  std::string sandbox_error;  ///< non-empty: the sandbox could not be entered (the command did not run)
  std::string memory_limit;   ///< "4096 MiB by cgroup v2" (or v1), or why no memory limit held ("" when none asked)
  bool out_of_memory = false;  ///< the cgroup's limit killed a process of the command
};

/// Runs `/bin/sh -c command` inside the sandbox (processes allowed unless
/// spec says otherwise; standard input /dev/null), with 'environment' added
/// to the tool's; after 'timeout' seconds (0: none) its process group is
/// killed. With spec.cgroup_memory_bytes the child joins a fresh memory
/// cgroup first; at the end every process left in it (a daemon that left
/// the process group included) is killed and the cgroup removed.
/// Where none can be made the command runs without a memory limit and
/// memory_limit says why.
SandboxedRun run_sandboxed(const std::string& command, SandboxMode mode, const SandboxSpec& spec, double timeout,
                           const std::vector<std::pair<std::string, std::string>>& environment = {},
                           size_t max_output = size_t{1} << 20);

}  // namespace nk
