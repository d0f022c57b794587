// doctor.cpp - what this machine can build and test, and the sandbox.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>

#include "nk/error.hpp"
#include "nk/sandbox.hpp"
#include "swe-crafter/git.hpp"
#include "swe-crafter/swe_crafter.hpp"

namespace fs = std::filesystem;

namespace swec {

std::vector<std::vector<std::string>> build_dependencies(const std::string& control) {
  // the source stanza's fields, continuation lines joined
  std::string text;
  {
    std::istringstream in(control);
    std::string line, field;
    bool wanted = false;
    while (std::getline(in, line)) {
      if (line.empty()) break;  // the source stanza ends
      if (line[0] == ' ' || line[0] == '\t') {
        if (wanted) text += " " + line;
        continue;
      }
      const size_t colon = line.find(':');
      if (colon == std::string::npos) {
        wanted = false;
        continue;
      }
      const std::string name = line.substr(0, colon);
      wanted = name == "Build-Depends" || name == "Build-Depends-Indep" || name == "Build-Depends-Arch";
      if (wanted) {
        text += ',';
        text.append(line, colon + 1, std::string::npos);
      }
    }
  }
  std::vector<std::vector<std::string>> out;
  std::istringstream relations(text);
  for (std::string relation; std::getline(relations, relation, ',');) {
    // build profiles: <!nocheck> (wanted: the tests run) keeps it; a positive profile (<stage1>) drops it
    bool profile_only = false;
    for (std::smatch m; std::regex_search(relation, m, std::regex("<([^>]*)>"));) {
      std::istringstream terms(m[1].str());
      for (std::string t; terms >> t;) profile_only = profile_only || t[0] != '!';
      relation = m.prefix().str() + " " + m.suffix().str();
    }
    if (profile_only) continue;
    relation = std::regex_replace(relation, std::regex("\\([^)]*\\)|\\[[^\\]]*\\]"), " ");
    std::vector<std::string> alternatives;
    std::istringstream alts(relation);
    for (std::string alt; std::getline(alts, alt, '|');) {
      std::istringstream words(alt);
      std::string name;
      if (!(words >> name)) continue;
      name = name.substr(0, name.find(':'));
      if (name == "debhelper" || name.rfind("debhelper-", 0) == 0 || name.rfind("dh-", 0) == 0) {
        alternatives.clear();
        break;
      }
      alternatives.push_back(name);
    }
    if (!alternatives.empty()) out.push_back(alternatives);
  }
  return out;
}

namespace {

bool installed(const std::string& package) {
  static const std::regex safe("[a-z0-9][a-z0-9+.-]*");
  if (!std::regex_match(package, safe)) return false;
  const CommandResult r = shell("dpkg-query -W -f='${db:Status-Abbrev}' " + package + " 2>/dev/null", ".", 60);
  if (r.exit_code == 0 && r.output.rfind("ii", 0) == 0) return true;
  // a virtual package: installed when a package providing it is
  std::string pattern;
  for (char ch : package) {
    const bool special = ch == '.' || ch == '+';
    if (special) pattern += '[';
    pattern += ch;
    if (special) pattern += ']';
  }
  const CommandResult v =
      shell("dpkg-query -W -f='${db:Status-Abbrev} ${Provides}\\n' 2>/dev/null | grep -E '^ii .*(^|[ ,])" + package +
                "([ ,(]|$)' > /dev/null",
            ".", 60);
  return v.exit_code == 0;
}

void repository_dependencies(const DoctorOptions& o) {
  std::set<std::string> missing;
  std::ostringstream table;  // printed when every repository was read: nothing on standard output on failure
  if (!o.missing) table << "repository\tbuild dependency\tinstalled\n";
  for (const std::string& input : o.inputs) {
    const std::string repo = resolve_repo(o.store, input);
    const CommandResult c = shell("git cat-file blob HEAD:debian/control 2>/dev/null", repo, 60);
    if (c.exit_code != 0)
      throw nk::input_error(input, "", "no debian/control at HEAD (not a Debian source package)");
    const std::string name = fs::path(repo).filename().string();
    for (const std::vector<std::string>& alternatives : build_dependencies(c.output)) {
      std::string have;
      for (const std::string& a : alternatives) {
        if (have.empty() && installed(a)) have = a;
      }
      std::string shown;
      for (const std::string& a : alternatives) shown += (shown.empty() ? "" : " | ") + a;
      if (have.empty()) missing.insert(alternatives.front());
      if (!o.missing) table << name << "\t" << shown << "\t" << (have.empty() ? "no" : "yes") << "\n";
    }
  }
  if (o.missing) {
    for (const std::string& m : missing) table << m << "\n";
  }
  std::cout << table.str();
}

}  // namespace

void doctor_verb(const DoctorOptions& o, const nk::RunEnv&) {
  if (!o.inputs.empty()) return repository_dependencies(o);
  if (o.missing) throw nk::usage_error("--missing needs -i REPO");
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
      {"php", "phpunit", "phpunit --version", "phpunit"},
      {"php", "phpab", "phpab --version", "phpab"},
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
