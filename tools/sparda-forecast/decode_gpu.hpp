// decode_gpu.hpp - decode's trace replay on a GPU (--device cuda): the CUDA
// module's offload family scores blocks and attends over the engine's device
// pool. The pooled keys of every layer stay on the device (1/block of the
// keys, as in the paper's system); in resident mode every KV row does too.
// Each (sequence, layer, KV head) has its own slot for the block the query
// is in, filled row by row as decoding moves (a model writes its new K and
// V rows there).
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "nk/lm/block_select.hpp"
#include "sparda-forecast/engine.hpp"
#include "sparda-forecast/forecast.hpp"
#include "sparda-forecast/trace.hpp"

namespace sparda {

class GpuReplay {
 public:
  /// Sequences s0..s1-1 of the trace; 'pool_blocks' is the engine's cached
  /// capacity (its own-block slots follow it); the engine must have been
  /// made with (s1 - s0) * layers * kv_heads extra slots.
  GpuReplay(const nk_cuda_offload& gpu, Engine& engine, const Trace& trace, const std::vector<Target>& targets,
            const std::vector<std::vector<float>>& values, bool resident, int64_t s0, int64_t s1,
            int64_t pool_blocks);

  /// Layer m's selection at position t for every sequence ([Hkv * width]
  /// each; -1 past a sequence's end), scored on the GPU by the selector
  /// (by empty) or the Forecast (by.forecast). Not for InfiniGen.
  std::vector<std::vector<int32_t>> select(int64_t m, int64_t t, const Scorer& by,
                                           const nk::lm::BlockSelectorConfig& sel) const;

  /// Layer l's attention at t for every sequence that has not ended: out
  /// [i][Hq][d] for sequence s0 + i (untouched for ended ones). blocks[i *
  /// Hkv + g] lists (block, index among the ticket's keys; -1 for the
  /// query's own block) in increasing order.
  void attend(int64_t l, int64_t t, const std::vector<std::vector<std::pair<int32_t, int64_t>>>& blocks,
              const Engine& engine, const Engine::Ticket& ticket, std::vector<float>& out);

 private:
  const nk_cuda_offload& gpu_;
  void* state_;
  const Trace& trace_;
  const std::vector<Target>& tg_;
  bool resident_;
  int64_t s0_, s1_, pool_blocks_;
  /// Own-block slots: which block each holds and how many of its rows.
  std::vector<int64_t> tail_block_, tail_rows_;
  const std::vector<std::vector<float>>& v_;
};

}  // namespace sparda
