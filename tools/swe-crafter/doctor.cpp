// doctor.cpp - what this machine can build and test, and the sandbox.
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "nk/sandbox.hpp"
#include "swe-crafter/git.hpp"
#include "swe-crafter/swe_crafter.hpp"

namespace swec {

void doctor_verb(const StoreOptions&, const nk::RunEnv&) {
  struct Tool {
    const char *language, *command, *version, *debian;
  };
  static const Tool tools[] = {
      {"any", "git", "git --version", "git"},
      {"python", "pytest", "python3 -m pytest --version", "python3-pytest"},
      {"go", "go", "go version", "golang-go"},
      {"rust", "cargo", "cargo --version", "cargo"},
      {"c/c++", "cmake", "cmake --version", "cmake"},
      {"c/c++", "make", "make --version", "make"},
      {"perl", "prove", "prove --version", "perl"},
      {"javascript", "node", "node --version", "nodejs"},
      {"javascript", "npm", "npm --version", "npm"},
      {"java", "mvn", "mvn --version", "maven"},
      {"ruby", "ruby", "ruby --version", "ruby"},
      {"php", "php", "php --version", "php-cli"},
      {"haskell", "ghc", "ghc --version", "ghc"},
  };
  std::cout << "language\ttool\tfound\tversion\tdebian package\n";
  for (const Tool& t : tools) {
    const CommandResult r = shell(std::string(t.version) + " 2>&1 | head -1", ".", 60);
    std::string v = r.output;
    while (!v.empty() && (v.back() == '\n' || v.back() == '\r')) v.pop_back();
    const bool found = shell(std::string("command -v ") + t.command + " > /dev/null", ".", 10).exit_code == 0 &&
                       r.exit_code == 0 && v.find("No module") == std::string::npos;
    std::cout << t.language << "\t" << t.command << "\t" << (found ? "yes" : "no") << "\t" << (found ? v : "") << "\t"
              << t.debian << "\n";
  }
  const std::string why = nk::namespace_sandbox_unavailable();
  std::cout << "sandbox\tnamespace\t" << (why.empty() ? "yes" : "no") << "\t"
            << (why.empty() ? "user + network namespaces, Landlock" : why) << "\t\n";
  std::string kind;
  const std::string memory = nk::memory_cgroup_unavailable(kind);
  std::cout << "sandbox\tmemory cgroup\t" << (memory.empty() ? "yes" : "no") << "\t"
            << (memory.empty() ? kind + ": --memory holds"
                               : memory + ": no memory limit (RLIMIT_AS would break the JVM, Go and node)")
            << "\t\n";
}

}  // namespace swec
