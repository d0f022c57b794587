// shard.cpp - shard parsing and slicing.
#include "nk/shard.hpp"

#include <cstdlib>

#include "nk/error.hpp"

namespace nk {

namespace {
bool parse_int(const std::string& text, int64_t& value) {
  if (text.empty() || text.size() > 18) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  value = std::strtoll(text.c_str(), nullptr, 10);
  return true;
}
}  // namespace

Shard parse_shard(const std::string& text) {
  const size_t slash = text.find('/');
  Shard shard;
  if (slash == std::string::npos || !parse_int(text.substr(0, slash), shard.index) ||
      !parse_int(text.substr(slash + 1), shard.count) || shard.count < 1 || shard.index >= shard.count) {
    throw usage_error("--shard: expected I/N with 0 <= I < N, got '" + text + "'");
  }
  return shard;
}

Shard shard_from_environment() {
  const char* id = std::getenv("SLURM_ARRAY_TASK_ID");
  const char* count = std::getenv("SLURM_ARRAY_TASK_COUNT");
  if (!id || !count) return {};
  const char* min = std::getenv("SLURM_ARRAY_TASK_MIN");
  const char* step_text = std::getenv("SLURM_ARRAY_TASK_STEP");
  int64_t index = 0, total = 0, first = 0, step = 1;
  if (!parse_int(id, index) || !parse_int(count, total) || (min && !parse_int(min, first)) ||
      (step_text && !parse_int(step_text, step)) || step < 1) {
    throw usage_error("SLURM_ARRAY_TASK_ID/COUNT/MIN/STEP are not positive integers");
  }
  // --array=0-14:2 numbers tasks 0, 2, ..., 14: shard k is the k-th task.
  return parse_shard(std::to_string((index - first) / step) + "/" + std::to_string(total));
}

Shard resolve_shard(const std::string& option_value) {
  return option_value.empty() ? shard_from_environment() : parse_shard(option_value);
}

std::pair<int64_t, int64_t> shard_range(const Shard& shard, int64_t items) {
  const int64_t base = items / shard.count, extra = items % shard.count;
  const int64_t begin = shard.index * base + std::min(shard.index, extra);
  return {begin, begin + base + (shard.index < extra ? 1 : 0)};
}

}  // namespace nk
