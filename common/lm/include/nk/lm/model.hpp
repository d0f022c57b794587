// model.hpp - the whole Llama network over a packed batch, forward and
// explicit backward (llm.c's shape: every activation the backward needs lives
// in one Workspace allocated up front; no autograd, no allocation in a step).
//
//   x = embed[tokens]
//   per layer: a = RMSNorm(x); q,k,v = a Wq^T, a Wk^T, a Wv^T; RoPE(q, k);
//              x += attention(q, k, v) Wo^T
//              b = RMSNorm(x); x += (silu(b Wg^T) * (b Wu^T)) Wd^T
//   logits = RMSNorm(x) E^T  (E = embed when tied, lm_head otherwise)
//
// Attention is causal in Mode::causal and bidirectional in Mode::diffusion.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "nk/lm/config.hpp"
#include "nk/lm/kv_cache.hpp"
#include "nk/lm/params.hpp"

namespace nk::lm {

/// Sequences packed one after another without padding; the caller owns the
/// arrays. Segment s is rows [offsets[s], offsets[s+1]).
struct TokenBatch {
  std::span<const int32_t> tokens = {};     ///< [N]
  std::span<const int64_t> offsets = {};    ///< [S+1], offsets[0] = 0, offsets[S] = N
  std::span<const int32_t> positions = {};  ///< [N] RoPE positions, or empty: 0.. within each segment (after the cache's tokens)
  std::span<const int32_t> slots = {};      ///< [S] the KV-cache slot of each segment, when forward() is given a cache
  int64_t rows() const { return static_cast<int64_t>(tokens.size()); }
  int64_t segments() const { return static_cast<int64_t>(offsets.size()) - 1; }
};

/// y[n, out] = x[n, in] W^T for W [out, in] row-major, through the model's
/// own matrix kernels (the best ISA copy; below 32 rows a kernel that streams
/// W once instead of a GEMM's packed copy): for tools that add a projection
/// beside the model's (a Forecast).
void linear(const float* x, const float* w, int64_t n, int64_t in, int64_t out, float* y);

/// Equal segments: 'rows' of 'length' tokens each (a training batch [B, T]).
std::vector<int64_t> uniform_offsets(int64_t rows, int64_t length);

/// Which tensors train. Frozen tensors get no gradient (their dW is skipped;
/// gradients still flow through them to earlier layers).
class ParameterMask {
 public:
  static ParameterMask all(const ParameterStore& store);
  /// Freezes (thaw: unfreezes) every tensor whose name matches the shell
  /// glob (fnmatch: '*' '?' '[...]'); returns how many matched.
  int64_t freeze(std::string_view glob);
  int64_t thaw(std::string_view glob);
  bool trainable(size_t tensor) const { return trainable_[tensor] != 0; }
  bool trainable(std::string_view name) const;
  int64_t trainable_count() const;   ///< parameters (values) that train

 private:
  const ParameterStore* store_ = nullptr;
  std::vector<char> trainable_;
};

struct WorkspaceLimits {
  int64_t max_tokens = 0;     ///< rows of a batch
  int64_t max_segment = 0;    ///< tokens of its longest segment (<= config max_seq)
  bool training = false;      ///< keep every layer's activations and the gradient buffers
};

/// Activations of one batch (llm.c's ActivationTensors, plus their gradients
/// when training). Inference keeps one layer's worth and reuses it.
class Workspace {
 public:
  Workspace(const Config& config, WorkspaceLimits limits);
  const WorkspaceLimits& limits() const { return limits_; }
  /// Rows of logits the last forward wrote (all rows, or one per segment).
  int64_t logit_rows() const { return logit_rows_; }
  /// [logit_rows, V] from the last forward; dlogits is where the loss writes
  /// its gradient before backward().
  float* logits() { return logits_.data(); }
  const float* logits() const { return logits_.data(); }
  float* dlogits() { return dlogits_.data(); }
  /// The residual stream entering layer l ([N, D]; l = n_layers: after the
  /// last block, before the final norm). Training workspaces keep all.
  const float* residual(int64_t layer) const;
  int64_t bytes() const;

 private:
  friend class Model;
  Config config_;
  WorkspaceLimits limits_;
  int64_t logit_rows_ = 0;
  bool backward_ready_ = false;
  struct Layer {
    std::vector<float> ln1, rstd1, q, k, v, att, lse, mid, ln2, rstd2, gate, up, act;
    // mla: the latent before and after its norm [N, d_c], the norm's 1/rms, the turned RoPE key
    // [N, d_R], and c W_kv_b^T [N, H (nope + hd)] (k_nope and v of each head).
    std::vector<float> craw, c, rstdc, kpe, kv;
    std::vector<int32_t> sel;  // sparse: the selector's blocks [N, Hkv, width] (the backward reuses them)
  };
  std::vector<std::vector<float>> resid_;   // n_layers + 1 (training) or 2 (inference, ping-pong)
  std::vector<Layer> layers_;               // n_layers (training) or 1
  std::vector<float> lnf_, rstdf_, logits_, dlogits_, scratch_;
  std::vector<int32_t> positions_;
  // Backward: one set, reused from the last layer down.
  std::vector<float> dx_, dmid_, dnorm_, dq_, dk_, dv_, datt_, dgate_, dup_, dact_;
  std::vector<float> dkv_, dc_, dcraw_, dkpe_;                  // mla
  std::vector<float> latent_, qabs_;   // mla: a backend's latent output [N, H, d_c], absorbed queries [N, H, d_c + d_R]
};

/// Where a hook fires: the layer (n_layers: after the last block), the
/// decoding or denoising step the caller set, the batch.
struct Site {
  int64_t layer = 0;
  int64_t step = 0;
  const TokenBatch* batch = nullptr;
};

/// Hooks into the forward pass (capture for other tools: the residual
/// stream, the attention's input, post-RoPE q/k/v). Pointers are valid only
/// during the call; rows are token-major [N, width]. No cost when unset.
class Observer {
 public:
  virtual ~Observer() = default;
  virtual bool wants(int64_t layer) const { return layer >= 0; }
  /// The residual stream entering 'layer' ([N, D]); layer n_layers: after the last block, before the final norm.
  virtual void residual(const Site& site, const float* x) {}
  /// The attention's input: RMSNorm of the residual ([N, D]).
  virtual void attention_input(const Site& site, const float* x) {}
  /// q [N, n_heads*hd] and k, v [N, n_kv_heads*hd], after RoPE (q, k).
  virtual void qkv(const Site& site, const float* q, const float* k, const float* v) {}
  /// mla models: what absorbed decoding caches and asks - the latents c [N,
  /// d_c] (after their norm), the turned RoPE keys [N, d_R], and the absorbed
  /// queries [N, H, d_c + d_R] (q_c = W_UK^T q_nope, then q_R turned).
  virtual void mla(const Site& site, const float* ckv, const float* kpe, const float* q_absorbed) {}
};

/// One mla layer's attention handed to an absorbed-decode backend: the
/// batch's new rows (segment s continues the backend's slot batch.slots[s]).
struct MlaCall {
  int64_t layer = 0, step = 0;
  const TokenBatch* batch = nullptr;
  const int32_t* positions = nullptr;  ///< [N]
  const float* ckv = nullptr;          ///< [N, d_c]
  const float* kpe = nullptr;          ///< [N, d_R]
  const float* q = nullptr;            ///< [N, H, d_c + d_R] absorbed
  int64_t heads = 0, kv_rank = 0, rope_dim = 0;
  double scale = 0;                    ///< 1/sqrt(head_dim), the unabsorbed form's
  bool causal = true;
};

/// Absorbed MLA decoding over a cache the backend owns (its rows [c, k_R],
/// in whatever format: float, BF16, FP8 pages). For each layer the model
/// calls attend(); the backend appends the new rows to each segment's slot
/// and returns latent [N, H, d_c] = sum_j p_ij c_j, p = softmax over the
/// slot's rows up to the query's own (causal) of scale (q_c.c_j + q_R.k_R,j).
/// The model then applies W_UV per head and o_proj.
class MlaBackend {
 public:
  virtual ~MlaBackend() = default;
  /// Tokens of the slot that every layer holds (the next token's position).
  virtual int64_t length(int32_t slot) const = 0;
  virtual void attend(const MlaCall& call, float* latent) = 0;
};

/// The reference backend: float32 rows per slot and layer, attention in
/// double. Tests check absorbed decoding through it against the unabsorbed
/// forward; tools copy its shape for quantized caches.
class DenseMlaCache : public MlaBackend {
 public:
  DenseMlaCache(const Config& config, int64_t slots);
  int64_t length(int32_t slot) const override;
  void attend(const MlaCall& call, float* latent) override;

 private:
  int64_t layers_, width_;
  std::vector<std::vector<std::vector<float>>> rows_;  // [slot][layer] -> rows of d_c + d_R
};

/// One grouped-query layer's attention handed to a backend that owns the KV
/// cache (an offloaded or block-sparse one): the batch's new rows, segment s
/// continuing the backend's slot batch.slots[s].
struct AttentionCall {
  int64_t layer = 0, step = 0;
  const TokenBatch* batch = nullptr;
  const int32_t* positions = nullptr;  ///< [N]
  const float* x = nullptr;            ///< [N, D]: the attention input (RMSNorm of the residual)
  const float* q = nullptr;            ///< [N, heads*hd], after RoPE
  const float* k = nullptr;            ///< [N, kv_heads*hd], after RoPE
  const float* v = nullptr;            ///< [N, kv_heads*hd]
  int64_t heads = 0, kv_heads = 0, head_dim = 0;
  double scale = 0;                    ///< 1/sqrt(head_dim)
  bool causal = true;
};

/// Attention over a KV cache the backend owns, for grouped-query models: for
/// each layer the model calls attend(); the backend appends the new rows'
/// keys and values to each segment's slot and writes out [N, heads*hd] (the
/// heads' outputs, before o_proj), in whatever way it chooses (all keys,
/// selected blocks, offloaded pools). It sees the layer's attention input
/// first, so it may prepare later layers while this one computes.
class AttentionBackend {
 public:
  virtual ~AttentionBackend() = default;
  /// Tokens of the slot that every layer holds (the next token's position).
  virtual int64_t length(int32_t slot) const = 0;
  virtual void attend(const AttentionCall& call, float* out) = 0;
  /// The slot starts a new sequence (generate_causal calls it before each
  /// prompt's prefill): length(slot) is 0 after it.
  virtual void reset(int32_t /*slot*/) {}
};

enum class LogitRows {
  all,   ///< one row of logits per token (training, scoring)
  last,  ///< one per segment: its last token's (decoding; the head's GEMM shrinks to S rows)
};

struct ForwardOptions {
  LogitRows logits = LogitRows::all;
  /// With a cache, each segment continues its slot's sequence: its tokens
  /// take positions length(slot).., attend to the cached keys and their own,
  /// and are appended (pages reserved here; a usage error when full).
  KvCache* cache = nullptr;
  Observer* observer = nullptr;
  int64_t step = 0;  ///< handed to the observer
  /// mla models: absorbed decoding through this backend, which owns the
  /// cache (then 'cache' must be null; inference only).
  MlaBackend* mla = nullptr;
  /// Grouped-query models: attention through this backend, which owns the
  /// cache (then 'cache' must be null; inference only).
  AttentionBackend* attention = nullptr;
};

/// A view of a config and its weights; const and re-entrant: separate
/// Workspaces run on separate threads.
class Model {
 public:
  Model(const ParameterStore& weights);
  const Config& config() const { return weights_.config(); }
  /// Logits of every row of the batch. A batch beyond the workspace's
  /// limits, a token outside the vocabulary or a segment longer than max_seq
  /// is a usage error (exit 2).
  void forward(const TokenBatch& batch, Workspace& ws, const ForwardOptions& options = {}) const;
  /// grads += dL/dW from ws.dlogits() (the batch of the last forward, which
  /// must have been run on a training workspace with all logit rows and no
  /// cache), for trainable tensors.
  void backward(const TokenBatch& batch, Workspace& ws, const ParameterMask& mask, ParameterStore& grads) const;

 private:
  const ParameterStore& weights_;
};

}  // namespace nk::lm
