// shipped.cpp - where data/ is: $NK_DATA, the installed share folder, the source tree.
#include "nk/shipped.hpp"

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "nk/error.hpp"

#ifndef NK_SOURCE_DATA_DIR
#define NK_SOURCE_DATA_DIR "data"
#endif
#ifndef NK_DATA_RELATIVE_DIR
#define NK_DATA_RELATIVE_DIR "../share/neurkit/data"
#endif

namespace nk {

std::string shipped_data(const std::string& relative) {
  std::vector<std::string> places;
  if (const char* env = std::getenv("NK_DATA"); env && *env) places.emplace_back(env);
  std::error_code error;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) places.push_back((exe.parent_path() / NK_DATA_RELATIVE_DIR).lexically_normal().string());
  places.emplace_back(NK_SOURCE_DATA_DIR);
  std::string looked;
  for (const std::string& place : places) {
    const std::filesystem::path path = std::filesystem::path(place) / relative;
    if (std::filesystem::is_regular_file(path, error)) return path.string();
    looked += (looked.empty() ? "" : ", ") + path.string();
  }
  throw Error(Exit::io, "shipped file data/" + relative + " not found (looked in " + looked + "; set NK_DATA to the data folder)");
}

}  // namespace nk
