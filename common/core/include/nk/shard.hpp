// shard.hpp - --shard I/N: a deterministic contiguous slice of a batch.
#pragma once
#include <cstdint>
#include <string>
#include <utility>

namespace nk {

struct Shard {
  int64_t index = 0;  ///< 0-based
  int64_t count = 1;
  bool whole() const { return count == 1; }
  std::string text() const { return std::to_string(index) + "/" + std::to_string(count); }
};

/// Parses "I/N" (0 <= I < N); throws a usage error naming the option otherwise.
Shard parse_shard(const std::string& text);
/// The shard from (SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN) / SLURM_ARRAY_TASK_STEP
/// of SLURM_ARRAY_TASK_COUNT, or the whole batch when they are not set.
Shard shard_from_environment();
/// The value of a --shard option, or the Slurm default when it is empty.
Shard resolve_shard(const std::string& option_value);
/// Items [begin, end) of 'items' that shard takes: contiguous blocks whose
/// sizes differ by at most one, in shard order.
std::pair<int64_t, int64_t> shard_range(const Shard& shard, int64_t items);

}  // namespace nk
