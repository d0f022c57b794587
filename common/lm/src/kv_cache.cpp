// kv_cache.cpp - pages, block tables, reference counts and copy-on-write.
#include "nk/lm/kv_cache.hpp"

#include <algorithm>
#include <string>

#include "nk/error.hpp"

namespace nk::lm {

KvCache::KvCache(const Config& config, KvCacheConfig options)
    : layers_(config.n_layers),
      row_(config.n_kv_heads * config.head_dim),
      page_tokens_(options.page_tokens),
      max_seq_(config.max_seq) {
  config.validate("model config");
  if (options.page_tokens < 1 || options.page_tokens > 4096)
    throw usage_error("KV cache: page_tokens must be in 1..4096, got " + std::to_string(options.page_tokens));
  if (options.max_slots < 1 || options.max_slots > (1 << 20))
    throw usage_error("KV cache: max_slots must be in 1..2^20, got " + std::to_string(options.max_slots));
  pages_ = options.pages > 0 ? options.pages : options.max_slots * ((max_seq_ + page_tokens_ - 1) / page_tokens_);
  const double floats = static_cast<double>(pages_) * static_cast<double>(layers_) * 2 * static_cast<double>(page_tokens_ * row_);
  if (floats > static_cast<double>(int64_t{1} << 34))
    throw usage_error("KV cache: " + std::to_string(pages_) + " pages would take over 64 GiB; refused before allocating");
  storage_.assign(static_cast<size_t>(floats), 0.0f);
  refs_.assign(static_cast<size_t>(pages_), 0);
  free_.resize(static_cast<size_t>(pages_));
  // Free list popped from the back: lowest page numbers first.
  for (int64_t p = 0; p < pages_; ++p) free_[static_cast<size_t>(p)] = static_cast<int32_t>(pages_ - 1 - p);
  slots_.resize(static_cast<size_t>(options.max_slots));
}

KvCache::Slot& KvCache::slot_ref(int32_t slot) {
  if (slot < 0 || slot >= static_cast<int32_t>(slots_.size()) || !slots_[static_cast<size_t>(slot)].open)
    throw usage_error("KV cache: slot " + std::to_string(slot) + " is not open");
  return slots_[static_cast<size_t>(slot)];
}
const KvCache::Slot& KvCache::slot_ref(int32_t slot) const { return const_cast<KvCache*>(this)->slot_ref(slot); }

int32_t KvCache::open() {
  for (size_t s = 0; s < slots_.size(); ++s)
    if (!slots_[s].open) {
      slots_[s] = Slot{true, 0, {}};
      return static_cast<int32_t>(s);
    }
  throw usage_error("KV cache: all " + std::to_string(slots_.size()) + " slots are in use");
}

void KvCache::release(int32_t page) {
  if (--refs_[static_cast<size_t>(page)] == 0) free_.push_back(page);
}

void KvCache::close(int32_t slot) {
  Slot& s = slot_ref(slot);
  for (int32_t p : s.pages) release(p);
  s = Slot{};
}

int32_t KvCache::fork(int32_t parent) {
  const Slot copy = slot_ref(parent);
  const int32_t child = open();
  slots_[static_cast<size_t>(child)] = copy;
  for (int32_t p : copy.pages) ++refs_[static_cast<size_t>(p)];
  return child;
}

void KvCache::truncate(int32_t slot, int64_t length) {
  Slot& s = slot_ref(slot);
  if (length < 0 || length > s.length)
    throw usage_error("KV cache: cannot truncate a sequence of " + std::to_string(s.length) + " tokens to " + std::to_string(length));
  s.length = length;
  const size_t keep = static_cast<size_t>((length + page_tokens_ - 1) / page_tokens_);
  while (s.pages.size() > keep) {
    release(s.pages.back());
    s.pages.pop_back();
  }
}

bool KvCache::reserve(int32_t slot, int64_t extra) {
  Slot& s = slot_ref(slot);
  if (extra < 0) throw usage_error("KV cache: reserve of a negative count");
  if (s.length + extra > max_seq_) return false;
  const int64_t need_pages = (s.length + extra + page_tokens_ - 1) / page_tokens_;
  int64_t take = need_pages - static_cast<int64_t>(s.pages.size());
  // The partly filled last page is written next: copy it first if shared.
  const bool copy_last = extra > 0 && s.length % page_tokens_ != 0 && refs_[static_cast<size_t>(s.pages.back())] > 1;
  if (take + (copy_last ? 1 : 0) > free_pages()) return false;
  if (copy_last) {
    const int32_t old = s.pages.back(), fresh = free_.back();
    free_.pop_back();
    refs_[static_cast<size_t>(fresh)] = 1;
    const int64_t page_floats = layers_ * 2 * page_tokens_ * row_;
    std::copy_n(storage_.begin() + old * page_floats, page_floats, storage_.begin() + fresh * page_floats);
    release(old);
    s.pages.back() = fresh;
  }
  for (; take > 0; --take) {
    const int32_t p = free_.back();
    free_.pop_back();
    refs_[static_cast<size_t>(p)] = 1;
    s.pages.push_back(p);
  }
  return true;
}

int64_t KvCache::length(int32_t slot) const { return slot_ref(slot).length; }

float* KvCache::page_row(int32_t page, int64_t layer, int which, int64_t row) {
  return storage_.data() + (((static_cast<int64_t>(page) * layers_ + layer) * 2 + which) * page_tokens_ + row) * row_;
}
const float* KvCache::page_row(int32_t page, int64_t layer, int which, int64_t row) const {
  return storage_.data() + (((static_cast<int64_t>(page) * layers_ + layer) * 2 + which) * page_tokens_ + row) * row_;
}

void KvCache::write(int32_t slot, int64_t layer, const float* k, const float* v, int64_t count) {
  Slot& s = slot_ref(slot);
  if (s.length + count > static_cast<int64_t>(s.pages.size()) * page_tokens_)
    throw usage_error("KV cache: write of " + std::to_string(count) + " tokens without reserve()");
  for (int64_t i = 0; i < count; ++i) {
    const int64_t pos = s.length + i;
    const int32_t page = s.pages[static_cast<size_t>(pos / page_tokens_)];
    std::copy_n(k + i * row_, row_, page_row(page, layer, 0, pos % page_tokens_));
    std::copy_n(v + i * row_, row_, page_row(page, layer, 1, pos % page_tokens_));
  }
}

void KvCache::advance(int32_t slot, int64_t count) {
  Slot& s = slot_ref(slot);
  if (s.length + count > static_cast<int64_t>(s.pages.size()) * page_tokens_)
    throw usage_error("KV cache: advance past the reserved pages");
  s.length += count;
}

const float* KvCache::key(int32_t slot, int64_t layer, int64_t position) const {
  const Slot& s = slots_[static_cast<size_t>(slot)];
  return page_row(s.pages[static_cast<size_t>(position / page_tokens_)], layer, 0, position % page_tokens_);
}

const float* KvCache::value(int32_t slot, int64_t layer, int64_t position) const {
  const Slot& s = slots_[static_cast<size_t>(slot)];
  return page_row(s.pages[static_cast<size_t>(position / page_tokens_)], layer, 1, position % page_tokens_);
}

std::span<const int32_t> KvCache::block_table(int32_t slot) const { return slot_ref(slot).pages; }

}  // namespace nk::lm
