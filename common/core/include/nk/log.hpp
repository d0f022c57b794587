// log.hpp - spdlog on standard error, shared by every tool.
#pragma once
#include <spdlog/spdlog.h>

#include <string>

namespace nk::log {

/// Sets up the default logger: stderr only, "tool: level: message".
/// verbosity: -1 quiet (warnings and errors), 0 info, 1 debug, 2+ trace.
void init(const std::string& tool, int verbosity);

/// True unless -q was given (progress bars and info lines are shown).
bool chatty();

}  // namespace nk::log
