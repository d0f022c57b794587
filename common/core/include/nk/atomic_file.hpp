// atomic_file.hpp - publish an output file all at once or not at all.
#pragma once
#include <string>
#include <vector>

namespace nk {

/// A temporary file in the destination's folder that becomes 'path' on
/// commit() (fsync, rename or no-clobber link, fsync of the folder). Destroyed
/// uncommitted, or on SIGINT/SIGTERM/SIGHUP, the temporary file is removed.
/// Throws exit 4 when the folder is missing or not writable, or when
/// no_clobber is set and 'path' already exists. An existing 'path' that is
/// not a regular file (/dev/null, a named pipe) is written into on commit,
/// never replaced; the temporary file then lives in $TMPDIR (or /tmp).
class AtomicFile {
 public:
  AtomicFile(const std::string& path, bool no_clobber);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  const std::string& temp_path() const { return temp_path_; }
  const std::string& path() const { return path_; }
  void commit();

 private:
  std::string path_;
  std::string temp_path_;
  bool no_clobber_ = false;
  bool committed_ = false;
  bool special_ = false;  ///< 'path' is a device, pipe or socket
};

/// A run's outputs publish together. Between begin_outputs() and
/// commit_outputs() (nk::cli::App::run brackets every verb with them), a
/// commit() only finishes its file (fsync) and queues it, and a binary image
/// for standard output is queued too; commit_outputs() then checks every
/// --no-clobber target first and publishes them all (rename, or the image to
/// stdout), in the order they were committed. abort_outputs() (any failure)
/// removes every queued temporary file: a run that fails after writing one of
/// its outputs replaces no existing file and leaves none behind. Outside
/// such a bracket (library use, unit tests) commit() publishes at once.
void begin_outputs();
/// Signal handlers for the whole run (nk::cli::App::run installs them): on
/// SIGINT, SIGTERM, SIGHUP and SIGPIPE every temporary output is removed and
/// the signal ends the process as usual; on SIGSEGV, SIGBUS, SIGFPE, SIGILL and
/// SIGABRT one "TOOL: error: fatal signal ..." line is printed first (not in
/// sanitizer builds, whose own handlers report these).
void install_signal_handlers(const std::string& tool);
void commit_outputs();
void abort_outputs();

/// While one is alive, commit() publishes at once even inside a run: for
/// files that must exist before the run ends (a training checkpoint written
/// every K steps, there to resume from if the run dies).
class PublishNow {
 public:
  PublishNow();
  ~PublishNow();
  PublishNow(const PublishNow&) = delete;
  PublishNow& operator=(const PublishNow&) = delete;

 private:
  bool was_deferring_;
};

/// Binary output for standard output ('-'): written now, or queued inside a run.
void queue_stdout(std::vector<unsigned char> bytes);

/// Writes 'bytes' to 'path' atomically, or to stdout when path is '-'.
void write_output_bytes(const std::string& path, const std::vector<unsigned char>& bytes, bool no_clobber);

/// All of standard input; exit 4 when it cannot be read.
std::vector<unsigned char> read_stdin();

/// Writes all of 'bytes' to standard output; exit 4 on failure.
void write_stdout(const unsigned char* bytes, size_t size);

}  // namespace nk
