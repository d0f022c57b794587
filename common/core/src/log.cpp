// log.cpp - the stderr logger.
#include "nk/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace nk::log {

namespace {
bool g_chatty = true;
}

void init(const std::string& tool, int verbosity) {
  spdlog::drop(tool);
  auto logger = spdlog::stderr_color_mt(tool);
  logger->set_pattern("%n: %^%l%$: %v");
  spdlog::level::level_enum level = spdlog::level::info;
  if (verbosity < 0) level = spdlog::level::warn;
  if (verbosity == 1) level = spdlog::level::debug;
  if (verbosity >= 2) level = spdlog::level::trace;
  logger->set_level(level);
  spdlog::set_default_logger(logger);
  g_chatty = verbosity >= 0;
}

bool chatty() { return g_chatty; }

}  // namespace nk::log
