// generate.cpp - the offload engine as nk::lm's attention backend (generate.hpp).
#include "sparda-forecast/generate.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "nk/error.hpp"
#include "nk/lm/layers.hpp"
#include "nk/rng.hpp"
#include "nk/timer.hpp"

namespace sparda {

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

Kind parse_mode(const std::string& m) {
  if (m == "sync") return Kind::sync;
  if (m == "forecast") return Kind::forecast;
  if (m == "infinigen") return Kind::infinigen;
  return Kind::resident;
}

OffloadBackend::OffloadBackend(const nk::lm::Config& c, Kind kind, bool verify, const nk::lm::BlockSelectorConfig& sel,
                               const Forecast* forecast, int64_t slots, int64_t capacity, int64_t device_blocks,
                               double bandwidth)
    : config_(c),
      kind_(kind),
      verify_(verify),
      sel_(sel),
      forecast_(forecast),
      layers_(c.n_layers),
      kv_(c.n_kv_heads),
      d_(c.head_dim),
      heads_(c.n_heads),
      capacity_((capacity + sel.block - 1) / sel.block * sel.block),
      length_(static_cast<size_t>(slots), 0),
      written_(static_cast<size_t>(slots), 0),
      engine_(c.head_dim, sel.block, kind == Kind::resident ? 0 : device_blocks, bandwidth),
      ahead_(static_cast<size_t>(c.n_layers)),
      chosen_(static_cast<size_t>(c.n_layers)) {
  const size_t n = static_cast<size_t>(slots * layers_ * kv_ * capacity_ * d_);
  k_.assign(n, 0.0f);
  v_.assign(n, 0.0f);
  pooled_.assign(n / static_cast<size_t>(sel.block), 0.0f);
  for (int64_t s = 0; s < slots; ++s)
    for (int64_t l = 0; l < layers_; ++l)
      for (int64_t g = 0; g < kv_; ++g) engine_.set_host(s, l, g, keys(s, l, g), values(s, l, g));
}

void OffloadBackend::synthesize(int64_t tokens, uint64_t seed) {
  if (tokens > capacity_)
    throw nk::usage_error("a prompt of " + std::to_string(tokens) + " tokens passes the pool's capacity");
  const int64_t S = static_cast<int64_t>(length_.size()), B = sel_.block, nb = (tokens + B - 1) / B;
  const nk::Rng root(seed);
#pragma omp parallel for collapse(3) schedule(dynamic)
  for (int64_t s = 0; s < S; ++s)
    for (int64_t l = 0; l < layers_; ++l)
      for (int64_t g = 0; g < kv_; ++g) {
        nk::Rng rng = root.split(static_cast<uint64_t>((s * layers_ + l) * kv_ + g));
        float* k = keys(s, l, g);
        float* v = values(s, l, g);
        std::vector<float> topic(static_cast<size_t>(d_));
        for (int64_t j = 0; j < nb; ++j) {
          for (float& x : topic) x = static_cast<float>(rng.normal());
          for (int64_t t = j * B; t < std::min(tokens, (j + 1) * B); ++t)
            for (int64_t i = 0; i < d_; ++i) {
              k[t * d_ + i] = topic[static_cast<size_t>(i)] + 0.5f * static_cast<float>(rng.normal());
              v[t * d_ + i] = static_cast<float>(rng.normal());
            }
        }
        nk::lm::pool_keys(k, 1, tokens, d_, B, pooled(s, l, g));
      }
  std::fill(length_.begin(), length_.end(), tokens);
  std::fill(written_.begin(), written_.end(), tokens);
}

std::vector<std::vector<int32_t>> OffloadBackend::choose(const nk::lm::AttentionCall& a, int64_t m, bool by_forecast) {
  const int64_t n = a.batch->rows(), K = sel_.width(), B = sel_.block;
  std::vector<std::vector<int32_t>> out(static_cast<size_t>(n), std::vector<int32_t>(static_cast<size_t>(kv_ * K)));
  std::vector<int32_t> seg(static_cast<size_t>(n));
  for (int64_t s = 0; s < a.batch->segments(); ++s)
    for (int64_t r = a.batch->offsets[static_cast<size_t>(s)]; r < a.batch->offsets[static_cast<size_t>(s + 1)]; ++r)
      seg[static_cast<size_t>(r)] = a.batch->slots[static_cast<size_t>(s)];
  Matrix f;
  auto t0 = Clock::now();
  if (by_forecast) {
    f = forecast_queries(forecast_->wf[static_cast<size_t>(m)], a.x, a.positions, n, kv_, d_, config_.rope_theta);
    project_s_ += nk::seconds_since(t0);
    t0 = Clock::now();
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(d_));
#pragma omp parallel
  {
    std::vector<double> sc(static_cast<size_t>(capacity_ / B + 1)), scratch(sc.size()), fr(static_cast<size_t>(d_));
#pragma omp for collapse(2) schedule(dynamic, 4)
    for (int64_t r = 0; r < n; ++r)
      for (int64_t g = 0; g < kv_; ++g) {
        const int64_t slot = seg[static_cast<size_t>(r)], t = a.positions[r], nc = t / B;
        const float* pk = pooled(slot, m, g);
        if (by_forecast) {
          // The group's query contiguous (f is column-major), then one product per block.
          for (int64_t i = 0; i < d_; ++i) fr[static_cast<size_t>(i)] = f(r, g * d_ + i);
          for (int64_t j = 0; j < nc; ++j) sc[static_cast<size_t>(j)] = nk::lm::dot(fr.data(), pk + j * d_, d_) * scale;
        } else {
          // pooled of this slot and layer is [Hkv][nb_cap][d]: group g's rows start at pooled(slot, m, 0) + g * nb_cap
          // * d.
          nk::lm::group_scores_at(sel_, a.q + r * heads_ * d_, d_, heads_, t, pooled(slot, m, 0), kv_, capacity_ / B,
                                  d_, g, sc.data(), scratch.data());
        }
        nk::lm::select_blocks(sel_, t, sc.data(), out[static_cast<size_t>(r)].data() + g * K);
      }
  }
  score_s_ += nk::seconds_since(t0);
  return out;
}

void OffloadBackend::attend(const nk::lm::AttentionCall& a, float* out) {
  const int64_t l = a.layer, n = a.batch->rows(), K = sel_.width(), B = sel_.block, kvd = kv_ * d_;
  const bool lookahead = kind_ == Kind::forecast;
  std::vector<int32_t> seg(static_cast<size_t>(n));
  for (int64_t s = 0; s < a.batch->segments(); ++s)
    for (int64_t r = a.batch->offsets[static_cast<size_t>(s)]; r < a.batch->offsets[static_cast<size_t>(s + 1)]; ++r)
      seg[static_cast<size_t>(r)] = a.batch->slots[static_cast<size_t>(s)];
  // The new rows' keys and values join their slots (the tail on the device; the host pool mirrors it).
  for (int64_t r = 0; r < n; ++r) {
    const int64_t slot = seg[static_cast<size_t>(r)], t = a.positions[r];
    if (t >= capacity_)
      throw nk::usage_error("decode: position " + std::to_string(t) + " passes the KV pool's capacity");
    for (int64_t g = 0; g < kv_; ++g) {
      std::copy_n(a.k + r * kvd + g * d_, d_, keys(slot, l, g) + t * d_);
      std::copy_n(a.v + r * kvd + g * d_, d_, values(slot, l, g) + t * d_);
    }
  }
  auto t0 = Clock::now();
  std::vector<std::vector<int32_t>> chosen;
  Engine::Ticket ticket;
  bool fetched = false;
  if (!lookahead || verify_) {
    chosen = choose(a, l, false);
  } else if (l == 0) {
    chosen = choose(a, 0, true);
  } else {
    chosen = std::move(chosen_[static_cast<size_t>(l)]), ticket = std::move(ahead_[static_cast<size_t>(l)]),
    fetched = true;
  }
  if (lookahead && verify_ && l > 0)
    engine_.release(ahead_[static_cast<size_t>(l)]);  // cached: the selector's hit them
  // The engine's keys: blocks written before this forward (the rest are on the device already).
  const auto keys_of = [&](const std::vector<std::vector<int32_t>>& sel, int64_t layer) {
    std::vector<Engine::Key> keys;
    for (int64_t r = 0; r < n; ++r) {
      const int64_t slot = seg[static_cast<size_t>(r)], old = written_[static_cast<size_t>(slot)] / B;
      for (int64_t g = 0; g < kv_; ++g)
        for (int64_t e = 0; e < K; ++e) {
          const int32_t j = sel[static_cast<size_t>(r)][static_cast<size_t>(g * K + e)];
          if (j >= 0 && j < old)
            keys.push_back({static_cast<int32_t>(slot), static_cast<int32_t>(layer), static_cast<int32_t>(g), j});
        }
    }
    return keys;
  };
  // This layer's blocks go on the link first (unless the previous layer sent
  // them ahead), then the next layer's, which cross while this layer computes.
  const std::vector<Engine::Key> wanted = keys_of(chosen, l);
  if (kind_ != Kind::resident && !fetched) ticket = engine_.fetch(wanted);
  if (lookahead && l + 1 < layers_) {
    chosen_[static_cast<size_t>(l + 1)] = choose(a, l + 1, true);
    ahead_[static_cast<size_t>(l + 1)] = engine_.fetch(keys_of(chosen_[static_cast<size_t>(l + 1)], l + 1));
  }
  select_s_ += nk::seconds_since(t0);
  if (kind_ != Kind::resident) engine_.wait(ticket);
  t0 = Clock::now();
  // Where each fetched block landed: the ticket lists them in keys' order.
  std::vector<int64_t> first(static_cast<size_t>(n + 1), 0);
  for (int64_t r = 0, at = 0; r < n; ++r) {
    first[static_cast<size_t>(r)] = at;
    const int64_t old = written_[static_cast<size_t>(seg[static_cast<size_t>(r)])] / B;
    for (int64_t e = 0; e < kv_ * K; ++e) {
      const int32_t j = chosen[static_cast<size_t>(r)][static_cast<size_t>(e)];
      if (j >= 0 && j < old) ++at;
    }
  }
#pragma omp parallel for schedule(dynamic)
  for (int64_t r = 0; r < n; ++r) {
    const int64_t slot = seg[static_cast<size_t>(r)], t = a.positions[r], old = written_[static_cast<size_t>(slot)] / B;
    std::vector<std::vector<BlockRef>> refs(static_cast<size_t>(kv_));
    int64_t at = first[static_cast<size_t>(r)];
    for (int64_t g = 0; g < kv_; ++g) {
      std::vector<std::pair<int32_t, BlockRef>> list;
      for (int64_t e = 0; e < K; ++e) {
        const int32_t j = chosen[static_cast<size_t>(r)][static_cast<size_t>(g * K + e)];
        if (j < 0) continue;
        if (j < old && kind_ != Kind::resident)
          list.push_back({j, engine_.device(ticket, static_cast<size_t>(at++))});
        else {
          if (j < old) ++at;
          list.push_back(
              {j, {keys(slot, l, g) + j * B * d_, values(slot, l, g) + j * B * d_, B, static_cast<int64_t>(j) * B}});
        }
      }
      std::sort(list.begin(), list.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
      for (const auto& [j, ref] : list) refs[static_cast<size_t>(g)].push_back(ref);
    }
    sparse_attend(a.q + r * heads_ * d_, heads_, kv_, d_, t, refs, out + r * heads_ * d_);
  }
  attend_s_ += nk::seconds_since(t0);
  if (kind_ != Kind::resident) engine_.release(ticket);
  // Blocks the new rows completed get their pooled keys.
  for (int64_t r = 0; r < n; ++r) {
    const int64_t slot = seg[static_cast<size_t>(r)], t = a.positions[r];
    if ((t + 1) % B == 0)
      for (int64_t g = 0; g < kv_; ++g)
        nk::lm::pool_keys(keys(slot, l, g) + (t + 1 - B) * d_, 1, B, d_, B, pooled(slot, l, g) + (t / B) * d_);
  }
  if (l + 1 == layers_)
    for (int64_t s = 0; s < a.batch->segments(); ++s) {
      const int32_t slot = a.batch->slots[static_cast<size_t>(s)];
      length_[static_cast<size_t>(slot)] +=
          a.batch->offsets[static_cast<size_t>(s + 1)] - a.batch->offsets[static_cast<size_t>(s)];
      written_[static_cast<size_t>(slot)] = length_[static_cast<size_t>(slot)];
    }
}

}  // namespace sparda
