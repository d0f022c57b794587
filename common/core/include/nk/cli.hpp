// cli.hpp - the command line every neurkit tool shares, over CLI11.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "nk/device.hpp"
#include "nk/run_env.hpp"
#include "nk/shard.hpp"

namespace nk::cli {

/// Options every tool has (documented in neurkit(7)).
struct CommonOptions {
  uint64_t seed = 0;          ///< --seed
  int threads = 0;            ///< --threads (0: SLURM_CPUS_PER_TASK or all cores)
  std::string device = "auto";  ///< --device auto|cpu|cuda
  int verbose = 0;            ///< -v, repeatable
  bool quiet = false;         ///< -q
};

/// Whether a verb draws random numbers: a seeded verb shows --seed in its
/// help and its outputs carry nk_seed (neurkit(7)).
enum class Randomness { none, seeded };

/// A tool's command line: shared options are declared once here; the tool adds
/// its verbs and options, then calls run().
class App {
 public:
  App(std::string tool, std::string description);

  CLI::App& app() { return app_; }
  const CommonOptions& common() const { return common_; }
  const std::string& tool() const { return tool_; }

  /// A verb (subcommand); shared options are accepted after it too.
  CLI::App* add_verb(const std::string& name, const std::string& description,
                     Randomness randomness = Randomness::none);

  /// -i/--input FILE ('-' = stdin).
  static CLI::Option* add_input(CLI::App& on, std::string& path, const std::string& what = "input HDF5 file");
  /// -o/--output FILE ('-' = stdout) and --no-clobber.
  static CLI::Option* add_output(CLI::App& on, std::string& path, bool& no_clobber,
                                 const std::string& what = "output HDF5 file");
  /// -o/--output FILE for a verb whose main result goes to the terminal:
  /// "Also write <what> to this file"; with --no-clobber.
  static CLI::Option* add_optional_output(CLI::App& on, std::string& path, bool& no_clobber,
                                          const std::string& what = "the results as HDF5");
  /// --no-clobber alone, for verbs with several or differently named outputs
  /// (it covers every file the verb writes).
  static CLI::Option* add_no_clobber(CLI::App& on, bool& no_clobber);
  /// What an output option names: a file, a folder the verb creates (one
  /// file per item in it), or a prefix PREFIX-NAME.svg.
  enum class OutputKind { file, folder, prefix };
  /// Marks an option as an output (-o/--output is marked by add_output and
  /// add_optional_output): before the verb starts, its folder must exist and
  /// be a folder (exit 4 otherwise), so a run never fails on a mistyped
  /// output path after doing its work.
  static CLI::Option* output(CLI::Option* option, OutputKind kind = OutputKind::file);
  /// --repeats N (1 to 1000): run the timed part N times, report the fastest.
  static CLI::Option* add_repeats(CLI::App& on, int& repeats);
  /// --shard I/N on a verb, defaulting from SLURM_ARRAY_TASK_ID/COUNT;
  /// resolved into env().shard, and written as nk_shard on its outputs.
  CLI::Option* add_shard(CLI::App& verb);

  /// Parses argv, sets up logging, threads, provenance and the device, runs
  /// 'body', and maps every failure to the exit codes of neurkit(7).
  int run(int argc, char** argv, const std::function<void()>& body);

  /// The run environment: seed, resolved threads, device and shard (valid inside body).
  const RunEnv& env() const { return env_; }
  /// The device picked for this run, with the reason (valid inside body).
  const DeviceChoice& device() const { return device_; }

 private:
  std::string tool_;
  CLI::App app_;
  CommonOptions common_;
  DeviceChoice device_;
  RunEnv env_;
  std::set<const CLI::App*> seeded_verbs_;
  bool numbers_checked_ = false;  ///< every numeric option given its number check (once)
  std::map<const CLI::App*, std::string> shard_of_verb_;
};

/// The text printed by --version: tool and library versions, CUDA module state.
std::string version_text(const std::string& tool);

}  // namespace nk::cli
