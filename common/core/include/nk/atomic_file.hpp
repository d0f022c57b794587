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
  void copy_into_special();
};

/// Writes 'bytes' to 'path' atomically, or to stdout when path is '-'.
void write_output_bytes(const std::string& path, const std::vector<unsigned char>& bytes, bool no_clobber);

/// All of standard input; exit 4 when it cannot be read.
std::vector<unsigned char> read_stdin();

/// Writes all of 'bytes' to standard output; exit 4 on failure.
void write_stdout(const unsigned char* bytes, size_t size);

}  // namespace nk
