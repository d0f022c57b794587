// run_env.hpp - what every verb runs with, resolved once by the shared
// command line (nk/cli.hpp) from --seed, --threads, --device and --shard.
#pragma once
#include <cstdint>

#include "nk/device.hpp"
#include "nk/shard.hpp"

namespace nk {

struct RunEnv {
  /// --seed: the root of every random stream. Outputs of a verb declared
  /// with Randomness::seeded carry it as nk_seed, without the verb writing it.
  uint64_t seed = 0;
  /// --threads, resolved: never 0 (0 on the command line means
  /// SLURM_CPUS_PER_TASK or every core); OpenMP and Eigen are set to it.
  int threads = 1;
  /// --device, resolved (auto has picked cuda or cpu).
  DeviceKind device = DeviceKind::cpu;
  /// --shard, resolved (the Slurm array default applied); the whole batch
  /// for a verb without --shard.
  Shard shard;

  bool cuda() const { return device == DeviceKind::cuda; }
};

}  // namespace nk
