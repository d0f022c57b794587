// atomic_file.cpp - temp file + fsync + rename, with cleanup on signals.
#include "nk/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include "nk/error.hpp"

namespace nk {

namespace {

// Temp paths live in a fixed table so the signal handler can unlink them
// without allocating.
constexpr int kSlots = 64;
constexpr size_t kPathMax = 4096;
std::array<std::array<char, kPathMax>, kSlots> g_temp_paths{};
std::array<std::atomic<bool>, kSlots> g_slot_used{};

char g_tool[64] = "neurkit";

void remove_temp_files() {
  for (int i = 0; i < kSlots; ++i) {
    if (g_slot_used[i].load()) ::unlink(g_temp_paths[i].data());
  }
}

void say(const char* text) {
  ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

// SIGINT, SIGTERM, SIGHUP, SIGPIPE: the run is stopped from outside; its
// temporary outputs go, and the signal ends the process as it would have.
extern "C" void remove_temp_files_and_reraise(int signal_number) {
  remove_temp_files();
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

// SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT: the last line of defence (a
// corrupt foreign file that the HDF5 library does not survive, or a bug): one
// line on stderr (async-signal-safe writes only), the temporary outputs
// removed, then the signal's own ending (exit status 128 + N in a shell).
extern "C" void report_fatal_and_reraise(int signal_number) {
  remove_temp_files();
  say(g_tool);
  say(": error: fatal signal ");
  const char* name = signal_number == SIGSEGV  ? "SIGSEGV"
                     : signal_number == SIGBUS ? "SIGBUS"
                     : signal_number == SIGFPE ? "SIGFPE"
                     : signal_number == SIGILL ? "SIGILL"
                                               : "SIGABRT";
  say(name);
  say(": an input is corrupt in a way the HDF5 library did not survive, or this is a bug"
      " (please report it); temporary outputs removed\n");
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

void install_handlers_once() {
  static const bool installed = [] {
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
      struct sigaction action {};
      action.sa_handler = remove_temp_files_and_reraise;
      sigemptyset(&action.sa_mask);
      // A SIGPIPE ignored by the caller (SIG_IGN) stays ignored: writes then fail with EPIPE.
      struct sigaction old {};
      if (s == SIGPIPE && sigaction(s, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
      sigaction(s, &action, nullptr);
    }
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    // (The sanitizers' own handlers report these signals in their builds.)
    for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) {
      struct sigaction action {};
      action.sa_handler = report_fatal_and_reraise;
      sigemptyset(&action.sa_mask);
      action.sa_flags = SA_RESETHAND;
      sigaction(s, &action, nullptr);
    }
#endif
    return true;
  }();
  (void)installed;
}

int register_temp(const std::string& path) {
  if (path.size() + 1 > kPathMax) return -1;
  for (int i = 0; i < kSlots; ++i) {
    bool expected = false;
    if (!g_slot_used[i].load()) {
      std::memcpy(g_temp_paths[i].data(), path.c_str(), path.size() + 1);
      if (g_slot_used[i].compare_exchange_strong(expected, true)) return i;
    }
  }
  return -1;
}

void unregister_temp(const std::string& path) {
  for (int i = 0; i < kSlots; ++i) {
    if (g_slot_used[i].load() && path == g_temp_paths[i].data()) g_slot_used[i].store(false);
  }
}

std::string folder_of(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

void fsync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

namespace {

// What a finished output needs to be published or removed.
struct Target {
  std::string path, temp;
  bool no_clobber = false, special = false;
};

void copy_into_special(const Target& t) {
  const int in = ::open(t.temp.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) throw io_error(t.path, std::string("cannot publish output: ") + std::strerror(errno));
  const int out = ::open(t.path.c_str(), O_WRONLY | O_CLOEXEC);
  if (out < 0) {
    const std::string reason = std::strerror(errno);
    ::close(in);
    throw io_error(t.path, "cannot write: " + reason);
  }
  std::string failure;
  unsigned char chunk[1 << 16];
  for (;;) {
    const ssize_t got = ::read(in, chunk, sizeof chunk);
    if (got == 0) break;
    if (got < 0) {
      if (errno == EINTR) continue;
      failure = std::strerror(errno);
      break;
    }
    for (ssize_t done = 0; done < got && failure.empty();) {
      const ssize_t wrote = ::write(out, chunk + done, size_t(got - done));
      if (wrote < 0 && errno != EINTR) failure = std::strerror(errno);
      if (wrote > 0) done += wrote;
    }
    if (!failure.empty()) break;
  }
  ::close(in);
  if (::close(out) != 0 && failure.empty()) failure = std::strerror(errno);
  if (!failure.empty()) throw io_error(t.path, "cannot write: " + failure);
  ::unlink(t.temp.c_str());
  unregister_temp(t.temp);
}

void publish(const Target& t) {
  if (t.special) {
    copy_into_special(t);
    return;
  }
  fsync_path(t.temp, O_RDONLY);
  if (t.no_clobber) {
    // link() refuses to replace, so no-clobber holds even against a racing writer.
    if (::link(t.temp.c_str(), t.path.c_str()) != 0) {
      throw io_error(t.path, errno == EEXIST ? "output exists and --no-clobber is set"
                                             : std::string("cannot publish output: ") + std::strerror(errno));
    }
    ::unlink(t.temp.c_str());
  } else if (::rename(t.temp.c_str(), t.path.c_str()) != 0) {
    throw io_error(t.path, std::string("cannot publish output: ") + std::strerror(errno));
  }
  unregister_temp(t.temp);
  fsync_path(folder_of(t.path), O_RDONLY | O_DIRECTORY);
}

// The run's queued outputs: a finished file, or an image for standard output.
struct Pending {
  Target file;
  bool is_stdout = false;
  std::vector<unsigned char> stdout_bytes;
};
bool g_deferring = false;
std::vector<Pending>& pending() {
  static std::vector<Pending> queue;
  return queue;
}

}  // namespace

void install_signal_handlers(const std::string& tool) {
  const size_t n = std::min(tool.size(), sizeof g_tool - 1);
  std::memcpy(g_tool, tool.data(), n);
  g_tool[n] = 0;
  install_handlers_once();
}

void begin_outputs() {
  abort_outputs();
  g_deferring = true;
}

void abort_outputs() {
  g_deferring = false;
  for (const Pending& p : pending()) {
    if (p.is_stdout) continue;
    ::unlink(p.file.temp.c_str());
    unregister_temp(p.file.temp);
  }
  pending().clear();
}

void commit_outputs() {
  g_deferring = false;
  // --no-clobber targets first: a refusal must come before anything is published.
  for (const Pending& p : pending()) {
    if (!p.is_stdout && p.file.no_clobber && ::access(p.file.path.c_str(), F_OK) == 0) {
      const std::string path = p.file.path;
      abort_outputs();
      throw io_error(path, "output exists and --no-clobber is set");
    }
  }
  while (!pending().empty()) {
    Pending p = std::move(pending().front());
    pending().erase(pending().begin());
    if (p.is_stdout) {
      write_stdout(p.stdout_bytes.data(), p.stdout_bytes.size());
    } else {
      try {
        publish(p.file);
      } catch (...) {
        ::unlink(p.file.temp.c_str());
        unregister_temp(p.file.temp);
        abort_outputs();
        throw;
      }
    }
  }
}

PublishNow::PublishNow() : was_deferring_(g_deferring) { g_deferring = false; }
PublishNow::~PublishNow() { g_deferring = was_deferring_; }

void queue_stdout(std::vector<unsigned char> bytes) {
  if (!g_deferring) {
    write_stdout(bytes.data(), bytes.size());
    return;
  }
  Pending p;
  p.is_stdout = true;
  p.stdout_bytes = std::move(bytes);
  pending().push_back(std::move(p));
}

AtomicFile::AtomicFile(const std::string& path, bool no_clobber) : path_(path), no_clobber_(no_clobber) {
  install_handlers_once();
  if (path.empty()) throw usage_error("empty output path");
  if (no_clobber && ::access(path.c_str(), F_OK) == 0) {
    throw io_error(path, "output exists and --no-clobber is set");
  }
  if (std::filesystem::is_directory(path)) throw io_error(path, "output is a directory");
  // A device, named pipe or socket (-o /dev/null, a FIFO) is written into, never
  // replaced: the output is built in the temporary folder and copied on commit.
  struct stat st {};
  special_ = ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string folder = special_ ? (tmpdir && *tmpdir ? tmpdir : "/tmp") : folder_of(path);
  const std::string name = std::filesystem::path(path).filename().string();
  std::string pattern = folder + "/." + name + ".tmp.XXXXXX";
  const int fd = ::mkstemp(pattern.data());
  if (fd < 0) {
    const std::string reason = std::strerror(errno);
    std::error_code error;
    if (std::filesystem::exists(folder, error) && !std::filesystem::is_directory(folder, error)) {
      throw io_error(path, "cannot create output: '" + folder + "' is not a folder");
    }
    if (!std::filesystem::is_directory(folder, error)) throw io_error(path, "cannot create output: folder '" + folder + "' does not exist");
    throw io_error(path, "cannot create output in '" + folder + "': " + reason);
  }
  ::fchmod(fd, 0644 & ~[] { mode_t mask = ::umask(0); ::umask(mask); return mask; }());
  ::close(fd);
  temp_path_ = pattern;
  register_temp(temp_path_);
}

AtomicFile::~AtomicFile() {
  if (!committed_ && !temp_path_.empty()) {
    ::unlink(temp_path_.c_str());
    unregister_temp(temp_path_);
  }
}

void AtomicFile::commit() {
  if (committed_) return;
  const Target t{path_, temp_path_, no_clobber_, special_};
  if (g_deferring) {
    // Finished now; published or removed when the run ends (the queue owns the temporary).
    if (!special_) fsync_path(temp_path_, O_RDONLY);
    Pending p;
    p.file = t;
    pending().push_back(std::move(p));
  } else {
    publish(t);
  }
  committed_ = true;
}

std::vector<unsigned char> read_stdin() {
  // One run reads standard input once: a second input named '-' gets nothing.
  static bool consumed = false;
  if (consumed) throw usage_error("standard input is named as more than one input; give files for all but one");
  consumed = true;
  std::vector<unsigned char> bytes;
  unsigned char chunk[1 << 16];
  for (;;) {
    const ssize_t got = ::read(STDIN_FILENO, chunk, sizeof chunk);
    if (got == 0) break;
    if (got < 0) {
      if (errno == EINTR) continue;
      throw io_error("-", std::string("cannot read standard input: ") + std::strerror(errno));
    }
    bytes.insert(bytes.end(), chunk, chunk + got);
  }
  return bytes;
}

void write_stdout(const unsigned char* bytes, size_t size) {
  size_t done = 0;
  while (done < size) {
    const ssize_t wrote = ::write(STDOUT_FILENO, bytes + done, size - done);
    if (wrote < 0) {
      if (errno == EINTR) continue;
      throw io_error("-", std::string("cannot write standard output: ") + std::strerror(errno));
    }
    done += static_cast<size_t>(wrote);
  }
}

void write_output_bytes(const std::string& path, const std::vector<unsigned char>& bytes, bool no_clobber) {
  if (path == "-") {
    static const unsigned char png[] = {0x89, 'P', 'N', 'G'};
    if (bytes.size() >= 4 && std::memcmp(bytes.data(), png, 4) == 0 && ::isatty(STDOUT_FILENO)) {
      throw usage_error("refusing to write a PNG to a terminal: redirect standard output or give a file name");
    }
    queue_stdout(bytes);
    return;
  }
  AtomicFile out(path, no_clobber);
  const int fd = ::open(out.temp_path().c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) throw io_error(path, std::string("cannot write: ") + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t wrote = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (wrote < 0) {
      if (errno == EINTR) continue;
      const std::string reason = std::strerror(errno);
      ::close(fd);
      throw io_error(path, "cannot write: " + reason);
    }
    done += static_cast<size_t>(wrote);
  }
  if (::close(fd) != 0) throw io_error(path, std::string("cannot write: ") + std::strerror(errno));
  out.commit();
}

}  // namespace nk
