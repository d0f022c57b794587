// mla.cpp - the reference absorbed-decode backend for MLA models: float32
// rows [c, k_R] per slot and layer, attention in double over them.
#include <algorithm>
#include <cmath>
#include <limits>

#include "nk/error.hpp"
#include "nk/lm/model.hpp"

namespace nk::lm {

DenseMlaCache::DenseMlaCache(const Config& config, int64_t slots)
    : layers_(config.n_layers), width_(config.kv_rank + config.rope_dim) {
  if (!config.mla()) throw usage_error("DenseMlaCache: the model is not an mla model");
  if (slots < 1 || slots > 4096) throw usage_error("DenseMlaCache: slots must be in 1..4096");
  rows_.assign(static_cast<size_t>(slots), std::vector<std::vector<float>>(static_cast<size_t>(layers_)));
}

int64_t DenseMlaCache::length(int32_t slot) const {
  if (slot < 0 || slot >= static_cast<int32_t>(rows_.size()))
    throw usage_error("DenseMlaCache: no slot " + std::to_string(slot));
  return static_cast<int64_t>(rows_[static_cast<size_t>(slot)].back().size()) / width_;
}

void DenseMlaCache::attend(const MlaCall& call, float* latent) {
  const TokenBatch& batch = *call.batch;
  const int64_t S = batch.segments(), H = call.heads, dc = call.kv_rank, R = call.rope_dim;
  std::vector<int64_t> first(static_cast<size_t>(S));
  for (int64_t s = 0; s < S; ++s) {
    const int32_t slot = batch.slots[static_cast<size_t>(s)];
    if (slot < 0 || slot >= static_cast<int32_t>(rows_.size()))
      throw usage_error("DenseMlaCache: no slot " + std::to_string(slot));
    std::vector<float>& rows = rows_[static_cast<size_t>(slot)][static_cast<size_t>(call.layer)];
    first[static_cast<size_t>(s)] = static_cast<int64_t>(rows.size()) / width_;
    for (int64_t r = batch.offsets[static_cast<size_t>(s)]; r < batch.offsets[static_cast<size_t>(s + 1)]; ++r) {
      rows.insert(rows.end(), call.ckv + r * dc, call.ckv + (r + 1) * dc);
      rows.insert(rows.end(), call.kpe + r * R, call.kpe + (r + 1) * R);
    }
  }
  const int64_t N = batch.rows();
#pragma omp parallel for schedule(static)
  for (int64_t task = 0; task < N * H; ++task) {
    const int64_t r = task / H;
    int64_t s = 0;
    while (batch.offsets[static_cast<size_t>(s + 1)] <= r) ++s;
    const int64_t begin = batch.offsets[static_cast<size_t>(s)], n = batch.offsets[static_cast<size_t>(s + 1)] - begin;
    const std::vector<float>& rows =
        rows_[static_cast<size_t>(batch.slots[static_cast<size_t>(s)])][static_cast<size_t>(call.layer)];
    const int64_t seen = first[static_cast<size_t>(s)] + (call.causal ? r - begin + 1 : n);
    const float* q = call.q + task * (dc + R);
    std::vector<double> p(static_cast<size_t>(seen));
    double best = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < seen; ++j) {
      const float* row = rows.data() + j * width_;
      double dot = 0;
      for (int64_t e = 0; e < dc + R; ++e) dot += static_cast<double>(q[e]) * row[e];
      p[static_cast<size_t>(j)] = dot * call.scale;
      best = std::max(best, p[static_cast<size_t>(j)]);
    }
    double sum = 0;
    for (double& v : p) sum += (v = std::exp(v - best));
    std::vector<double> acc(static_cast<size_t>(dc), 0.0);
    for (int64_t j = 0; j < seen; ++j) {
      const float* row = rows.data() + j * width_;
      const double w = p[static_cast<size_t>(j)] / sum;
      for (int64_t e = 0; e < dc; ++e) acc[static_cast<size_t>(e)] += w * row[e];
    }
    for (int64_t e = 0; e < dc; ++e) latent[task * dc + e] = static_cast<float>(acc[static_cast<size_t>(e)]);
  }
}

}  // namespace nk::lm
