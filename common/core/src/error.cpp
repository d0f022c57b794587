// error.cpp - message formatting for nk::Error.
#include "nk/error.hpp"

namespace nk {

std::string display_name(const std::string& path, bool output) {
  if (path == "-") return output ? "'-' (standard output)" : "'-' (standard input)";
  return "'" + path + "'";
}

Error input_error(const std::string& file, const std::string& dataset, const std::string& message) {
  std::string text = "input " + display_name(file);
  if (!dataset.empty()) text += ": dataset " + dataset;
  return Error(Exit::input, text + ": " + message);
}

Error io_error(const std::string& file, const std::string& message) {
  return Error(Exit::io, display_name(file) + ": " + message);
}

Error usage_error(const std::string& message) { return Error(Exit::usage, message); }

}  // namespace nk
