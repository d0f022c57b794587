// context.hpp - what the running tool is, for provenance and messages.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nk {

struct RunContext {
  std::string tool = "neurkit";       ///< binary name, e.g. "nk-data"
  std::string version;                ///< neurkit version
  std::string command;                ///< argv joined, shell-quoted where needed
  std::optional<uint64_t> seed;       ///< set when the run uses randomness
  std::string shard;                  ///< "I/N" when the run is one shard
};

/// The process-wide context, filled by nk::cli::run before the tool body runs.
RunContext& run_context();

/// Joins argv into one line, quoting arguments that the shell would split.
std::string join_command(int argc, const char* const* argv);

/// The current UTC time as ISO 8601, e.g. "2026-11-30T10:09:19Z".
std::string utc_now_iso8601();

/// The neurkit version string, e.g. "0.1.0".
const char* version();

}  // namespace nk
