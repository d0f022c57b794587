// skills.hpp - environment skills: an editable file per language and build
// system (shipped in data/swe-crafter/skills, more with --skills DIR) that
// says what evidence selects it, the commands it runs, and how it fixes a
// failure it recognises (swe-crafter(1) SKILLS).
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace swec {

struct Skill {
  std::string name, file, language, build_system, log_parser;
  std::vector<std::string> evidence;  ///< "file GLOB", "absent PATH", "text GLOB SUBSTRING"
  struct Var {
    std::string name, glob, prefix, suffix;
  };
  std::vector<Var> vars;  ///< {name}: the text between prefix and suffix on the first line that has them
  std::string setup, build, test;
  struct Fix {
    std::string pattern, action;  ///< action: "env NAME=VALUE" or "run COMMAND"
  };
  std::vector<Fix> fixes;
  int successes = 0;  ///< induced skills: the repositories it worked on (--induce)
  std::string base;   ///< induced skills: the shipped skill it was induced from ("" for a shipped one)
};

/// Every *.skill file of the folders, in name order; a malformed line is
/// exit 3 naming file and line.
std::vector<Skill> load_skills(const std::vector<std::string>& folders);

/// The shipped skills' folder.
std::string shipped_skills();

struct SkillMatch {
  const Skill* skill = nullptr;
  std::map<std::string, std::string> vars;
  std::vector<std::string> evidence;  ///< what held, for env.json
  bool partial = false;  ///< an induced skill tried in its base skill's place: not all its evidence holds
};

/// The skills whose every evidence line holds in the work tree (tracked
/// files: 'files'), most evidence first, then the language most of the
/// files are in, then the most successes. Before each base skill, the
/// induced skill of that base that holds the most of its evidence, when not
/// all of it holds (partial).
std::vector<SkillMatch> matching_skills(const std::vector<Skill>& skills, const std::string& work_tree,
                                        const std::vector<std::string>& files);

/// What an induced skill abstracts a work tree to (swe-crafter(1) SKILLS):
/// the test folder ("file tests/*"), the test files' name pattern ("file
/// test_*.py"), the top folders that hold the language's code ("file
/// lib/*.py"), the manifests at the top ("file /tox.ini") and their test
/// sections ("text /setup.cfg [tool:pytest]"). Names of the repository's own
/// packages, modules and tests never appear.
std::vector<std::string> tree_features(const std::vector<std::string>& files, const std::string& tree,
                                       const std::string& language);

/// What worked, as a skill: the base skill's evidence, variables, remaining
/// fixes and log parser; its commands with the fixes that were needed baked
/// in ('exports': NAME=VALUE, 'runs': commands run before setup, both with
/// {variables} unexpanded); 'features' as more evidence. A skill with the
/// same commands already in 'folder' is merged: its evidence becomes what
/// both repositories share, its successes one more. Returns the file
/// written.
std::string induce_skill(const std::string& folder, const Skill& base, const std::vector<std::string>& exports,
                         const std::vector<std::string>& runs, const std::vector<std::string>& features,
                         const std::string& repo);

/// {name} replaced by the match's variables.
std::string expand(const std::string& command, const std::map<std::string, std::string>& vars);

}  // namespace swec
