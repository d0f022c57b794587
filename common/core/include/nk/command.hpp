// command.hpp - a user's program as a filter: the request goes to its
// standard input, its standard output comes back (--judge-cmd, --cost cmd:).
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nk {

/// Runs 'command' through /bin/sh with 'input' on its standard input (a
/// temporary file in $TMPDIR, default /tmp, removed afterwards) and returns
/// its standard output. 'option' names the option in messages ("--judge-cmd").
/// A command that cannot start or exits non-zero is exit 1 naming it, its
/// status and 'what' (the request, e.g. "on latent 3").
std::string run_command(const std::string& command, std::string_view input, const std::string& option,
                        const std::string& what);

/// A user's program kept running beside the tool and spoken to in frames
/// (--model-cmd: many batches, one start-up). It runs through /bin/sh with
/// its standard input and output on a socket pair (so that writing to a
/// program that has gone is an error, not SIGPIPE); its standard error is the
/// tool's. Every failure is exit 1 naming 'option', the command and what was
/// being done: it cannot start, it closed its output early (a short read), it
/// stopped reading, it exited non-zero.
class Coprocess {
 public:
  /// 'environment' adds NAME=VALUE pairs to the program's environment.
  Coprocess(const std::string& command, std::string option,
            const std::vector<std::pair<std::string, std::string>>& environment = {});
  ~Coprocess();
  Coprocess(const Coprocess&) = delete;
  Coprocess& operator=(const Coprocess&) = delete;

  void write(const void* data, size_t bytes);
  /// Exactly 'bytes' bytes; a short read is an error naming 'what'.
  void read(void* data, size_t bytes, const std::string& what);
  /// One line without its newline, at most 'limit' bytes.
  std::string read_line(size_t limit, const std::string& what);
  /// Closes the program's input and waits for it; a non-zero exit is an error.
  void finish();

 private:
  [[noreturn]] void fail(const std::string& what);
  std::string command_, option_;
  int socket_ = -1;
  pid_t pid_ = -1;
};

}  // namespace nk
