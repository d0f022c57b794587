// kv_cache.hpp - the keys and values of every layer for sequences being
// decoded, in fixed-size pages (vLLM's paged layout): a sequence (slot) owns a
// block table of pages; pages are reference-counted, so a fork shares its
// parent's full pages and copies a page only when one side writes into it.
// All storage is allocated at construction; reserve() says when it is full
// (a scheduler then preempts).
//
// Page p holds, for each layer, page_tokens rows of K then page_tokens rows of
// V, each row n_kv_heads * head_dim floats (post-RoPE keys).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "nk/lm/config.hpp"

namespace nk::lm {

struct KvCacheConfig {
  int64_t page_tokens = 16;
  int64_t pages = 0;        ///< 0: enough for max_slots sequences of max_seq tokens
  int64_t max_slots = 64;
};

class KvCache {
 public:
  KvCache(const Config& config, KvCacheConfig options);
  /// A new, empty sequence; usage error when every slot is taken.
  int32_t open();
  /// Frees the slot and its pages (those it shares stay with the others).
  void close(int32_t slot);
  /// A new sequence with the parent's tokens: shares its pages.
  int32_t fork(int32_t parent);
  /// Keeps the first 'length' tokens (speculative rollback).
  void truncate(int32_t slot, int64_t length);
  /// Room for 'extra' more tokens (pages taken now); false, taking nothing,
  /// when the free pages do not suffice or the sequence would pass max_seq.
  bool reserve(int32_t slot, int64_t extra);
  int64_t length(int32_t slot) const;
  int64_t free_pages() const { return static_cast<int64_t>(free_.size()); }
  int64_t pages() const { return pages_; }
  int64_t page_tokens() const { return page_tokens_; }
  int64_t bytes() const { return static_cast<int64_t>(storage_.size()) * 4; }

  /// The model's write of new rows: K and V of 'count' tokens at positions
  /// length(slot).. for one layer ([count, kv_heads*hd] each). reserve() first.
  void write(int32_t slot, int64_t layer, const float* k, const float* v, int64_t count);
  /// Marks 'count' appended tokens as part of the sequence (after every layer wrote them).
  void advance(int32_t slot, int64_t count);
  /// Row 'position' of the slot's keys (values) in 'layer': kv_heads*hd floats.
  const float* key(int32_t slot, int64_t layer, int64_t position) const;
  const float* value(int32_t slot, int64_t layer, int64_t position) const;
  std::span<const int32_t> block_table(int32_t slot) const;

 private:
  struct Slot {
    bool open = false;
    int64_t length = 0;
    std::vector<int32_t> pages;
  };
  float* page_row(int32_t page, int64_t layer, int which, int64_t row);
  const float* page_row(int32_t page, int64_t layer, int which, int64_t row) const;
  void release(int32_t page);
  Slot& slot_ref(int32_t slot);
  const Slot& slot_ref(int32_t slot) const;

  int64_t layers_, row_, page_tokens_, pages_, max_seq_;
  std::vector<float> storage_;
  std::vector<int32_t> refs_, free_;
  std::vector<Slot> slots_;
};

}  // namespace nk::lm
