// context.cpp - process-wide run context and small provenance helpers.
#include "nk/context.hpp"

#include <ctime>

#ifndef NK_VERSION
#define NK_VERSION "0.0.0"
#endif

namespace nk {

RunContext& run_context() {
  static RunContext context = [] {
    RunContext initial;
    initial.version = NK_VERSION;
    return initial;
  }();
  return context;
}

const char* version() { return NK_VERSION; }

std::string join_command(int argc, const char* const* argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    const bool plain = !arg.empty() && arg.find_first_of(" \t\n'\"\\$`*?;&|<>()[]{}!#~") == std::string::npos;
    if (i) line += ' ';
    if (plain) {
      line += arg;
    } else {
      line += '\'';
      for (char c : arg) line += (c == '\'') ? std::string("'\\''") : std::string(1, c);
      line += '\'';
    }
  }
  return line;
}

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm parts{};
  gmtime_r(&now, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return text;
}

}  // namespace nk
