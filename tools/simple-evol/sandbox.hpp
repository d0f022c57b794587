// sandbox.hpp - where a candidate heuristic runs: a forked worker in new user
// and network namespaces (no network, loopback included), writes confined to
// a scratch folder by Landlock, no new processes, memory and CPU limits.
#pragma once
#include <cstdint>
#include <string>

namespace sevol {

enum class SandboxMode {
  namespaces,  ///< user + network namespaces, Landlock, rlimits (the default)
  none,        ///< rlimits only: for machines without unprivileged namespaces
};

/// "namespace" or "none"; anything else is a usage error.
SandboxMode parse_sandbox(const std::string& text);

struct SandboxLimits {
  std::string scratch;       ///< the only folder the worker may write to
  int64_t memory_bytes = 0;  ///< address space beyond what the zygote maps (0: none)
  double cpu_seconds = 0;    ///< RLIMIT_CPU (0: none)
};

/// Enters the sandbox in a freshly forked, single-threaded child: its own
/// process group, killed with its parent, stdin/stdout/stderr on /dev/null,
/// working folder 'scratch'. Returns "" or why a step failed.
std::string enter_sandbox(SandboxMode mode, const SandboxLimits& limits);

/// A new private folder under $TMPDIR (or /tmp) named NAME-XXXXXX; "" when
/// it cannot be made ('why' then says why).
std::string make_scratch(const std::string& name, std::string& why);

/// "" when the namespace sandbox works on this machine (probed once in a
/// forked child), else why not.
std::string namespace_sandbox_unavailable();

}  // namespace sevol
