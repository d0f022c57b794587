// engine.cpp - the host/device KV pools and the capped copy thread (engine.hpp).
#include "sparda-forecast/engine.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "nk/error.hpp"
#include "nk/kernels/cuda_call.hpp"

namespace sparda {

namespace {

uint64_t host_key(int64_t seq, int64_t layer, int64_t group) {
  return (static_cast<uint64_t>(seq) << 40) ^ (static_cast<uint64_t>(layer) << 20) ^ static_cast<uint64_t>(group);
}

}  // namespace

size_t Engine::KeyHash::operator()(const Key& k) const {
  uint64_t h = static_cast<uint64_t>(k.seq) * 0x9E3779B97F4A7C15ull;
  h ^= static_cast<uint64_t>(k.layer) * 0xC2B2AE3D27D4EB4Full + (h << 6) + (h >> 2);
  h ^= static_cast<uint64_t>(k.group) * 0x165667B19E3779F9ull + (h << 6) + (h >> 2);
  h ^= static_cast<uint64_t>(k.block) * 0x27D4EB2F165667C5ull + (h << 6) + (h >> 2);
  return static_cast<size_t>(h);
}

Engine::Engine(int64_t head_dim, int64_t block, int64_t device_blocks, double bandwidth)
    : head_dim_(head_dim), block_(block), bandwidth_(bandwidth), link_free_(std::chrono::steady_clock::now()) {
  memory_.assign(static_cast<size_t>(device_blocks * 2 * block * head_dim), 0.0f);
  slots_.resize(static_cast<size_t>(device_blocks));
  for (int64_t i = device_blocks - 1; i >= 0; --i) free_.push_back(i);
  thread_ = std::thread([this] { copy_loop(); });
}

Engine::Engine(const nk_cuda_offload& gpu, int64_t head_dim, int64_t block, int64_t device_blocks,
               int64_t extra_slots)
    : head_dim_(head_dim), block_(block), bandwidth_(0), gpu_(&gpu), link_free_(std::chrono::steady_clock::now()) {
  nk::kernels::cuda_call("decode (offload pool on the GPU)", gpu.create, static_cast<long>(head_dim),
                         static_cast<long>(block), static_cast<long>(device_blocks + extra_slots), &gpu_state_);
  slots_.resize(static_cast<size_t>(device_blocks));
  for (int64_t i = device_blocks - 1; i >= 0; --i) free_.push_back(i);
}

Engine::~Engine() {
  if (gpu_) {
    char error[256] = {0};
    gpu_->destroy(gpu_state_, error, sizeof error);  // nothing to report to from a destructor
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  queued_.notify_all();
  thread_.join();
}

void Engine::pin(const void* host, size_t bytes) {
  if (gpu_) nk::kernels::cuda_call("decode (page-locking the host pool)", gpu_->pin, gpu_state_, host, bytes);
}

void Engine::set_host(int64_t seq, int64_t layer, int64_t group, const float* k, const float* v) {
  host_[host_key(seq, layer, group)] = {k, v};
}

Engine::Ticket Engine::fetch(const std::vector<Key>& keys) {
  Ticket ticket;
  Copy copy;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Key& key : keys) {
    ++stats_.requested;
    auto found = where_.find(key);
    int64_t slot;
    if (found != where_.end()) {
      slot = found->second;
      ++stats_.hits;
      Slot& s = slots_[static_cast<size_t>(slot)];
      if (s.pins++ == 0 && s.valid) lru_.erase(s.lru);
    } else {
      if (free_.empty()) {
        if (lru_.empty())
          throw nk::usage_error("--device-mem holds " + std::to_string(slots_.size()) +
                                " blocks, fewer than the blocks pinned at once (two layers' selections): give it more");
        slot = lru_.front();
        lru_.pop_front();
        where_.erase(slots_[static_cast<size_t>(slot)].key);
      } else {
        slot = free_.back();
        free_.pop_back();
      }
      Slot& s = slots_[static_cast<size_t>(slot)];
      s.key = key, s.pins = 1, s.valid = false;
      where_[key] = slot;
      copy.items.push_back({slot, key});
      ++stats_.misses;
      stats_.bytes += block_bytes();
    }
    ticket.slots.push_back(slot);
  }
  if (!copy.items.empty() && gpu_) {
    // One batch of asynchronous copies on the copy stream; a slot is valid
    // from now on, as anything that reads it waits for this transfer first.
    std::vector<long> slots, rows;
    std::vector<const float*> k_src, v_src;
    const int64_t n = block_ * head_dim_;
    for (const auto& [slot, key] : copy.items) {
      const auto& src = host_.at(host_key(key.seq, key.layer, key.group));
      slots.push_back(static_cast<long>(slot)), rows.push_back(static_cast<long>(block_));
      k_src.push_back(src.first + key.block * n), v_src.push_back(src.second + key.block * n);
      slots_[static_cast<size_t>(slot)].valid = true;
    }
    unsigned long long id = 0;
    nk::kernels::cuda_call("decode (copying blocks to the GPU)", gpu_->copy, gpu_state_,
                           static_cast<long>(slots.size()), slots.data(), k_src.data(), v_src.data(), rows.data(), &id);
    ticket.transfer = id;
    next_transfer_ = id + 1;
    ++stats_.transfers;
  } else if (!copy.items.empty()) {
    copy.id = ticket.transfer = next_transfer_++;
    ++stats_.transfers;
    queue_.push_back(std::move(copy));
    queued_.notify_one();
  } else {
    ticket.transfer = 0;
  }
  // Blocks hit while another transfer still carries them: wait for every earlier transfer too.
  if (ticket.transfer == 0 && next_transfer_ - 1 > finished_) ticket.transfer = next_transfer_ - 1;
  return ticket;
}

void Engine::wait(const Ticket& ticket) {
  if (ticket.transfer == 0) return;
  const auto t0 = std::chrono::steady_clock::now();
  if (gpu_) {
    if (ticket.transfer > finished_) {
      nk::kernels::cuda_call("decode (waiting for a copy to the GPU)", gpu_->wait, gpu_state_,
                             static_cast<unsigned long long>(ticket.transfer));
      finished_ = ticket.transfer;
    }
    stats_.wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return finished_ >= ticket.transfer; });
  stats_.wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void Engine::release(Ticket& ticket) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (int64_t slot : ticket.slots) {
    Slot& s = slots_[static_cast<size_t>(slot)];
    if (--s.pins == 0 && s.valid) s.lru = lru_.insert(lru_.end(), slot);  // in flight: the copy thread lists it
  }
  ticket.slots.clear();
}

BlockRef Engine::device(const Ticket& ticket, size_t i) const {
  if (gpu_) throw std::logic_error("Engine::device: the GPU engine's blocks are read by slot");
  const int64_t slot = ticket.slots[i];
  const float* base = memory_.data() + slot * 2 * block_ * head_dim_;
  return {base, base + block_ * head_dim_, block_, slots_[static_cast<size_t>(slot)].key.block * block_};
}

void Engine::copy_loop() {
  for (;;) {
    Copy copy;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      queued_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      copy = std::move(queue_.front());
      queue_.pop_front();
    }
    // One transfer over the link: it starts when the link is free and lasts
    // at least bytes / bandwidth (the memcpy itself may take longer).
    const auto start = std::max(std::chrono::steady_clock::now(), link_free_);
    const int64_t n = block_ * head_dim_;
    for (const auto& [slot, key] : copy.items) {
      std::pair<const float*, const float*> src;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        src = host_.at(host_key(key.seq, key.layer, key.group));
      }
      float* dst = memory_.data() + slot * 2 * n;
      std::memcpy(dst, src.first + key.block * n, static_cast<size_t>(n) * sizeof(float));
      std::memcpy(dst + n, src.second + key.block * n, static_cast<size_t>(n) * sizeof(float));
    }
    auto end = std::chrono::steady_clock::now();
    if (bandwidth_ > 0) {
      const double seconds = static_cast<double>(copy.items.size() * static_cast<size_t>(block_bytes())) / bandwidth_;
      const auto due = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                   std::chrono::duration<double>(seconds));
      if (due > end) {
        // Sleep to just short of the due time, then yield until it: a plain
        // sleep overshoots by tens of microseconds, as long as a small
        // transfer takes on a fast link.
        const auto margin = std::chrono::microseconds(300);
        if (due - end > margin) std::this_thread::sleep_until(due - margin);
        while (std::chrono::steady_clock::now() < due) std::this_thread::yield();
        end = std::chrono::steady_clock::now();
      }
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const auto& item : copy.items) slots_[static_cast<size_t>(item.first)].valid = true;
      // A slot unpinned while in flight joins the LRU list now that it holds data.
      for (const auto& item : copy.items) {
        Slot& s = slots_[static_cast<size_t>(item.first)];
        if (s.pins == 0) s.lru = lru_.insert(lru_.end(), item.first);
      }
      stats_.copy_busy_s += std::chrono::duration<double>(end - start).count();
      link_free_ = end;
      finished_ = copy.id;
    }
    done_.notify_all();
  }
}

void sparse_attend(const float* q, int64_t heads, int64_t kv_heads, int64_t d, int64_t t,
                   const std::vector<std::vector<BlockRef>>& blocks, float* out) {
  using RowsF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const int64_t G = heads / kv_heads;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  thread_local RowsF scores;  // [tokens, G]
  for (int64_t g = 0; g < kv_heads; ++g) {
    const auto& list = blocks[static_cast<size_t>(g)];
    const Eigen::Map<const RowsF> qg(q + g * G * d, G, d);
    int64_t total = 0;
    for (const BlockRef& b : list) total += std::clamp<int64_t>(t + 1 - b.first, 0, b.tokens);
    scores.resize(total, G);
    // Scores of every key in the group's blocks (the G heads at once), then softmax per head.
    int64_t at = 0;
    for (const BlockRef& b : list) {
      const int64_t n = std::clamp<int64_t>(t + 1 - b.first, 0, b.tokens);
      if (n == 0) continue;
      scores.middleRows(at, n).noalias() = Eigen::Map<const RowsF>(b.k, n, d) * qg.transpose() * scale;
      at += n;
    }
    Eigen::Map<RowsF> o(out + g * G * d, G, d);
    o.setZero();
    if (total == 0) continue;
    const Eigen::RowVectorXf most = scores.colwise().maxCoeff();
    scores = (scores.rowwise() - most).array().exp().matrix();
    const Eigen::RowVectorXf sum = scores.colwise().sum();
    at = 0;
    for (const BlockRef& b : list) {
      const int64_t n = std::clamp<int64_t>(t + 1 - b.first, 0, b.tokens);
      if (n == 0) continue;
      o.noalias() += scores.middleRows(at, n).transpose() * Eigen::Map<const RowsF>(b.v, n, d);
      at += n;
    }
    for (int64_t h = 0; h < G; ++h) o.row(h) /= sum(h);
  }
}

}  // namespace sparda
