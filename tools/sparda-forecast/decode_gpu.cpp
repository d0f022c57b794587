// decode_gpu.cpp - decode's trace replay on a GPU (decode_gpu.hpp).
#include "sparda-forecast/decode_gpu.hpp"

#include <algorithm>
#include <cmath>

#include "nk/kernels/cuda_call.hpp"

namespace sparda {

namespace {

/// Resident buffer ids: layer m's pooled keys, and (resident mode) layer l's K then V rows.
long pooled_id(int64_t m) { return static_cast<long>(1 + m); }
long kv_id(int64_t layers, int64_t l) { return static_cast<long>(1 + layers + l); }

}  // namespace

GpuReplay::GpuReplay(const nk_cuda_offload& gpu, Engine& engine, const Trace& trace,
                     const std::vector<Target>& targets, const std::vector<std::vector<float>>& values, bool resident,
                     int64_t s0, int64_t s1, int64_t pool_blocks)
    : gpu_(gpu),
      state_(engine.gpu_state()),
      trace_(trace),
      tg_(targets),
      resident_(resident),
      s0_(s0),
      s1_(s1),
      pool_blocks_(pool_blocks),
      v_(values) {
  const int64_t L = trace.layers;
  tail_block_.assign(static_cast<size_t>((s1 - s0) * L * trace.kv_heads), -1);
  tail_rows_.assign(tail_block_.size(), 0);
  for (int64_t l = 0; l < L; ++l) {
    const Target& x = targets[static_cast<size_t>(l)];
    nk::kernels::cuda_call("decode (pooled keys to the GPU)", gpu.resident, state_, pooled_id(l),
                           x.pooled.data(), static_cast<long>(x.pooled.size()));
    const auto& v = values[static_cast<size_t>(l)];
    if (resident) {
      std::vector<float> kv(x.k);
      kv.insert(kv.end(), v.begin(), v.end());
      nk::kernels::cuda_call("decode (the resident cache to the GPU)", gpu.resident, state_, kv_id(L, l),
                             kv.data(), static_cast<long>(kv.size()));
    } else {
      engine.pin(x.k.data(), x.k.size() * sizeof(float));
      engine.pin(v.data(), v.size() * sizeof(float));
    }
  }
}

std::vector<std::vector<int32_t>> GpuReplay::select(int64_t m, int64_t t, const Scorer& by,
                                                    const nk::lm::BlockSelectorConfig& sel) const {
  const int64_t Hq = trace_.heads, Hkv = trace_.kv_heads, d = trace_.head_dim, D = trace_.d_model, K = sel.width();
  const Target& x = tg_[static_cast<size_t>(m)];
  const bool forecast = by.forecast != nullptr;
  const int64_t heads = forecast ? Hkv : Hq;
  std::vector<std::vector<int32_t>> out;
  std::vector<float> q;
  std::vector<long> pooled, nb, nc;
  std::vector<int64_t> active;
  long max_nc = 0;
  for (int64_t s = s0_; s < s1_; ++s) {
    out.emplace_back(static_cast<size_t>(Hkv * K), -1);
    const int64_t T = trace_.length(s), off = trace_.offsets[s];
    if (t >= T) continue;
    active.push_back(s - s0_);
    if (forecast) {
      const int32_t pos = static_cast<int32_t>(t);
      const Matrix f = forecast_queries(*by.forecast, x.h.data() + (off + t) * D, &pos, 1, Hkv, d, trace_.rope_theta);
      for (int64_t i = 0; i < Hkv * d; ++i) q.push_back(static_cast<float>(f(0, i)));
    } else {
      for (int64_t h = 0; h < Hq; ++h) {
        const float* row = x.q.data() + (Hq * off + h * T + t) * d;
        q.insert(q.end(), row, row + d);
      }
    }
    pooled.push_back(pooled_id(m));
    pooled.push_back(static_cast<long>(Hkv * x.first_block[s] * d));
    nb.push_back(static_cast<long>(x.blocks(s)));
    nc.push_back(static_cast<long>(std::min(sel.candidates(t), x.blocks(s))));
    max_nc = std::max(max_nc, nc.back());
  }
  const long rows = static_cast<long>(active.size());
  std::vector<float> scores(static_cast<size_t>(std::max<long>(1, rows * Hkv * max_nc)));
  if (rows > 0 && max_nc > 0) {
    nk_cuda_timing timing{};
    nk::kernels::cuda_call("decode (block scores on the GPU)", gpu_.score, state_, q.data(), rows,
                           static_cast<long>(heads), static_cast<long>(Hkv), pooled.data(), nb.data(), nc.data(),
                           max_nc, forecast ? 0 : 1, static_cast<float>(1.0 / std::sqrt(static_cast<double>(d))),
                           scores.data(), &timing);
  }
  std::vector<double> sc(static_cast<size_t>(std::max<long>(1, max_nc)));
  for (long r = 0; r < rows; ++r)
    for (int64_t g = 0; g < Hkv; ++g) {
      const float* row = scores.data() + (r * Hkv + g) * max_nc;
      std::copy(row, row + nc[static_cast<size_t>(r)], sc.begin());
      nk::lm::select_blocks(sel, t, sc.data(), out[static_cast<size_t>(active[static_cast<size_t>(r)])].data() + g * K);
    }
  return out;
}

void GpuReplay::attend(int64_t l, int64_t t, const std::vector<std::vector<std::pair<int32_t, int64_t>>>& blocks,
                       const Engine& engine, const Engine::Ticket& ticket, std::vector<float>& out) {
  const int64_t L = trace_.layers, Hq = trace_.heads, Hkv = trace_.kv_heads, d = trace_.head_dim,
                B = tg_[static_cast<size_t>(l)].block;
  const Target& x = tg_[static_cast<size_t>(l)];
  const std::vector<float>& v = v_[static_cast<size_t>(l)];
  const long k_floats = static_cast<long>(x.k.size());
  std::vector<float> q, kv;
  std::vector<long> offsets{0}, refs, app_slots, app_rows;
  std::vector<int64_t> active;
  for (int64_t i = 0; i < s1_ - s0_; ++i) {
    const int64_t s = s0_ + i, T = trace_.length(s), off = trace_.offsets[s];
    if (t >= T) continue;
    active.push_back(i);
    for (int64_t h = 0; h < Hq; ++h) {
      const float* row = x.q.data() + (Hq * off + h * T + t) * d;
      q.insert(q.end(), row, row + d);
    }
    for (int64_t g = 0; g < Hkv; ++g) {
      const int64_t head = (Hkv * off + g * T) * d;  // this KV head's rows in the sequence-major arrays
      for (const auto& [j, key] : blocks[static_cast<size_t>(i * Hkv + g)]) {
        const int64_t n = std::clamp<int64_t>(t + 1 - j * B, 0, B);
        if (resident_) {
          const long at = static_cast<long>(head + j * B * d);
          refs.insert(refs.end(), {kv_id(L, l), at, k_floats + at, static_cast<long>(n)});
          continue;
        }
        int64_t slot;
        if (key < 0) {
          // The query's own block: its slot gains the rows it lacks.
          const size_t idx = static_cast<size_t>((i * L + l) * Hkv + g);
          slot = pool_blocks_ + static_cast<int64_t>(idx);
          if (tail_block_[idx] != j) tail_block_[idx] = j, tail_rows_[idx] = 0;
          for (int64_t r = tail_rows_[idx]; r < n; ++r) {
            app_slots.push_back(static_cast<long>(slot));
            app_rows.push_back(static_cast<long>(r));
            const float* kr = x.k.data() + head + (j * B + r) * d;
            const float* vr = v.data() + head + (j * B + r) * d;
            kv.insert(kv.end(), kr, kr + d);
            kv.insert(kv.end(), vr, vr + d);
          }
          tail_rows_[idx] = std::max(tail_rows_[idx], n);
        } else {
          slot = engine.slot(ticket, static_cast<size_t>(key));
        }
        const long base = static_cast<long>(slot * 2 * B * d);
        refs.insert(refs.end(), {0L, base, base + static_cast<long>(B * d), static_cast<long>(n)});
      }
      offsets.push_back(static_cast<long>(refs.size() / 4));
    }
  }
  if (active.empty()) return;
  if (!app_slots.empty())
    nk::kernels::cuda_call("decode (own blocks' new rows to the GPU)", gpu_.append, state_,
                           static_cast<long>(app_slots.size()), app_slots.data(), app_rows.data(), kv.data());
  std::vector<float> o(q.size());
  nk_cuda_timing timing{};
  nk::kernels::cuda_call("decode (sparse attention on the GPU)", gpu_.attend, state_, q.data(),
                         static_cast<long>(active.size()), static_cast<long>(Hq), static_cast<long>(Hkv),
                         offsets.data(), refs.data(), static_cast<float>(1.0 / std::sqrt(static_cast<double>(d))),
                         o.data(), &timing);
  for (size_t r = 0; r < active.size(); ++r)
    std::copy_n(o.begin() + static_cast<int64_t>(r) * Hq * d, Hq * d, out.begin() + active[r] * Hq * d);
}

}  // namespace sparda
