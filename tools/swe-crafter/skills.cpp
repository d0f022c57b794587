// skills.cpp - skill files, their evidence and variables.
#include "swe-crafter/skills.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include "nk/atomic_file.hpp"
#include "nk/error.hpp"
#include "nk/shipped.hpp"
#include "swe-crafter/git.hpp"
#include "swe-crafter/testrule.hpp"

namespace fs = std::filesystem;

namespace swec {

namespace {

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

/// A path matches a glob as a whole, or by its name when the glob has no '/';
/// a glob that starts with '/' matches at the top only ("/CMakeLists.txt").
bool glob_match(const std::string& glob, const std::string& path) {
  if (!glob.empty() && glob[0] == '/') return fnmatch(glob.c_str() + 1, path.c_str(), 0) == 0;
  if (fnmatch(glob.c_str(), path.c_str(), 0) == 0) return true;
  if (glob.find('/') != std::string::npos) return false;
  const size_t slash = path.rfind('/');
  return fnmatch(glob.c_str(), (slash == std::string::npos ? path : path.substr(slash + 1)).c_str(), 0) == 0;
}

Skill parse_skill(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw nk::io_error(path, "cannot read the skill");
  Skill s;
  s.file = path;
  std::string line;
  int number = 0;
  auto bad = [&](const std::string& why) {
    throw nk::Error(nk::Exit::input, "input '" + path + "': line " + std::to_string(number) + ": " + why);
  };
  while (std::getline(in, line)) {
    ++number;
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    const size_t sp = t.find(' ');
    const std::string key = t.substr(0, sp), value = sp == std::string::npos ? "" : trim(t.substr(sp + 1));
    if (value.empty()) bad("'" + key + "' has no value");
    if (key == "name") {
      s.name = value;
    } else if (key == "base") {
      s.base = value;
    } else if (key == "language") {
      s.language = value;
    } else if (key == "build_system") {
      s.build_system = value;
    } else if (key == "successes") {
      try {
        s.successes = std::stoi(value);
      } catch (const std::exception&) {
        bad("successes wants a count");
      }
    } else if (key == "log_parser") {
      s.log_parser = value;
    } else if (key == "evidence") {
      const std::string kind = value.substr(0, value.find(' '));
      if (kind != "file" && kind != "absent" && kind != "text")
        bad("evidence '" + kind + "' (expected file, absent or text)");
      if (value.find(' ') == std::string::npos) bad("evidence without its pattern");
      s.evidence.push_back(value);
    } else if (key == "var") {
      // var NAME GLOB PREFIX|SUFFIX
      std::istringstream v(value);
      Skill::Var var;
      v >> var.name >> var.glob;
      std::string rest;
      std::getline(v, rest);
      rest = trim(rest);
      const size_t bar = rest.find('|');
      if (var.glob.empty() || bar == std::string::npos) bad("var wants NAME GLOB PREFIX|SUFFIX");
      var.prefix = rest.substr(0, bar);
      var.suffix = rest.substr(bar + 1);
      s.vars.push_back(var);
    } else if (key == "setup") {
      s.setup = value;
    } else if (key == "build") {
      s.build = value;
    } else if (key == "test") {
      s.test = value;
    } else if (key == "fix") {
      const size_t arrow = value.find(" => ");
      if (arrow == std::string::npos) bad("fix wants PATTERN => env NAME=VALUE | run COMMAND");
      Skill::Fix f{trim(value.substr(0, arrow)), trim(value.substr(arrow + 4))};
      if (f.action.rfind("env ", 0) != 0 && f.action.rfind("run ", 0) != 0) bad("a fix's action is env or run");
      if (f.action.rfind("env ", 0) == 0 && f.action.find('=') == std::string::npos) bad("env wants NAME=VALUE");
      s.fixes.push_back(f);
    } else {
      bad("unknown key '" + key + "'");
    }
  }
  if (s.name.empty()) s.name = fs::path(path).stem().string();
  if (s.test.empty() || s.log_parser.empty())
    throw nk::Error(nk::Exit::input, "input '" + path + "': a skill needs test and log_parser");
  if (s.build_system.empty()) s.build_system = s.name;
  return s;
}

}  // namespace

std::string shipped_skills() {
  // found by one of its files (shipped data are looked up file by file)
  return fs::path(nk::shipped_data("swe-crafter/skills/python-pytest.skill")).parent_path().string();
}

std::vector<Skill> load_skills(const std::vector<std::string>& folders) {
  std::vector<Skill> out;
  for (const std::string& folder : folders) {
    std::error_code ec;
    if (!fs::is_directory(folder, ec)) throw nk::io_error(folder, "not a folder of skills");
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(folder, ec)) {
      if (e.path().extension() == ".skill") files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) out.push_back(parse_skill(f));
  }
  return out;
}

std::vector<SkillMatch> matching_skills(const std::vector<Skill>& skills, const std::string& tree,
                                        const std::vector<std::string>& files) {
  struct Evaluated {
    SkillMatch match;
    size_t held = 0;     // evidence lines that hold
    bool vars_ok = true;  // every variable found
    bool all = false;    // every line and variable
  };
  const auto evaluate = [&](const Skill& s) {
    Evaluated r;
    SkillMatch& m = r.match;
    m.skill = &s;
    bool all = true;
    for (const std::string& e : s.evidence) {
      const std::string kind = e.substr(0, e.find(' ')), arg = trim(e.substr(e.find(' ') + 1));
      bool holds = false;
      if (kind == "file") {
        holds = std::any_of(files.begin(), files.end(), [&](const std::string& f) { return glob_match(arg, f); });
      } else if (kind == "absent") {
        std::error_code ec;
        holds = !fs::exists(fs::path(tree) / arg, ec);
      } else {
        const std::string glob = arg.substr(0, arg.find(' ')), needle = trim(arg.substr(arg.find(' ') + 1));
        for (const std::string& f : files) {
          if (holds || !glob_match(glob, f)) continue;
          std::ifstream in(fs::path(tree) / f);
          std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
          holds = text.find(needle) != std::string::npos;
        }
      }
      if (!holds) {
        all = false;
        continue;
      }
      m.evidence.push_back(e);
      ++r.held;
    }
    for (const Skill::Var& v : s.vars) {
      if (!all && s.base.empty()) break;  // only an induced skill is ever used without all its evidence
      std::string value;
      auto scan = [&](std::istream& in) {
        std::string line;
        while (value.empty() && std::getline(in, line)) {
          const size_t a = line.find(v.prefix);
          if (a == std::string::npos) continue;
          const size_t b = line.find(v.suffix, a + v.prefix.size());
          if (b != std::string::npos && b > a + v.prefix.size())
            value = line.substr(a + v.prefix.size(), b - a - v.prefix.size());
        }
      };
      if (v.glob == "@message") {
        // the last commit's message (fetch debian-bin records the tree's path there)
        std::istringstream message(shell("git log -1 --format=%B 2>/dev/null", tree).output);
        scan(message);
      }
      for (const std::string& f : files) {
        if (v.glob == "@message") break;
        if (!value.empty() || !glob_match(v.glob, f)) continue;
        std::ifstream in(fs::path(tree) / f);
        scan(in);
      }
      if (value.empty()) {
        r.vars_ok = false;  // a variable the skill needs is not in the evidence
      } else {
        m.vars[v.name] = value;
        m.evidence.push_back("var " + v.name + " = " + value);
      }
    }
    r.all = all && r.vars_ok;
    return r;
  };
  // the language's share of the tree: of two equally specific skills, the one of the language most files are in
  // (a Rust crate with a Python script; a Python package that ships a CMakeLists.txt)
  std::map<std::string, size_t> share;
  for (const std::string& f : files) {
    const std::string l = language_of(f);
    if (!l.empty()) ++share[l == "cpp" ? "c" : l];
  }
  const auto share_of = [&](const Skill& s) {
    const auto it = share.find(s.language == "cpp" ? "c" : s.language);
    return it == share.end() ? size_t{0} : it->second;
  };
  std::vector<Evaluated> all;
  for (const Skill& s : skills) all.push_back(evaluate(s));
  std::vector<SkillMatch> out;
  for (const Evaluated& e : all) {
    if (e.all) out.push_back(e.match);
  }
  // the most specific first; of equally specific ones, the language most of the tree is in, then the one that
  // worked on more repositories
  std::stable_sort(out.begin(), out.end(), [&](const SkillMatch& a, const SkillMatch& b) {
    const size_t ea = a.skill->evidence.size() + a.skill->vars.size();
    const size_t eb = b.skill->evidence.size() + b.skill->vars.size();
    if (ea != eb) return ea > eb;
    const size_t sa = share_of(*a.skill), sb = share_of(*b.skill);
    return sa != sb ? sa > sb : a.skill->successes > b.skill->successes;
  });
  // an induced skill whose base skill matches but not all of its own evidence: the experience of the repository
  // most like this one, tried in its base skill's place (its fixes baked in) - the one that holds the most of its
  // evidence, then the one that misses least, then the one that worked on more repositories
  std::vector<SkillMatch> ordered;
  for (const SkillMatch& m : out) {
    const Evaluated* best = nullptr;
    for (const Evaluated& e : all) {
      if (e.all || !e.vars_ok || e.match.skill->base != m.skill->name) continue;
      // more held, then fewer missing, then more successes
      const auto rank = [](const Evaluated& x) {
        return std::make_tuple(x.held, -static_cast<long>(x.match.skill->evidence.size() - x.held),
                               x.match.skill->successes);
      };
      if (!best || rank(e) > rank(*best)) best = &e;
    }
    if (best) {
      SkillMatch p = best->match;
      p.partial = true;
      p.evidence.push_back("induced from " + m.skill->name + ": " + std::to_string(best->held) + " of " +
                           std::to_string(p.skill->evidence.size()) + " evidence lines hold");
      ordered.push_back(p);
    }
    ordered.push_back(m);
  }
  return ordered;
}

namespace {

/// The name pattern of a test file: the test-file rule's name forms with the
/// repository's own name replaced by '*' ("" when only its folder makes it
/// a test).
std::string test_name_pattern(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = name.rfind('.');
  const std::string ext = dot == std::string::npos ? "" : name.substr(dot);
  if (name.rfind("test_", 0) == 0) return "test_*" + ext;
  for (const char* tail : {"_test", "_spec", "Test"}) {
    const std::string t = std::string(tail) + ext;
    if (name.size() > t.size() && name.compare(name.size() - t.size(), t.size(), t) == 0) return "*" + t;
  }
  if (ext == ".t") return "*.t";
  return "";
}

bool is_test_folder(const std::string& name) {
  return name == "test" || name == "tests" || name == "t" || name == "spec" || name == "__tests__";
}

}  // namespace

std::vector<std::string> tree_features(const std::vector<std::string>& files, const std::string& tree,
                                       const std::string& language) {
  std::map<std::string, int> test_folders, name_patterns;
  std::set<std::string> code_folders;
  for (const std::string& f : files) {
    const size_t slash = f.find('/');
    const std::string top = slash == std::string::npos ? "" : f.substr(0, slash);
    if (is_test_file(f)) {
      if (is_test_folder(top)) ++test_folders[top];
      if (const std::string p = test_name_pattern(f); !p.empty()) ++name_patterns[p];
    } else if (!top.empty() && !language.empty() && language_of(f) == language && top[0] != '.') {
      const size_t dot = f.rfind('.');
      code_folders.insert(top + "/*" + (dot == std::string::npos ? "" : f.substr(dot)));
    }
  }
  std::vector<std::string> out;
  auto most = [](const std::map<std::string, int>& counts) {
    std::string best;
    int n = 0;
    for (const auto& [k, c] : counts) {
      if (c > n) best = k, n = c;
    }
    return best;
  };
  if (const std::string t = most(test_folders); !t.empty()) out.push_back("file " + t + "/*");
  if (const std::string p = most(name_patterns); !p.empty()) out.push_back("file " + p);
  for (const std::string& c : code_folders) out.push_back("file " + c);
  // the manifests at the top, and their sections about tests
  static const char* manifests[] = {"setup.py",     "setup.cfg",   "pyproject.toml", "tox.ini",   "pytest.ini",
                                    "Cargo.toml",   "go.mod",      "CMakeLists.txt", "Makefile",  "Makefile.PL",
                                    "Build.PL",     "package.json", "meson.build",   "configure.ac", "pom.xml",
                                    "build.gradle", "Gemfile",     "composer.json",  "Rakefile"};
  for (const char* m : manifests) {
    if (std::find(files.begin(), files.end(), m) == files.end()) continue;
    out.push_back(std::string("file /") + m);
    std::ifstream in(fs::path(tree) / m);
    std::string line;
    std::set<std::string> seen;
    while (std::getline(in, line)) {
      const std::string t = trim(line);
      if (t.size() < 3 || t[0] != '[' || t.back() != ']') continue;
      std::string lower = t;
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
      if ((lower.find("test") != std::string::npos || lower == "[dev-dependencies]") && seen.insert(t).second)
        out.push_back(std::string("text /") + m + " " + t);
    }
  }
  return out;
}

std::string induce_skill(const std::string& folder, const Skill& base, const std::vector<std::string>& exports,
                         const std::vector<std::string>& runs, const std::vector<std::string>& features,
                         const std::string& repo) {
  std::string pre;
  // exported in name order, as env does: the same fixes give the same commands
  std::vector<std::string> sorted = exports;
  std::stable_sort(sorted.begin(), sorted.end(), [](const std::string& a, const std::string& b) {
    return a.substr(0, a.find('=')) < b.substr(0, b.find('='));
  });
  for (const std::string& kv : sorted) {
    const size_t eq = kv.find('=');
    pre += "export " + kv.substr(0, eq) + "=" + sh_quote(kv.substr(eq + 1)) + "; ";
  }
  std::string setup;
  for (const std::string& r : runs) setup += (setup.empty() ? "" : " && ") + std::string("{ ") + r + "; }";
  if (!base.setup.empty()) setup += (setup.empty() ? "" : " && ") + base.setup;
  Skill s = base;
  s.setup = setup.empty() ? "" : pre + setup;
  s.build = base.build.empty() ? "" : pre + base.build;
  s.test = pre + base.test;
  // its name: the base's, and a hash of what it runs (the same commands merge)
  uint64_t h = 1469598103934665603ull;
  for (const std::string& part : {s.language, s.build_system, s.log_parser, s.setup, s.build, s.test}) {
    for (const unsigned char c : part + '\n') h = (h ^ c) * 1099511628211ull;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%08llx", static_cast<unsigned long long>(h & 0xffffffffull));
  const std::string base_name = base.name.rfind("induced-", 0) == 0 ? base.name.substr(8, base.name.size() - 17)
                                                                     : base.name;
  s.name = "induced-" + base_name + "-" + hex;
  for (const std::string& f : features) {
    if (std::find(s.evidence.begin(), s.evidence.end(), f) == s.evidence.end()) s.evidence.push_back(f);
  }
  // the fixes that were needed are in the commands now
  s.fixes.erase(std::remove_if(s.fixes.begin(), s.fixes.end(),
                               [&](const Skill::Fix& f) {
                                 const std::string a = f.action.substr(4);
                                 return std::find(exports.begin(), exports.end(), a) != exports.end() ||
                                        std::find(runs.begin(), runs.end(), a) != runs.end();
                               }),
                s.fixes.end());
  s.successes = 1;
  s.base = base.base.empty() ? base.name : base.base;
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (!fs::is_directory(folder, ec)) throw nk::io_error(folder, "cannot make the folder of induced skills");
  const std::string path = (fs::path(folder) / (s.name + ".skill")).string();
  std::vector<std::string> sources = {repo};
  if (fs::exists(path, ec)) {
    // the same commands worked before: keep the evidence both repositories have
    const Skill old = parse_skill(path);
    std::vector<std::string> shared;
    for (const std::string& e : s.evidence) {
      if (std::find(old.evidence.begin(), old.evidence.end(), e) != old.evidence.end()) shared.push_back(e);
    }
    s.evidence = shared;
    s.successes = old.successes + 1;
  }
  std::ostringstream out;
  out << "# Induced by swe-crafter env --induce: what worked on " << s.successes
      << (s.successes == 1 ? " repository" : " repositories") << " (the last: " << repo << "), from the skill "
      << s.base << ".\n# Evidence shared by all of them; the fixes they needed are in the commands.\n";
  out << "name " << s.name << "\nbase " << s.base << "\nlanguage " << s.language << "\nbuild_system " << s.build_system << "\nlog_parser "
      << s.log_parser << "\nsuccesses " << s.successes << "\n";
  for (const std::string& e : s.evidence) out << "evidence " << e << "\n";
  for (const Skill::Var& v : s.vars) out << "var " << v.name << " " << v.glob << " " << v.prefix << "|" << v.suffix << "\n";
  if (!s.setup.empty()) out << "setup " << s.setup << "\n";
  if (!s.build.empty()) out << "build " << s.build << "\n";
  out << "test " << s.test << "\n";
  for (const Skill::Fix& f : s.fixes) out << "fix " << f.pattern << " => " << f.action << "\n";
  nk::AtomicFile file(path, false);
  {
    std::ofstream o(file.temp_path());
    o << out.str();
    if (!o) throw nk::io_error(path, "cannot write the induced skill");
  }
  file.commit();
  return path;
}

std::string expand(const std::string& command, const std::map<std::string, std::string>& vars) {
  std::string out = command;
  for (const auto& [name, value] : vars) {
    const std::string key = "{" + name + "}";
    for (size_t at = 0; (at = out.find(key, at)) != std::string::npos; at += value.size())
      out.replace(at, key.size(), value);
  }
  return out;
}

}  // namespace swec
