// testrule.cpp - the test-file rule, code against documentation, languages.
#include "swe-crafter/testrule.hpp"

#include <utility>

namespace swec {

namespace {

std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string extension(const std::string& name) {
  const size_t dot = name.rfind('.');
  return dot == std::string::npos || dot == 0 ? "" : name.substr(dot);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

bool is_test_file(const std::string& path) {
  for (const char* folder : {"test/", "tests/", "t/", "spec/", "__tests__/"}) {
    const std::string f = folder;
    if (path.rfind(f, 0) == 0 || path.find("/" + f) != std::string::npos) return true;
  }
  const std::string name = base_name(path);
  if (name.rfind("test_", 0) == 0) return true;
  const std::string stem = name.substr(0, name.size() - extension(name).size());
  if (ends_with(stem, "_test") || ends_with(stem, "_spec")) return true;
  if (ends_with(name, "Test.java") || ends_with(name, ".t")) return true;
  return false;
}

bool is_build_description(const std::string& path) {
  static const char* const names[] = {
      "Makefile",     "makefile",      "GNUmakefile", "configure",      "configure.ac",     "configure.in",
      "CMakeLists.txt", "meson.build", "meson_options.txt", "meson.options", "setup.py",     "setup.cfg",
      "pyproject.toml", "tox.ini",     "Pipfile",     "Pipfile.lock",   "Cargo.toml",       "Cargo.lock",
      "build.rs",     "go.mod",        "go.sum",      "package.json",   "package-lock.json", "yarn.lock",
      "Gemfile",      "Gemfile.lock",  "Rakefile",    "Makefile.PL",    "Build.PL",         "cpanfile",
      "MANIFEST",     "META.json",     "META.yml",    "SConstruct",     "BUILD",            "WORKSPACE",
  };
  const std::string name = base_name(path);
  for (const char* n : names) {
    if (name == n) return true;
  }
  for (const char* suffix : {".am", ".in", ".m4", ".mk", ".cmake", ".gemspec", ".pro", ".cabal"}) {
    if (ends_with(name, suffix)) return true;
  }
  return name.rfind("requirements", 0) == 0 && ends_with(name, ".txt");
}

bool regenerates_from(const std::string& build_system, const std::string& path) {
  // build systems that check their descriptions on every build and regenerate what depends on them (the
  // skills' build commands configure again too): CMake (CMakeLists.txt, included *.cmake), cargo, go, meson
  const std::string name = base_name(path);
  if (build_system == "cmake") return name == "CMakeLists.txt" || ends_with(name, ".cmake");
  if (build_system == "cargo") return name == "Cargo.toml" || name == "Cargo.lock" || name == "build.rs";
  if (build_system == "go" || build_system == "go-gopath") return name == "go.mod" || name == "go.sum";
  if (build_system == "meson") return name == "meson.build" || name == "meson_options.txt" || name == "meson.options";
  return false;
}

std::string language_of(const std::string& path) {
  static const std::pair<const char*, const char*> table[] = {
      {".py", "python"},
      {".go", "go"},
      {".rs", "rust"},
      {".c", "c"},
      {".h", "c"},
      {".cc", "cpp"},
      {".cpp", "cpp"},
      {".cxx", "cpp"},
      {".hpp", "cpp"},
      {".hh", "cpp"},
      {".js", "javascript"},
      {".mjs", "javascript"},
      {".cjs", "javascript"},
      {".jsx", "javascript"},
      {".ts", "typescript"},
      {".tsx", "typescript"},
      {".rb", "ruby"},
      {".pl", "perl"},
      {".pm", "perl"},
      {".t", "perl"},
      {".java", "java"},
      {".kt", "java"},
      {".php", "php"},
      {".hs", "haskell"},
      {".lhs", "haskell"},
      {".sh", "shell"},
      {".bash", "shell"},
      {".bats", "shell"},
      {".pyx", "python"},
  };
  const std::string ext = extension(base_name(path));
  for (const auto& [e, lang] : table) {
    if (ext == e) return lang;
  }
  return "";
}

bool is_code_file(const std::string& path) {
  if (!language_of(path).empty()) return true;
  const std::string name = base_name(path);
  for (const char* b : {"Makefile", "CMakeLists.txt", "Cargo.toml", "go.mod", "package.json", "setup.py",
                        "pyproject.toml", "build.gradle", "pom.xml"}) {
    if (name == b) return true;
  }
  return ends_with(name, ".cmake") || ends_with(name, ".cabal") || ends_with(name, ".gemspec");
}

}  // namespace swec
