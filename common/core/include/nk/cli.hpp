// cli.hpp - the command line every neurkit tool shares, over CLI11.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <string>

#include "nk/device.hpp"
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

/// A tool's command line: shared options are declared once here; the tool adds
/// its verbs and options, then calls run().
class App {
 public:
  App(std::string tool, std::string description);

  CLI::App& app() { return app_; }
  const CommonOptions& common() const { return common_; }
  const std::string& tool() const { return tool_; }

  /// A verb (subcommand); shared options are accepted after it too.
  CLI::App* add_verb(const std::string& name, const std::string& description);

  /// -i/--input FILE ('-' = stdin).
  static CLI::Option* add_input(CLI::App& on, std::string& path, const std::string& what = "input HDF5 file");
  /// -o/--output FILE ('-' = stdout) and --no-clobber.
  static CLI::Option* add_output(CLI::App& on, std::string& path, bool& no_clobber,
                                 const std::string& what = "output HDF5 file");
  /// --shard I/N, defaulting from SLURM_ARRAY_TASK_ID/COUNT.
  static CLI::Option* add_shard(CLI::App& on, std::string& shard);

  /// Parses argv, sets up logging, threads, provenance and the device, runs
  /// 'body', and maps every failure to the exit codes of neurkit(7).
  int run(int argc, char** argv, const std::function<void()>& body);

  /// The device picked for this run (valid inside body).
  const DeviceChoice& device() const { return device_; }
  /// The shard picked for this run from a --shard string (env default applied).
  static Shard resolve_shard(const std::string& option_value);

 private:
  std::string tool_;
  CLI::App app_;
  CommonOptions common_;
  DeviceChoice device_;
};

/// The text printed by --version: tool and library versions, CUDA module state.
std::string version_text(const std::string& tool);

}  // namespace nk::cli
