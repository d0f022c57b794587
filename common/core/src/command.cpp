// command.cpp - see command.hpp.
#include "nk/command.hpp"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

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

Coprocess::Coprocess(const std::string& command, std::string option,
                     const std::vector<std::pair<std::string, std::string>>& environment)
    : command_(command), option_(std::move(option)) {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) fail("cannot make a socket pair");
  pid_ = fork();
  if (pid_ < 0) {
    close(pair[0]);
    close(pair[1]);
    fail("cannot fork");
  }
  if (pid_ == 0) {
    // The child: its stdin and stdout are the socket's far end.
    dup2(pair[1], STDIN_FILENO);
    dup2(pair[1], STDOUT_FILENO);
    signal(SIGPIPE, SIG_DFL);
    for (const auto& [name, value] : environment) setenv(name.c_str(), value.c_str(), 1);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(pair[1]);
  socket_ = pair[0];
}

Coprocess::~Coprocess() {
  if (socket_ >= 0) close(socket_);
  if (pid_ > 0) {
    int status = 0;
    kill(pid_, SIGTERM);
    waitpid(pid_, &status, 0);
  }
}

void Coprocess::fail(const std::string& what) {
  throw Error(Exit::runtime, option_ + " '" + command_ + "': " + what);
}

void Coprocess::write(const void* data, size_t bytes) {
  const char* at = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = send(socket_, at, bytes, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("stopped reading its input (did it exit?)");
    at += n;
    bytes -= static_cast<size_t>(n);
  }
}

void Coprocess::read(void* data, size_t bytes, const std::string& what) {
  char* at = static_cast<char*>(data);
  const size_t wanted = bytes;
  while (bytes > 0) {
    const ssize_t n = recv(socket_, at, bytes, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      fail("its output ended after " + std::to_string(wanted - bytes) + " of " + std::to_string(wanted) + " bytes of " +
           what);
    }
    at += n;
    bytes -= static_cast<size_t>(n);
  }
}

std::string Coprocess::read_line(size_t limit, const std::string& what) {
  std::string line;
  char c = 0;
  while (line.size() <= limit) {
    read(&c, 1, what);
    if (c == '\n') return line;
    line.push_back(c);
  }
  fail(what + " is longer than " + std::to_string(limit) + " bytes");
}

void Coprocess::finish() {
  shutdown(socket_, SHUT_WR);
  close(socket_);
  socket_ = -1;
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fail("exited with status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)));
  }
}

}  // namespace nk
