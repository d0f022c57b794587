// test_support.hpp - a scratch folder per test.
#pragma once
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>

#include "nk/device.hpp"
#include "nk/error.hpp"

namespace nk::test {

/// A fresh folder under the system temp dir, removed with everything in it.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "nk-unit-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  /// Entries in the folder (to prove no temp file was left behind).
  size_t entries() const {
    size_t n = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(path_)) ++n;
    return n;
  }

 private:
  std::string path_;
};

/// The exit code f() fails with (nk::Error), 0 when it does not fail.
inline int exit_code(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return static_cast<int>(e.code());
  }
  return 0;
}

/// True where a CUDA device can be used. Otherwise prints the line that the
/// ctest entry unit.cuda reads as "skipped" (not "passed") and returns false.
inline bool cuda_or_skip() {
  const DeviceChoice choice = choose_device("auto");
  if (choice.kind == DeviceKind::cuda) return true;
  std::printf("CUDA comparison skipped: no usable GPU (%s)\n", choice.reason.c_str());
  return false;
}

}  // namespace nk::test
