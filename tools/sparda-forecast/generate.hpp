// generate.hpp - decoding a model through the offload engine: the engine is
// the attention of nk::lm's forward (an AttentionBackend), so projections and
// MLPs are the model's real compute and the copies overlap them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nk/lm/block_select.hpp"
#include "nk/lm/model.hpp"
#include "sparda-forecast/engine.hpp"
#include "sparda-forecast/forecast.hpp"

namespace sparda {

enum class Kind { sync, forecast, infinigen, resident };
Kind parse_mode(const std::string& mode);

/// Block-sparse attention over per-slot KV kept in a host pool, with the
/// device pool and copy thread of Engine; the mode picks how blocks are
/// chosen and when they are fetched (see decode.cpp). Prefill chunks attend
/// the same way (each row its own selection); blocks written by the current
/// forward are on the device already, only older ones are fetched.
class OffloadBackend : public nk::lm::AttentionBackend {
 public:
  OffloadBackend(const nk::lm::Config& config, Kind kind, bool verify, const nk::lm::BlockSelectorConfig& sel,
                 const Forecast* forecast, int64_t slots, int64_t capacity, int64_t device_blocks, double bandwidth);
  int64_t length(int32_t slot) const override { return length_[static_cast<size_t>(slot)]; }
  void attend(const nk::lm::AttentionCall& call, float* out) override;
  /// A prompt of 'tokens' positions in every slot without running the model
  /// (timing at sizes where a CPU prefill would take hours): keys around one
  /// topic per block (post-RoPE), Gaussian values, pooled keys.
  void synthesize(int64_t tokens, uint64_t seed);
  const EngineStats& stats() const { return engine_.stats(); }
  double select_seconds() const { return select_s_; }
  /// Of select_seconds: the Forecast's projection of the attention input
  /// (the paper computes it inside the layer's QKV GEMM), and the scoring of
  /// the pooled keys plus the top-k (the selector's Hq heads, or one Forecast
  /// head per group).
  double project_seconds() const { return project_s_; }
  double score_seconds() const { return score_s_; }
  double attend_seconds() const { return attend_s_; }

 private:
  float* keys(int64_t slot, int64_t layer, int64_t g) {
    return k_.data() + ((slot * layers_ + layer) * kv_ + g) * capacity_ * d_;
  }
  float* values(int64_t slot, int64_t layer, int64_t g) {
    return v_.data() + ((slot * layers_ + layer) * kv_ + g) * capacity_ * d_;
  }
  float* pooled(int64_t slot, int64_t layer, int64_t g) {
    return pooled_.data() + ((slot * layers_ + layer) * kv_ + g) * (capacity_ / sel_.block) * d_;
  }
  /// The selection of layer m for each row: [Hkv * K] per row, by the
  /// selector (q rows) or the Forecast (x rows).
  std::vector<std::vector<int32_t>> choose(const nk::lm::AttentionCall& a, int64_t m, bool by_forecast);

  nk::lm::Config config_;
  Kind kind_;
  bool verify_;
  nk::lm::BlockSelectorConfig sel_;
  const Forecast* forecast_;
  int64_t layers_, kv_, d_, heads_, capacity_;
  std::vector<int64_t> length_, written_;  ///< tokens of each slot; written_: before the current forward
  std::vector<float> k_, v_, pooled_;
  Engine engine_;
  std::vector<Engine::Ticket> ahead_;                      ///< per layer: its blocks, fetched by the layer before
  std::vector<std::vector<std::vector<int32_t>>> chosen_;  ///< per layer: the selection behind ahead_
  std::vector<Engine::Key> ahead_keys_;
  double select_s_ = 0, attend_s_ = 0, project_s_ = 0, score_s_ = 0;
};

}  // namespace sparda
