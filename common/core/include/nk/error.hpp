// error.hpp - the exceptions every tool throws, and the exit codes they map to.
#pragma once
#include <stdexcept>
#include <string>

namespace nk {

/// Exit codes shared by every neurkit binary (documented in neurkit(7)).
enum class Exit : int {
  ok = 0,
  runtime = 1,  ///< a failure while running (out of memory, device error, ...)
  usage = 2,    ///< bad command line
  input = 3,    ///< the input data is invalid (shape, dtype, NaN, schema, ...)
  io = 4,       ///< a file cannot be opened, read or written
};

/// An error with the exit code it should end the program with.
class Error : public std::runtime_error {
 public:
  Error(Exit code, const std::string& message) : std::runtime_error(message), code_(code) {}
  Exit code() const { return code_; }

 private:
  Exit code_;
};

/// "input 'FILE': dataset /D: MESSAGE" (dataset omitted when empty); exit 3.
Error input_error(const std::string& file, const std::string& dataset, const std::string& message);
/// Same wording as input_error, exit 4.
Error io_error(const std::string& file, const std::string& message);
/// A usage error (exit 2), e.g. contradictory options found after parsing.
Error usage_error(const std::string& message);

/// Shows '-' as "standard input"/"standard output" in messages.
std::string display_name(const std::string& path, bool output = false);

}  // namespace nk
