// command.cpp - see command.hpp.
#include "nk/command.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "nk/error.hpp"

namespace nk {

std::string run_command(const std::string& command, std::string_view input, const std::string& option,
                        const std::string& what) {
  const char* dir = std::getenv("TMPDIR");
  std::string name = std::string(dir && *dir ? dir : "/tmp") + "/nk-request-XXXXXX";
  std::vector<char> path(name.begin(), name.end());
  path.push_back('\0');
  const int fd = mkstemp(path.data());
  if (fd < 0) throw Error(Exit::io, option + ": cannot make a temporary file for the request in " + name);
  const std::string file(path.data());
  size_t written = 0;
  while (written < input.size()) {
    const ssize_t n = write(fd, input.data() + written, input.size() - written);
    if (n <= 0) {
      close(fd);
      std::remove(file.c_str());
      throw Error(Exit::io, option + ": cannot write the request to " + file);
    }
    written += static_cast<size_t>(n);
  }
  close(fd);
  FILE* pipe = popen((command + " < '" + file + "'").c_str(), "r");
  if (!pipe) {
    std::remove(file.c_str());
    throw Error(Exit::runtime, option + " '" + command + "': cannot start it");
  }
  std::string reply;
  char buffer[4096];
  size_t got = 0;
  while ((got = fread(buffer, 1, sizeof buffer, pipe)) > 0) reply.append(buffer, got);
  const int status = pclose(pipe);
  std::remove(file.c_str());
  if (status != 0)
    throw Error(Exit::runtime,
                option + " '" + command + "' failed (status " + std::to_string(status) + ") " + what);
  return reply;
}

}  // namespace nk
