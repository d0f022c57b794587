// buildsys.cpp - build systems, their fixed commands, and a step in the sandbox.
#include "swe-crafter/buildsys.hpp"

// GCC 12 at -O3 warns of overlapping copies in "literal" + std::string&& (a false
// positive, GCC bug 105651); these files build commands that way throughout.
#pragma GCC diagnostic ignored "-Wrestrict"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "nk/error.hpp"
#include "swe-crafter/git.hpp"
#include "swe-crafter/runlog.hpp"
#include "swe-crafter/testrule.hpp"

namespace fs = std::filesystem;

namespace swec {

namespace {

bool exists(const std::string& tree, const char* name) {
  std::error_code ec;
  return fs::exists(fs::path(tree) / name, ec);
}

/// A Makefile target named 'target' ("check:" at the start of a line).
bool make_target(const std::string& tree, const std::string& target) {
  for (const char* name : {"Makefile", "makefile", "GNUmakefile"}) {
    std::ifstream f(fs::path(tree) / name);
    std::string line;
    while (std::getline(f, line)) {
      if (line.rfind(target + ":", 0) == 0) return true;
    }
  }
  return false;
}

}  // namespace

std::vector<std::string> tracked_files(const std::string& tree, size_t limit) {
  const CommandResult r = shell("git ls-files -z 2>/dev/null", tree);
  std::vector<std::string> out;
  std::istringstream in(r.output);
  std::string p;
  while (std::getline(in, p, '\0') && out.size() < limit) out.push_back(p);
  return out;
}

Environment detect_fixed(const std::string& tree) {
  Environment e;
  const std::vector<std::string> files = tracked_files(tree);
  auto any = [&](auto pred) {
    for (const std::string& f : files) {
      if (pred(f)) return true;
    }
    return false;
  };
  // go test compiles the tests with -run '^$' (no test matches) and runs them with -v
  auto go_module = [](const std::string& evidence) {
    return Environment{"go",     "go",      "", "go test -count=1 -run '^$' ./...", "go test -count=1 -v ./...",
                       "gotest", {evidence}};
  };
  if (exists(tree, "Cargo.toml")) {
    e = {"rust",
         "cargo",
         "",
         "cargo build --offline --tests",
         "cargo test --offline",
         "cargo",
         {"manifest: Cargo.toml"}};
  } else if (exists(tree, "go.mod")) {
    e = go_module("manifest: go.mod");
  } else if (exists(tree, "pyproject.toml") || exists(tree, "setup.py") || exists(tree, "setup.cfg") ||
             exists(tree, "pytest.ini") || exists(tree, "tox.ini") ||
             any([](const std::string& f) { return language_of(f) == "python" && is_test_file(f); })) {
    e = {"python",
         "pytest",
         "",
         "python3 -m compileall -q .",
         "python3 -m pytest -rA -p no:cacheprovider",
         "pytest",
         {"python manifest or test files"}};
  } else if (exists(tree, "CMakeLists.txt")) {
    e = {"cpp",
         "cmake",
         "",
         "cmake -S . -B _nkbuild -DCMAKE_BUILD_TYPE=Debug > /dev/null && cmake --build _nkbuild -j2",
         "ctest --test-dir _nkbuild",
         "ctest",
         {"manifest: CMakeLists.txt"}};
  } else if (exists(tree, "Makefile.PL") || any([](const std::string& f) {
               return f.rfind("t/", 0) == 0 && f.size() > 2 && f.substr(f.size() - 2) == ".t";
             })) {
    e = {"perl",
         "prove",
         "",
         exists(tree, "Makefile.PL") ? "perl Makefile.PL > /dev/null && make" : "true",
         "prove -v -r t",
         "tap",
         {exists(tree, "Makefile.PL") ? "manifest: Makefile.PL" : "test files: t/*.t"}};
  } else if (make_target(tree, "check") || make_target(tree, "test")) {
    const std::string target = make_target(tree, "check") ? "check" : "test";
    e = {"c", "make", "", "make -j2", "make " + target, "automake", {"Makefile target: " + target}};
  } else if (exists(tree, "composer.json")) {
    // SWE-bench Multilingual's PHP images: composer install, then the suite by vendor/bin/phpunit
    e = {"php",
         "composer",
         "composer install --no-interaction --no-progress",
         "true",
         "vendor/bin/phpunit --teamcity",
         "phpunit",
         {"manifest: composer.json"}};
  } else if (exists(tree, "package.json")) {
    e = {"javascript", "npm", "", "true", "npm test --silent", "tap", {"manifest: package.json"}};
  } else if (any([](const std::string& f) { return language_of(f) == "go"; })) {
    e = go_module("Go sources (no go.mod): the fixed method knows only modules");
  }
  return e;
}

std::string test_command(const Environment& env, const std::vector<std::string>& test_files, bool full_suite) {
  if (full_suite || test_files.empty()) return env.test_cmd;
  std::string out = env.test_cmd;
  if (env.build_system == "pytest") {
    for (const std::string& f : test_files) {
      if (language_of(f) == "python") out += " " + sh_quote(f);
    }
  } else if (env.build_system == "prove") {
    out = "prove -v";
    for (const std::string& f : test_files) {
      if (f.size() > 2 && f.substr(f.size() - 2) == ".t") out += " " + sh_quote(f);
    }
  } else if (env.build_system == "go") {
    std::set<std::string> packages;
    for (const std::string& f : test_files) {
      const size_t slash = f.rfind('/');
      packages.insert(slash == std::string::npos ? "." : "./" + f.substr(0, slash));
    }
    out = "go test -count=1 -v";
    for (const std::string& p : packages) out += " " + sh_quote(p);
  } else if (env.build_system == "cmake") {
    // ctest selects tests by name: those whose names hold a touched test file's stem (test_parse.c, parse_test.cc,
    // tests/cli/parse.sh: "parse"), when that selects any; else the whole suite
    std::set<std::string> stems;
    for (const std::string& f : test_files) {
      if (language_of(f).empty()) continue;
      std::string stem = fs::path(f).stem().string();
      for (const char* prefix : {"test_", "test-"}) {
        if (stem.rfind(prefix, 0) == 0) stem = stem.substr(5);
      }
      for (const char* suffix : {"_test", "-test", "_tests", "-tests", "_unittest"}) {
        const size_t n = std::strlen(suffix);
        if (stem.size() > n && stem.compare(stem.size() - n, n, suffix) == 0) stem.resize(stem.size() - n);
      }
      if (stem.size() >= 3) stems.insert(stem);
    }
    if (stems.empty()) return out;
    const std::string re = regex_alternation(stems);
    out = "if " + env.test_cmd + " -N -R " + sh_quote(re) + " | grep -q 'Total Tests: [1-9]'; then " + env.test_cmd +
          " -R " + sh_quote(re) + "; else " + env.test_cmd + "; fi";
  }
  return out;
}

std::string regex_alternation(const std::set<std::string>& names) {
  std::string re;
  for (const std::string& n : names) {
    if (!re.empty()) re += '|';
    for (char c : n) {
      if (std::strchr(".[]()*+?^$|\\{}/", c)) re += '\\';
      re += c;
    }
  }
  return re;
}

std::string prepare_command(const std::string& install, const std::string& build) {
  std::string out;
  for (const std::string* step : {&install, &build}) {
    if (step->empty() || *step == "true") continue;
    out += (out.empty() ? "(" : " && (") + *step + ")";
  }
  return out;
}

Sandbox make_sandbox(const std::string& mode, double timeout, double memory_mib, const std::string& whose) {
  Sandbox s{nk::parse_sandbox(mode), timeout, static_cast<int64_t>(memory_mib * 1048576.0)};
  if (s.mode == nk::SandboxMode::namespaces && !nk::namespace_sandbox_unavailable().empty())
    throw nk::Error(nk::Exit::runtime, "the namespace sandbox cannot run here (" + nk::namespace_sandbox_unavailable() +
                                           "); run " + whose + " without it only if you trust them: --sandbox none");
  return s;
}

ScratchFolder::ScratchFolder(const std::string& name) {
  std::string why;
  path = nk::make_scratch(name, why);
  if (path.empty()) throw nk::io_error("$TMPDIR", why);
}

ScratchFolder::~ScratchFolder() {
  std::error_code ec;
  fs::remove_all(path, ec);
}

nk::SandboxedRun run_step(const std::string& command, const std::string& workspace, const std::string& scratch,
                          const Sandbox& sandbox) {
  std::error_code ec;
  fs::create_directories(fs::path(scratch) / "home", ec);
  fs::create_directories(fs::path(scratch) / "tmp", ec);
  nk::SandboxSpec spec;
  spec.writable = {scratch};
  spec.workdir = workspace;
  spec.forbid_processes = false;
  spec.processes = 4096;
  spec.file_bytes = int64_t{4} << 30;
  spec.cgroup_memory_bytes = sandbox.memory_bytes;
  const std::string home = scratch + "/home", tmp = scratch + "/tmp";
  nk::SandboxedRun r = nk::run_sandboxed(command + " 2>&1", sandbox.mode, spec, sandbox.timeout,
                           {{"HOME", home},
                            {"TMPDIR", tmp},
                            {"PYTHONDONTWRITEBYTECODE", "1"},
                            {"GOPROXY", "off"},
                            {"GOFLAGS", "-mod=mod"},
                            {"CARGO_NET_OFFLINE", "true"},
                            {"LC_ALL", "C.UTF-8"}},
                           size_t{8} << 20);
  std::string limits = sandbox.mode == nk::SandboxMode::namespaces
                           ? "no network, writes to the workspace only"
                           : "unconfined (--sandbox none)";
  limits += ", " + std::to_string(static_cast<int64_t>(sandbox.timeout)) + " s";
  limits += ", " + (r.memory_limit.empty() ? std::string("no memory limit asked") : r.memory_limit);
  RunLog::get().command(command, r.exit_code, r.seconds, r.timed_out, r.sandbox_error, limits);
  if (r.out_of_memory) RunLog::get().verdict("killed: out of memory (" + r.memory_limit + ")");
  return r;
}

}  // namespace swec
