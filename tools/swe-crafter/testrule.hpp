// testrule.hpp - what a repository's files are: the test-file rule that
// splits a commit into patch and test_patch, source code against
// documentation, and the language of a file.
#pragma once
#include <string>

namespace swec {

/// The test-file rule: a path with a folder test/, tests/, t/, spec/ or
/// __tests__/, or a file named test_*, *_test.*, *_spec.*, *Test.java or *.t.
bool is_test_file(const std::string& path);

/// Source code of a language this tool knows (by extension; build files such
/// as Makefile, CMakeLists.txt, *.cabal count too). Documentation, data and
/// licences do not.
bool is_code_file(const std::string& path);

/// A file that describes the build rather than being built: makefiles and
/// their autotools/CMake/Meson sources, package manifests and lock files
/// (setup.py, pyproject.toml, Cargo.toml, go.mod, package.json, Gemfile,
/// *.gemspec, Makefile.PL, ...). A change to one builds a state from
/// scratch, unless the build system regenerates from it.
bool is_build_description(const std::string& path);
/// Whether a build system checks the build description on every build and
/// regenerates what depends on it (cmake: CMakeLists.txt and *.cmake; cargo:
/// Cargo.toml, Cargo.lock, build.rs; go: go.mod, go.sum; meson), so a
/// prepared workspace takes its change by install and build again.
bool regenerates_from(const std::string& build_system, const std::string& path);
/// The language of a source file ("" when none): python, go, rust, c, cpp,
/// javascript, typescript, ruby, perl, java, php, haskell, shell.
std::string language_of(const std::string& path);

}  // namespace swec
