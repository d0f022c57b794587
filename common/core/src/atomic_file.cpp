// atomic_file.cpp - temp file + fsync + rename, with cleanup on signals.
#include "nk/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "nk/error.hpp"

namespace nk {

namespace {

// Temp paths live in a fixed table so the signal handler can unlink them
// without allocating.
constexpr int kSlots = 64;
constexpr size_t kPathMax = 4096;
std::array<std::array<char, kPathMax>, kSlots> g_temp_paths{};
std::array<std::atomic<bool>, kSlots> g_slot_used{};

extern "C" void remove_temp_files_and_reraise(int signal_number) {
  for (int i = 0; i < kSlots; ++i) {
    if (g_slot_used[i].load()) ::unlink(g_temp_paths[i].data());
  }
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

void install_handlers_once() {
  static const bool installed = [] {
    for (int s : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction action {};
      action.sa_handler = remove_temp_files_and_reraise;
      sigemptyset(&action.sa_mask);
      sigaction(s, &action, nullptr);
    }
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
    if (!std::filesystem::is_directory(folder)) throw io_error(path, "cannot create output: folder '" + folder + "' does not exist");
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
  if (special_) {
    copy_into_special();
    return;
  }
  fsync_path(temp_path_, O_RDONLY);
  if (no_clobber_) {
    // link() refuses to replace, so no-clobber holds even against a racing writer.
    if (::link(temp_path_.c_str(), path_.c_str()) != 0) {
      throw io_error(path_, errno == EEXIST ? "output exists and --no-clobber is set"
                                            : std::string("cannot publish output: ") + std::strerror(errno));
    }
    ::unlink(temp_path_.c_str());
  } else if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    throw io_error(path_, std::string("cannot publish output: ") + std::strerror(errno));
  }
  committed_ = true;
  unregister_temp(temp_path_);
  fsync_path(folder_of(path_), O_RDONLY | O_DIRECTORY);
}

void AtomicFile::copy_into_special() {
  const int in = ::open(temp_path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) throw io_error(path_, std::string("cannot publish output: ") + std::strerror(errno));
  const int out = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
  if (out < 0) {
    const std::string reason = std::strerror(errno);
    ::close(in);
    throw io_error(path_, "cannot write: " + reason);
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
  if (!failure.empty()) throw io_error(path_, "cannot write: " + failure);
  ::unlink(temp_path_.c_str());
  committed_ = true;
  unregister_temp(temp_path_);
}

std::vector<unsigned char> read_stdin() {
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
    write_stdout(bytes.data(), bytes.size());
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
