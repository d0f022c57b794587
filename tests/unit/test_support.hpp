// test_support.hpp - a scratch folder per test.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <string>

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

}  // namespace nk::test
