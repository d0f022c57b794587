// cli.cpp - shared options, --version, and the error-to-exit-code boundary.
#include "nk/cli.hpp"

#include <fftw3.h>
#include <omp.h>
#include <unistd.h>

#include <Eigen/Core>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <map>
#include <cstdlib>
#include <cstdio>
#include <new>

#include "nk/atomic_file.hpp"
#include "nk/context.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/cuda_abi.hpp"
#include "nk/log.hpp"

namespace nk::cli {

std::string version_text(const std::string& tool) {
  std::string text = tool + " " + nk::version() + " (neurkit)\n";
  text += "  HDF5 " + h5::library_version() + "\n";
  text += "  Eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) + "." +
          std::to_string(EIGEN_MINOR_VERSION) + "\n";
  text += std::string("  CLI11 ") + CLI11_VERSION + "\n";
  text += std::string("  FFTW ") + ::fftw_version + "\n";
  text += std::string("  spdlog ") + std::to_string(SPDLOG_VER_MAJOR) + "." + std::to_string(SPDLOG_VER_MINOR) +
          "." + std::to_string(SPDLOG_VER_PATCH) + "\n";
  const std::string module = cuda_module_file();
  if (module.empty()) {
    text += "  CUDA module: absent (this build has no CUDA path)";
  } else if (const std::string problem = cuda_driver_problem(); !problem.empty()) {
    text += "  CUDA module: present (" + module + "), unused: " + problem;
  } else {
    std::string why;
    const nk_cuda_core* core = cuda_family<nk_cuda_core>(&why);
    text += core ? "  CUDA module: present (" + cuda_module_path() + ", CUDA runtime " + core->runtime_version() + ")"
                : "  CUDA module: present (" + module + ") but not loadable: " + why;
  }
  return text;
}

App::App(std::string tool, std::string description) : tool_(std::move(tool)), app_(std::move(description), tool_) {
  app_.fallthrough();
  // Usage errors read like every other error: one line, "tool: error: ...".
  app_.failure_message([tool = tool_](const CLI::App*, const CLI::Error& e) {
    return tool + ": error: " + e.what() + " (see --help)\n";
  });
  app_.option_defaults()->always_capture_default();
  app_.set_version_flag("-V,--version", [this] { return version_text(tool_); });
  app_.set_config("--config", "", "Read options from a TOML file (command line wins over the file)");
  auto* group = "Common options";
  app_.add_option("--seed", common_.seed, "Seed of every random stream (for the verbs that show --seed)")->group(group);
  app_.add_option("--threads", common_.threads, "Worker threads; 0 = SLURM_CPUS_PER_TASK, else OMP_NUM_THREADS, else all cores")
      ->check(CLI::Range(0, 4096))
      ->group(group);
  app_.add_option("--device", common_.device, "Compute device: auto, cpu or cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->group(group);
  app_.add_flag("-v,--verbose", common_.verbose, "More log output on stderr (repeat for more)")->group(group);
  app_.add_flag("-q,--quiet", common_.quiet, "Only warnings and errors on stderr; no progress bar")->group(group);
}

CLI::App* App::add_verb(const std::string& name, const std::string& description, Randomness randomness) {
  CLI::App* verb = app_.add_subcommand(name, description);
  if (randomness == Randomness::seeded) {
    // Also before the verb (tool --seed N verb), through the tool's own --seed.
    verb->add_option("--seed", common_.seed, "Seed of every random stream (written as nk_seed)")
        ->group("Common options");
    seeded_verbs_.insert(verb);
  }
  return verb;
}

CLI::Option* App::add_input(CLI::App& on, std::string& path, const std::string& what) {
  return on.add_option("-i,--input", path, "The " + what + " ('-' = standard input)");
}

namespace {
std::map<const CLI::Option*, App::OutputKind>& output_options() {
  static std::map<const CLI::Option*, App::OutputKind> options;
  return options;
}

// The folder an output will be created in must exist (exit 4 before any work).
void check_output_folders(const CLI::App& app) {
  for (const CLI::Option* option : app.get_options()) {
    const auto kind = output_options().find(option);
    if (kind == output_options().end() || option->count() == 0) continue;
    for (const std::string& value : option->results()) {
      if (value.empty() || value == "-") continue;
      std::filesystem::path parent = std::filesystem::path(value).parent_path();
      if (kind->second == App::OutputKind::folder && std::filesystem::path(value).filename().empty()) {
        parent = std::filesystem::path(value).parent_path().parent_path();  // "frames/" names the folder frames
      }
      if (parent.empty()) continue;
      std::error_code error;
      if (std::filesystem::is_directory(parent, error)) continue;
      if (std::filesystem::exists(parent, error)) {
        throw io_error(value, "cannot create output: '" + parent.string() + "' is not a folder");
      }
      throw io_error(value, "cannot create output: folder '" + parent.string() + "' does not exist");
    }
  }
  for (const CLI::App* sub : app.get_subcommands()) check_output_folders(*sub);
}
}  // namespace

CLI::Option* App::output(CLI::Option* option, OutputKind kind) {
  output_options()[option] = kind;
  return option;
}

CLI::Option* App::add_output(CLI::App& on, std::string& path, bool& no_clobber, const std::string& what) {
  add_no_clobber(on, no_clobber);
  return output(on.add_option("-o,--output", path, "The " + what + " ('-' = standard output)"));
}

CLI::Option* App::add_optional_output(CLI::App& on, std::string& path, bool& no_clobber, const std::string& what) {
  add_no_clobber(on, no_clobber);
  return output(on.add_option("-o,--output", path, "Also write " + what + " to this file ('-' = standard output)"));
}

CLI::Option* App::add_no_clobber(CLI::App& on, bool& no_clobber) {
  return on.add_flag("--no-clobber", no_clobber, "Fail instead of replacing an existing output file (any the verb writes)");
}

CLI::Option* App::add_repeats(CLI::App& on, int& repeats) {
  return on.add_option("--repeats", repeats, "Run the timed part this many times and report the fastest")
      ->check(CLI::Range(1, 1000));
}

CLI::Option* App::add_shard(CLI::App& verb) {
  return verb.add_option("--shard", shard_of_verb_[&verb],
                         "Process only slice I of N (0-based); default from SLURM_ARRAY_TASK_ID/COUNT");
}

namespace {
// --threads 0: the job's share of a Slurm node, else OpenMP's own variable
// (its first number: a nested list "4,2" gives 4), else every core.
int default_threads() {
  for (const char* name : {"SLURM_CPUS_PER_TASK", "OMP_NUM_THREADS"}) {
    if (const char* value = std::getenv(name)) {
      const int n = std::atoi(value);
      if (n > 0) return n;
    }
  }
  return omp_get_num_procs();
}

// Every numeric option (lists too, element by element) takes a number: not an
// empty word (CLI11 would keep the default), not a negative UINT (strtoull
// wraps -1 to 2^64 - 1), and for FLOAT a finite one: no option of any verb
// means anything by NaN or infinity, and CLI11's Range lets NaN through
// (every comparison with it is false).
const CLI::Validator& number_check(bool finite, bool unsigned_) {
  static const auto make = [](bool f, bool u) {
    return CLI::Validator(
        [f, u](std::string& text) -> std::string {
          if (text.find_first_not_of(" \t") == std::string::npos) return "an empty value is not a number";
          if (u && text.find('-') != std::string::npos) return "Value " + text + " is negative";
          if (!f) {  // CLI11 2.1 takes an out-of-range integer as the type's largest value
            char* end = nullptr;
            errno = 0;
            if (u) (void)std::strtoull(text.c_str(), &end, 0);
            else (void)std::strtoll(text.c_str(), &end, 0);
            if (errno == ERANGE) return "Value " + text + " is out of the integer's range";
          }
          if (f) {
            char* end = nullptr;
            const double value = std::strtod(text.c_str(), &end);
            if (end != text.c_str() && !std::isfinite(value)) return "Value " + text + " is not a finite number";
          }
          return {};
        },
        "", "number");
  };
  static const CLI::Validator for_float = make(true, false), for_uint = make(false, true), for_int = make(false, false);
  return finite ? for_float : unsigned_ ? for_uint : for_int;
}

void check_numbers(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    const std::string type = option->get_type_name();
    if (type.rfind("FLOAT", 0) == 0) option->check(number_check(true, false));
    else if (type.rfind("UINT", 0) == 0) option->check(number_check(false, true));
    else if (type.rfind("INT", 0) == 0) option->check(number_check(false, false));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) check_numbers(*sub);
}

void report(const std::string& tool, const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "%s: error: %s\n", tool.c_str(), message.c_str());
}
}  // namespace

int App::run(int argc, char** argv, const std::function<void()>& body) {
  RunContext& context = run_context();
  context.tool = tool_;
  context.command = join_command(argc, argv);
  install_signal_handlers(tool_);
  // Set below from the verb that runs; nothing carries over from an earlier run.
  context.seed.reset();
  context.shard.clear();
  try {
    try {
      if (!numbers_checked_) check_numbers(app_);
      numbers_checked_ = true;
      app_.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      const int code = app_.exit(e);
      // CLI11 uses 100-127 for parse errors; neurkit(7) promises 2.
      return code == 0 ? 0 : static_cast<int>(Exit::usage);
    }
    log::init(tool_, common_.quiet ? -1 : common_.verbose);
    check_output_folders(app_);
    const int threads = common_.threads > 0 ? common_.threads : default_threads();
    omp_set_num_threads(threads);
    Eigen::setNbThreads(threads);
    device_ = choose_device(common_.device);
    spdlog::debug("device: {} ({}), threads: {}", device_.name, device_.reason, threads);
    env_.seed = common_.seed;
    env_.threads = threads;
    env_.device = device_.kind;
    for (const CLI::App* verb : app_.get_subcommands()) {
      if (seeded_verbs_.count(verb)) context.seed = common_.seed;
      if (auto shard = shard_of_verb_.find(verb); shard != shard_of_verb_.end()) {
        env_.shard = resolve_shard(shard->second);
        if (!env_.shard.whole()) context.shard = env_.shard.text();
      }
    }
    // Every output of the verb publishes together once the whole run has
    // succeeded (nk/atomic_file.hpp); any failure removes them all.
    struct Outputs {
      Outputs() { begin_outputs(); }
      ~Outputs() { abort_outputs(); }
    } outputs;
    body();
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
      throw io_error("-", "cannot write standard output");
    }
    commit_outputs();
    return 0;
  } catch (const Error& e) {
    report(tool_, e.what());
    return static_cast<int>(e.code());
  } catch (const std::bad_alloc&) {
    report(tool_, "out of memory");
    return static_cast<int>(Exit::runtime);
  } catch (const std::exception& e) {
    report(tool_, e.what());
    return static_cast<int>(Exit::runtime);
  }
}

}  // namespace nk::cli
