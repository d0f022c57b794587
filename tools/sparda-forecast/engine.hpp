// engine.hpp - the offload engine of decoding: every complete KV block in a
// host pool; a capacity-limited device pool that caches blocks per
// (sequence, layer, KV head) with LRU eviction; a copy thread that moves the
// misses host -> device at a capped bandwidth, standing in for the PCIe link.
//
// A fetch names the blocks one layer needs; it pins them, queues the misses
// as one transfer and returns at once; wait() blocks until they are all on
// the device. Sync decoding fetches and waits at the layer; lookahead
// fetches layer l+1's blocks while layer l computes.
//
// On a GPU (the CUDA module's offload family) the device pool is GPU memory,
// the host pool is page-locked, and each fetch's misses are one batch of
// cudaMemcpyAsync on a copy stream closed by an event; wait() synchronises
// on that event. There is no bandwidth cap: the link is PCIe itself.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

struct nk_cuda_offload;

namespace sparda {

/// One block of one KV head: K and V rows [tokens, d] somewhere in memory.
struct BlockRef {
  const float* k = nullptr;
  const float* v = nullptr;
  int64_t tokens = 0;
  int64_t first = 0;  ///< position of its first token
};

struct EngineStats {
  int64_t requested = 0, hits = 0, misses = 0, bytes = 0, transfers = 0;
  double wait_s = 0, copy_busy_s = 0;
};

class Engine {
 public:
  /// device_blocks: the device pool's capacity in blocks (each 2 x block x d
  /// floats); bandwidth: bytes per second of the copy thread (0: uncapped).
  Engine(int64_t head_dim, int64_t block, int64_t device_blocks, double bandwidth);
  /// On the GPU: a pool of device_blocks cached blocks plus extra_slots
  /// slots the caller fills itself (slot device_blocks + i: the growing
  /// block of each query's own position), copied from pinned host memory.
  Engine(const nk_cuda_offload& gpu, int64_t head_dim, int64_t block, int64_t device_blocks, int64_t extra_slots);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Registers where the host pool keeps (sequence, layer, KV head)'s keys
  /// and values: rows [tokens, d] each; block j is rows j*block.. .
  void set_host(int64_t seq, int64_t layer, int64_t group, const float* k, const float* v);

  struct Key {
    int32_t seq, layer, group, block;
    bool operator==(const Key&) const = default;
  };
  struct Ticket {
    std::vector<int64_t> slots;  ///< in the order of the keys fetched
    uint64_t transfer = 0;       ///< the copy that serves its misses (0: none)
  };
  /// Pins the blocks (loads the misses asynchronously); a key may repeat.
  Ticket fetch(const std::vector<Key>& keys);
  /// Blocks until the ticket's blocks are on the device (the time counts as waiting).
  void wait(const Ticket& ticket);
  /// Unpins the ticket's blocks (they stay cached until evicted).
  void release(Ticket& ticket);
  /// The device copy of a ticket's i-th block (CPU engine).
  BlockRef device(const Ticket& ticket, size_t i) const;
  /// The pool slot of a ticket's i-th block (either engine).
  int64_t slot(const Ticket& ticket, size_t i) const { return ticket.slots[i]; }
  /// GPU engine: page-locks host memory the host pool reads (nothing on the CPU).
  void pin(const void* host, size_t bytes);
  /// The GPU engine's module state (null on the CPU).
  void* gpu_state() const { return gpu_state_; }

  const EngineStats& stats() const { return stats_; }
  int64_t block_bytes() const { return 2 * block_ * head_dim_ * static_cast<int64_t>(sizeof(float)); }
  int64_t capacity() const { return static_cast<int64_t>(slots_.size()); }

 private:
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  struct Slot {
    Key key{-1, -1, -1, -1};
    int pins = 0;
    bool valid = false;
    std::list<int64_t>::iterator lru;
  };
  struct Copy {
    uint64_t id;
    std::vector<std::pair<int64_t, Key>> items;  ///< (slot, source)
  };
  void copy_loop();

  int64_t head_dim_, block_;
  double bandwidth_;
  const nk_cuda_offload* gpu_ = nullptr;
  void* gpu_state_ = nullptr;
  std::vector<float> memory_;  ///< device pool: slot i is [2][block][d]
  std::vector<Slot> slots_;
  std::list<int64_t> lru_;  ///< unpinned valid slots, least recent first
  std::vector<int64_t> free_;
  std::unordered_map<Key, int64_t, KeyHash> where_;
  std::unordered_map<uint64_t, std::pair<const float*, const float*>> host_;  ///< (seq, layer, group) -> K, V
  EngineStats stats_;

  std::mutex mutex_;
  std::condition_variable queued_, done_;
  std::deque<Copy> queue_;
  uint64_t next_transfer_ = 1, finished_ = 0;  ///< transfers complete in order: id <= finished_ is done
  bool stop_ = false;
  std::chrono::steady_clock::time_point link_free_;
  std::thread thread_;  ///< last: starts once everything above exists (CPU engine only)
};

/// Attention of one token's query heads [Hq, d] over, per KV head, its
/// blocks (in increasing position; the last may be partial), causal up to
/// position t: out [Hq, d]. Float32 with Eigen's kernels: a group's G heads
/// score its blocks' keys in one product, softmax per head, then P^T V.
void sparse_attend(const float* q, int64_t heads, int64_t kv_heads, int64_t d, int64_t t,
                   const std::vector<std::vector<BlockRef>>& blocks, float* out);

}  // namespace sparda
