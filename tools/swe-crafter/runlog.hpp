// runlog.hpp - the run log (--log run.h5): every command run in the sandbox,
// every repository's environment, every candidate's verdict and every
// trajectory, as HDF5 tables that nk-data merge joins across shards and
// `swe-crafter stats` reads.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace swec {

class RunLog {
 public:
  /// The process's log (records are kept whether or not --log writes them).
  static RunLog& get();

  /// The repository and stage the next commands belong to.
  void context(const std::string& repo, const std::string& stage);
  /// A command that ran ("exit N", "timed out" or the sandbox's error as its
  /// verdict until verdict() says more).
  void command(const std::string& command, int exit_code, double seconds, bool timed_out,
               const std::string& sandbox_error, const std::string& limits);
  /// The last command's verdict, e.g. "works", "before run 1: 3 passed, 1 failed".
  void verdict(const std::string& verdict);
  /// A note between commands (how a state was made): a record with an empty
  /// command, exit 0, the note as its verdict.
  void note(const std::string& text);
  void repository(const std::string& repo, const std::string& language, const std::string& method, bool env_ok,
                  int attempts, double test_seconds);
  void candidate(const std::string& repo, const std::string& instance_id, const std::string& source,
                 const std::string& verdict, const std::string& reason, int64_t f2p, int64_t p2p, int64_t flaky,
                 int64_t runs, double seconds);
  void trajectory(const std::string& repo, const std::string& instance_id, const std::string& agent, bool resolved,
                  int64_t steps);

  /// Writes the log (schema swe-crafter.log/1); no_clobber as -o.
  void write(const std::string& path, bool no_clobber) const;
  /// Appends the records of a log file (one that write() or nk-data merge
  /// wrote); a file that is not one is exit 3 naming file and dataset.
  void read(const std::string& path);
  void clear();

  std::string repo, stage;
  struct Attempt {
    std::string repo, stage, command, verdict, limits;
    int64_t exit_code = 0;
    double seconds = 0;
  };
  struct Repo {
    std::string repo, language, method;
    bool env_ok = false;
    int64_t attempts = 0;
    double test_seconds = 0;
  };
  struct Candidate {
    std::string repo, instance_id, source, verdict, reason;
    int64_t f2p = 0, p2p = 0, flaky = 0, runs = 0;
    double seconds = 0;
  };
  struct Trajectory {
    std::string repo, instance_id, agent;
    bool resolved = false;
    int64_t steps = 0;
  };
  std::vector<Attempt> attempts;
  std::vector<Repo> repos;
  std::vector<Candidate> candidates;
  std::vector<Trajectory> trajectories;
};

}  // namespace swec
