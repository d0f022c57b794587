// skills.cpp - skill files, their evidence and variables.
#include "swe-crafter/skills.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "nk/error.hpp"
#include "nk/shipped.hpp"
#include "swe-crafter/git.hpp"

namespace fs = std::filesystem;

namespace swec {

namespace {

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

/// A path matches a glob as a whole, or by its name when the glob has no '/'.
bool glob_match(const std::string& glob, const std::string& path) {
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
    } else if (key == "language") {
      s.language = value;
    } else if (key == "build_system") {
      s.build_system = value;
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
  std::vector<SkillMatch> out;
  for (const Skill& s : skills) {
    SkillMatch m;
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
        break;
      }
      m.evidence.push_back(e);
    }
    for (const Skill::Var& v : s.vars) {
      if (!all) break;
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
        all = false;  // a variable the skill needs is not in the evidence
      } else {
        m.vars[v.name] = value;
        m.evidence.push_back("var " + v.name + " = " + value);
      }
    }
    if (all) out.push_back(m);
  }
  std::stable_sort(out.begin(), out.end(), [](const SkillMatch& a, const SkillMatch& b) {
    return a.skill->evidence.size() + a.skill->vars.size() > b.skill->evidence.size() + b.skill->vars.size();
  });
  return out;
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
