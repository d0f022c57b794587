// capture.hpp - what the forward hooks see, kept and written in the schemas
// other tools read: nk-lm.capture/1 (residual stream, attention input,
// post-RoPE q/k/v per layer), dllm-sparse.trajectory/1 (q/k/v of every layer
// at every denoising step) and louver-index.kv/1 (one layer's keys, values
// and queries).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "nk/lm/model.hpp"
#include "nk/lm/params.hpp"

namespace nk::h5 {
class Writer;
}

namespace nk::lm {

/// Keeps, for the first segment of each forward and for the layers asked,
/// the residual entering the layer and the attention input ([T, D]) and q,
/// k, v head-major ([heads, T, hd]), one record per (step, layer).
class CaptureObserver : public Observer {
 public:
  /// layers: which (0..n_layers; n_layers is the final residual); empty: all.
  /// residual_only: keep the residual stream alone (activation studies need
  /// no attention input or q/k/v, and they take 2.7x the memory).
  CaptureObserver(const Config& config, std::vector<int64_t> layers, bool residual_only = false);
  bool wants(int64_t layer) const override;
  void residual(const Site& site, const float* x) override;
  void attention_input(const Site& site, const float* x) override;
  void qkv(const Site& site, const float* q, const float* k, const float* v) override;

  struct Record {
    int64_t step = 0, layer = 0, rows = 0;
    std::vector<float> resid, attn_in, q, k, v;
  };
  const std::vector<Record>& records() const { return records_; }
  const Config& config() const { return config_; }

 private:
  Record& record(const Site& site);
  Config config_;
  std::vector<char> wanted_;
  bool residual_only_ = false;
  std::vector<Record> records_;
};

/// nk-lm.capture/1: /capture/tokens int32 [T]; /capture/layer_LL/{resid,
/// attn_in} [T, D], q [heads, T, hd], k and v [kv_heads, T, hd] (the last
/// step's records); root attributes layers, heads, kv_heads, head_dim,
/// d_model, rope_theta, mode.
void write_capture(nk::h5::Writer& out, const CaptureObserver& capture, std::span<const int32_t> tokens);
/// nk-lm.capture/1 of many rows, one forward each with step = row index
/// (rows[r] the tokens of step r): /capture/tokens int32 [T] and
/// /capture/offsets int64 [R+1] (row r is tokens offsets[r]..offsets[r+1]),
/// and per layer the rows' records concatenated along T in row order:
/// resid, attn_in [T, D], q [heads, T, hd], k, v [kv_heads, T, hd]; root
/// attributes as write_capture's, and rows = R.
void write_capture_rows(nk::h5::Writer& out, const CaptureObserver& capture,
                        const std::vector<std::vector<int32_t>>& rows);
/// Beside a capture: /capture/layer_LL/wq [D, Hq*hd] and wk [D, Hkv*hd] (the
/// query and key projections as x W, before RoPE) of every layer whose q/k/v
/// were captured (InfiniGen-style speculation reads them). MLA models have
/// no such projections: nothing is written.
void write_query_key_weights(nk::h5::Writer& out, const ParameterStore& weights, const CaptureObserver& capture);
/// dllm-sparse.trajectory/1: /layers/LL/steps/NNN/{q [H,L,d], k, v [Hkv,L,d]}.
void write_trajectory(nk::h5::Writer& out, const CaptureObserver& capture);
/// louver-index.kv/1 for one layer of the last step: /keys and /values
/// [kv_heads, T, hd], /queries [heads, M, hd] of the last M positions.
void write_louver_kv(nk::h5::Writer& out, const CaptureObserver& capture, int64_t layer, int64_t queries);

}  // namespace nk::lm
