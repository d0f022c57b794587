// swe_crafter.hpp - SWE-Crafter (swe-crafter(1)): executable SWE instances
// from real repositories: the verbs' options and entry points.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "nk/run_env.hpp"

namespace swec {

struct StoreOptions {
  std::string store = "swe-store";  ///< --store DIR
  std::string log;                  ///< --log run.h5: the run log (swe-crafter(1) FILES)
  double memory = 8192;             ///< --memory MiB per command, by a memory cgroup where one can be made (0: none)
};

struct FetchOptions : StoreOptions {
  std::string source;  ///< git:PATH | debian-bin:PKG | debian-src:PKG|FILE.dsc | pypi:NAME[==VER]
  std::string name;    ///< the repository's name in the store (default: from the source)
  int versions = 3;    ///< pypi: consecutive releases (a chain of commits: release diffs)
  std::string pypi_index = "https://pypi.org/pypi";  ///< pypi: the JSON API (a mirror, or file://)
};
/// Puts the source into the store (left as it is when there already); returns its path.
std::string fetch_source(const FetchOptions& options);
void fetch_verb(const FetchOptions& options, const nk::RunEnv& env);

struct EnvOptions : StoreOptions {
  std::string input, output, method = "skills", rev = "HEAD", sandbox = "namespace";
  std::vector<std::string> skills;  ///< --skills DIR: more skill files beside the shipped ones
  std::string induce;               ///< --induce DIR: what worked, written back as a skill
  int attempts = 6;
  bool no_clobber = false;
  double timeout = 900;
};
void env_verb(const EnvOptions& options, const nk::RunEnv& env);

struct MineOptions : StoreOptions {
  std::string input, output, rev = "HEAD", env_file, sandbox = "namespace";
  bool no_clobber = false;
  int64_t max = 0;        ///< candidates at most (0: all)
  int64_t synthetic = 0;  ///< SWE-smith-style bugs instead of the history (0: the history)
  std::string agent_cmd;  ///< --synthetic: an agent that writes each bug's problem statement
  double timeout = 900;
};
void mine_verb(const MineOptions& options, const nk::RunEnv& env);

struct ValidateOptions : StoreOptions {
  std::ostream* report = nullptr;  ///< where the TSV verdicts go (standard output when null)
  std::string status_maps;         ///< --status-maps FILE: every run's test statuses (JSONL), for other graders
  std::string input, output, sandbox = "namespace";
  bool no_clobber = false, full_suite = false;
  bool fresh = false;  ///< every state from scratch (no prepared workspace)
  int runs = 2;
  double timeout = 900;
};
/// Returns the exit status: 1 when re-checked instances fail, else 0.
int validate_verb(const ValidateOptions& options, const nk::RunEnv& env);

struct DistillOptions : StoreOptions {
  std::ostream* report = nullptr;  ///< where the TSV lines go (standard output when null)
  std::string input, output, agent = "builtin", agent_cmd, sandbox = "namespace";
  bool no_clobber = false;
  bool fresh = false;  ///< the agent's workspace and the grading from scratch (no prepared workspace)
  int max_steps = 30;
  double max_seconds = 0;  ///< a trajectory's wall-clock budget (0: none)
  double timeout = 900;
};
void distill_verb(const DistillOptions& options, const nk::RunEnv& env);

struct RunOptions : StoreOptions {
  std::string corpus, output, method = "skills", induce, agent = "builtin", agent_cmd, sandbox = "namespace";
  std::vector<std::string> skills;
  int attempts = 6, runs = 2, max_steps = 30;
  double max_seconds = 0;  ///< distill's budget per trajectory
  int64_t max = 0, synthetic = 0;
  bool fixed_too = false, history = true, fresh = false;
  int versions = 3;                                  ///< pypi sources: releases
  std::string pypi_index = "https://pypi.org/pypi";  ///< pypi sources: the JSON API
  double timeout = 900;
};
/// The whole pipeline over a corpus (a source per line); resumable.
void run_verb(const RunOptions& options, const nk::RunEnv& env);

struct StatsOptions {
  std::vector<std::string> inputs;
  std::string output = "-", svg;
  bool no_clobber = false;
};
void stats_verb(const StatsOptions& options, const nk::RunEnv& env);

struct DoctorOptions : StoreOptions {
  std::vector<std::string> inputs;  ///< -i REPO: its Debian build dependencies, installed or not
  bool missing = false;             ///< --missing: only the names of those not installed (apt-get install's list)
};
void doctor_verb(const DoctorOptions& options, const nk::RunEnv& env);

/// A Debian control file's build dependencies (Build-Depends, -Indep, -Arch):
/// each relation's alternatives with versions, architectures and :qualifiers
/// dropped; relations that only a positive build profile enables (<stage1>)
/// and the packaging machinery (debhelper, dh-*) left out.
std::vector<std::vector<std::string>> build_dependencies(const std::string& control);

/// A repository argument: a folder, or a name in the store.
std::string resolve_repo(const std::string& store, const std::string& repo);

}  // namespace swec
