// model.cpp - the Llama network's forward and explicit backward over a packed
// batch, every matrix product through Eigen (OpenMP-parallel), the element-wise
// layers from layers.hpp and attention from attention.hpp.
#include "nk/lm/model.hpp"

#include <fnmatch.h>
#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <string>

#include "nk/error.hpp"
#include "nk/lm/attention.hpp"
#include "nk/lm/layers.hpp"
#include "nk/lm/sparse_attention.hpp"
#include "dense.hpp"

namespace nk::lm {

namespace {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Map = Eigen::Map<Matrix>;
using ConstMap = Eigen::Map<const Matrix>;

void linear_dx(const float* dy, const float* w, int64_t n, int64_t in, int64_t out, float* dx, bool accumulate) {
  dense_ops().linear_dx(dy, w, n, in, out, dx, accumulate);
}
void linear_dw(const float* dy, const float* x, int64_t n, int64_t in, int64_t out, float* dw) {
  dense_ops().linear_dw(dy, x, n, in, out, dw);
}

void resize(std::vector<float>& v, int64_t n) { v.assign(static_cast<size_t>(n), 0.0f); }

struct LayerWeights {
  const float *ln1, *q, *k, *v, *o, *ln2, *gate, *up, *down;
  size_t ln1_t, q_t, k_t, v_t, o_t, ln2_t, gate_t, up_t, down_t;  // tensor indices (mask, grads)
  const float *kva, *kvnorm, *kvb;                                 // mla (k, v null)
  size_t kva_t, kvnorm_t, kvb_t;
};

LayerWeights layer_weights(const ParameterStore& w, int64_t l) {
  LayerWeights lw{};
  const auto find = [&](const char* part, const float*& ptr, size_t& index) {
    const std::string name = layer_tensor(l, part);
    const auto& ts = w.tensors();
    for (size_t t = 0; t < ts.size(); ++t)
      if (ts[t].name == name) {
        ptr = w.data() + ts[t].offset;
        index = t;
        return;
      }
    throw usage_error("no tensor '" + name + "' in this model");
  };
  find("input_layernorm.weight", lw.ln1, lw.ln1_t);
  find("self_attn.q_proj.weight", lw.q, lw.q_t);
  if (w.config().mla()) {
    find("self_attn.kv_a_proj_with_mqa.weight", lw.kva, lw.kva_t);
    find("self_attn.kv_a_layernorm.weight", lw.kvnorm, lw.kvnorm_t);
    find("self_attn.kv_b_proj.weight", lw.kvb, lw.kvb_t);
  } else {
    find("self_attn.k_proj.weight", lw.k, lw.k_t);
    find("self_attn.v_proj.weight", lw.v, lw.v_t);
  }
  find("self_attn.o_proj.weight", lw.o, lw.o_t);
  find("post_attention_layernorm.weight", lw.ln2, lw.ln2_t);
  find("mlp.gate_proj.weight", lw.gate, lw.gate_t);
  find("mlp.up_proj.weight", lw.up, lw.up_t);
  find("mlp.down_proj.weight", lw.down, lw.down_t);
  return lw;
}

size_t tensor_index(const ParameterStore& w, std::string_view name) {
  const auto& ts = w.tensors();
  for (size_t t = 0; t < ts.size(); ++t)
    if (ts[t].name == name) return t;
  throw usage_error("no tensor '" + std::string(name) + "' in this model");
}

/// mla: q_abs[n, h] = [W_UK[h]^T q_nope[n, h], q_R[n, h]] ([N, H, d_c + d_R])
/// from the post-RoPE queries [N, H, hd]; W_UK[h] is kv_b's rows
/// h (nope + hd) .. + nope.
void mla_absorb_queries(const Config& c, const float* kvb, const float* q, int64_t n, float* q_abs) {
  const int64_t H = c.n_heads, hd = c.head_dim, R = c.rope_dim, nope = c.nope_dim(), dc = c.kv_rank;
#pragma omp parallel for schedule(static)
  for (int64_t task = 0; task < n * H; ++task) {
    const int64_t h = task % H;
    const float* qh = q + task * hd;
    float* out = q_abs + task * (dc + R);
    std::fill(out, out + dc, 0.0f);
    for (int64_t e = 0; e < nope; ++e) {
      const float* wrow = kvb + (h * (nope + hd) + e) * dc;
      for (int64_t k = 0; k < dc; ++k) out[k] += qh[e] * wrow[k];
    }
    std::copy(qh + nope, qh + hd, out + dc);
  }
}

/// mla: att[n, h] = W_UV[h] latent[n, h] ([N, H, hd] from [N, H, d_c]).
void mla_expand_latent(const Config& c, const float* kvb, const float* latent, int64_t n, float* att) {
  const int64_t H = c.n_heads, hd = c.head_dim, nope = c.nope_dim(), dc = c.kv_rank;
#pragma omp parallel for schedule(static)
  for (int64_t task = 0; task < n * H; ++task) {
    const int64_t h = task % H;
    const float* lat = latent + task * dc;
    for (int64_t e = 0; e < hd; ++e) {
      const float* wrow = kvb + (h * (nope + hd) + nope + e) * dc;
      float acc = 0;
      for (int64_t k = 0; k < dc; ++k) acc += wrow[k] * lat[k];
      att[task * hd + e] = acc;
    }
  }
}

/// Attention of each segment's new rows over its slot's cached keys (the new
/// rows' k and v are written into the cache first): one task per (segment, head).
void cached_attention(KvCache& cache, const TokenBatch& batch, int64_t layer, const float* q, const float* k,
                      const float* v, bool causal, float* out, float* lse, float* scratch, const Config& c) {
  const int64_t S = batch.segments(), heads = c.n_heads, group = c.n_heads / c.n_kv_heads, hd = c.head_dim;
  const int64_t qs = heads * hd, kvs = c.n_kv_heads * hd;
  for (int64_t s = 0; s < S; ++s) {
    const int64_t begin = batch.offsets[static_cast<size_t>(s)], n = batch.offsets[static_cast<size_t>(s + 1)] - begin;
    cache.write(batch.slots[static_cast<size_t>(s)], layer, k + begin * kvs, v + begin * kvs, n);
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
#pragma omp parallel for schedule(static)
  for (int64_t task = 0; task < S * heads; ++task) {
    const int64_t s = task / heads, h = task % heads, g = h / group;
    const int64_t begin = batch.offsets[static_cast<size_t>(s)], n = batch.offsets[static_cast<size_t>(s + 1)] - begin;
    const int32_t slot = batch.slots[static_cast<size_t>(s)];
    const int64_t first = cache.length(slot);
    float* scores = scratch + omp_get_thread_num() * c.max_seq;
    const auto key = [&](int64_t j) { return cache.key(slot, layer, j) + g * hd; };
    const auto value = [&](int64_t j) { return cache.value(slot, layer, j) + g * hd; };
    attend_rows<float, decltype(key), decltype(value), true>(q + begin * qs + h * hd, qs, n, key, value, first + n, first, causal,
                                                             hd, scale, out + begin * qs + h * hd, qs, lse + begin * heads + h,
                                                             heads, scores);
  }
}

/// cached_attention of a sparse-gqa model: each new query reads only the
/// blocks the selector picks over the slot's cache (pooled keys of its
/// complete blocks), as the full forward does. One task per (segment, KV head).
void cached_sparse_attention(KvCache& cache, const TokenBatch& batch, int64_t layer, const float* q, float* out,
                             float* lse, const Config& c) {
  const int64_t S = batch.segments(), heads = c.n_heads, Hkv = c.n_kv_heads, G = heads / Hkv, hd = c.head_dim;
  const int64_t qs = heads * hd, B = c.selector.block, W = c.selector.width();
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t task = 0; task < S * Hkv; ++task) {
    const int64_t s = task / Hkv, g = task % Hkv;
    const int64_t begin = batch.offsets[static_cast<size_t>(s)], n = batch.offsets[static_cast<size_t>(s + 1)] - begin;
    const int32_t slot = batch.slots[static_cast<size_t>(s)];
    const int64_t first = cache.length(slot), total = first + n, nb = total / B;
    // Pooled keys of head g (the selector's arithmetic: a double sum per block, as pool_keys).
    std::vector<float> pooled(static_cast<size_t>(std::max<int64_t>(Hkv * nb * hd, 1)), 0.0f);
    for (int64_t j = 0; j < nb; ++j)
      for (int64_t e = 0; e < hd; ++e) {
        double sum = 0;
        for (int64_t r = j * B; r < (j + 1) * B; ++r) sum += cache.key(slot, layer, r)[g * hd + e];
        pooled[static_cast<size_t>((g * nb + j) * hd + e)] = static_cast<float>(sum / static_cast<double>(B));
      }
    std::vector<double> scores(static_cast<size_t>(nb + 1)), scratch(static_cast<size_t>(nb + 1));
    std::vector<int32_t> blocks(static_cast<size_t>(W));
    std::vector<double> p;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t t = first + i;
      group_scores_at(c.selector, q + (begin + i) * qs, hd, heads, t, pooled.data(), Hkv, nb, hd, g, scores.data(),
                      scratch.data());
      const int64_t m = select_blocks(c.selector, t, scores.data(), blocks.data());
      std::sort(blocks.begin(), blocks.begin() + m);
      for (int64_t h = g * G; h < (g + 1) * G; ++h) {
        const float* qi = q + (begin + i) * qs + h * hd;
        p.clear();
        double best = -INFINITY;
        for (int64_t b = 0; b < m; ++b)
          for (int64_t j = blocks[static_cast<size_t>(b)] * B; j < std::min((blocks[static_cast<size_t>(b)] + 1) * B, t + 1); ++j) {
            const float* kj = cache.key(slot, layer, j) + g * hd;
            float dot = 0;
            for (int64_t e = 0; e < hd; ++e) dot += qi[e] * kj[e];
            p.push_back(dot * scale);
            best = std::max(best, p.back());
          }
        double sum = 0;
        for (double& x : p) sum += (x = std::exp(x - best));
        float* oi = out + (begin + i) * qs + h * hd;
        std::fill(oi, oi + hd, 0.0f);
        size_t at = 0;
        for (int64_t b = 0; b < m; ++b)
          for (int64_t j = blocks[static_cast<size_t>(b)] * B; j < std::min((blocks[static_cast<size_t>(b)] + 1) * B, t + 1); ++j) {
            const float w = static_cast<float>(p[at++] / sum);
            const float* vj = cache.value(slot, layer, j) + g * hd;
            for (int64_t e = 0; e < hd; ++e) oi[e] += w * vj[e];
          }
        lse[(begin + i) * heads + h] = static_cast<float>(best + std::log(sum));
      }
    }
  }
}

}  // namespace

void linear(const float* x, const float* w, int64_t n, int64_t in, int64_t out, float* y) {
  dense_ops().linear(x, w, n, in, out, y);
}

std::vector<int64_t> uniform_offsets(int64_t rows, int64_t length) {
  std::vector<int64_t> offsets(static_cast<size_t>(rows + 1));
  for (int64_t r = 0; r <= rows; ++r) offsets[static_cast<size_t>(r)] = r * length;
  return offsets;
}

// ---------------------------------------------------------------- ParameterMask

ParameterMask ParameterMask::all(const ParameterStore& store) {
  ParameterMask m;
  m.store_ = &store;
  m.trainable_.assign(store.tensors().size(), 1);
  return m;
}

int64_t ParameterMask::freeze(std::string_view glob) {
  const std::string pattern(glob);
  int64_t hits = 0;
  for (size_t t = 0; t < trainable_.size(); ++t)
    if (fnmatch(pattern.c_str(), store_->tensors()[t].name.c_str(), 0) == 0) {
      trainable_[t] = 0;
      ++hits;
    }
  return hits;
}

int64_t ParameterMask::thaw(std::string_view glob) {
  const std::string pattern(glob);
  int64_t hits = 0;
  for (size_t t = 0; t < trainable_.size(); ++t)
    if (fnmatch(pattern.c_str(), store_->tensors()[t].name.c_str(), 0) == 0) {
      trainable_[t] = 1;
      ++hits;
    }
  return hits;
}

bool ParameterMask::trainable(std::string_view name) const { return trainable(tensor_index(*store_, name)); }

int64_t ParameterMask::trainable_count() const {
  int64_t n = 0;
  for (size_t t = 0; t < trainable_.size(); ++t)
    if (trainable_[t]) n += store_->tensors()[t].size;
  return n;
}

// ---------------------------------------------------------------- Workspace

Workspace::Workspace(const Config& config, WorkspaceLimits limits) : config_(config), limits_(limits) {
  config.validate("model config");
  if (limits.max_tokens < 1 || limits.max_tokens > (int64_t{1} << 26))
    throw usage_error("workspace: max_tokens must be in 1..2^26, got " + std::to_string(limits.max_tokens));
  if (limits.max_segment < 1 || limits.max_segment > config.max_seq)
    throw usage_error("workspace: max_segment must be in 1.." + std::to_string(config.max_seq) + " (the context), got " +
                      std::to_string(limits.max_segment));
  const Config& c = config;
  const int64_t n = limits.max_tokens, d = c.d_model, qd = c.n_heads * c.head_dim, kvd = c.n_kv_heads * c.head_dim;
  logit_rows_ = n;
  const int64_t keep = limits.training ? c.n_layers : 1;
  resid_.resize(static_cast<size_t>(limits.training ? c.n_layers + 1 : 2));
  for (auto& r : resid_) resize(r, n * d);
  layers_.resize(static_cast<size_t>(keep));
  for (Layer& L : layers_) {
    resize(L.ln1, n * d), resize(L.rstd1, n), resize(L.q, n * qd), resize(L.k, n * kvd), resize(L.v, n * kvd);
    resize(L.att, n * qd), resize(L.lse, n * c.n_heads), resize(L.mid, n * d), resize(L.ln2, n * d);
    resize(L.rstd2, n), resize(L.gate, n * c.d_ff), resize(L.up, n * c.d_ff), resize(L.act, n * c.d_ff);
    if (c.mla()) {
      resize(L.craw, n * c.kv_rank), resize(L.c, n * c.kv_rank), resize(L.rstdc, n), resize(L.kpe, n * c.rope_dim);
      resize(L.kv, n * c.n_heads * (c.nope_dim() + c.head_dim));
    }
    if (c.sparse) L.sel.assign(static_cast<size_t>(n * c.n_kv_heads * c.selector.width()), -1);
  }
  if (c.mla()) {
    resize(latent_, n * c.n_heads * c.kv_rank);
    resize(qabs_, n * c.n_heads * (c.kv_rank + c.rope_dim));
  }
  resize(lnf_, n * d), resize(rstdf_, n), resize(logits_, logit_rows_ * c.vocab);
  resize(scratch_, attention_scratch(config.max_seq));  // keys of a cached sequence: up to the context
  positions_.assign(static_cast<size_t>(n), 0);
  if (limits.training) {
    resize(dlogits_, logit_rows_ * c.vocab);
    resize(dx_, n * d), resize(dmid_, n * d), resize(dnorm_, n * d), resize(dq_, n * qd), resize(dk_, n * kvd);
    resize(dv_, n * kvd), resize(datt_, n * qd), resize(dgate_, n * c.d_ff), resize(dup_, n * c.d_ff);
    resize(dact_, n * c.d_ff);
    if (c.mla()) {
      resize(dkv_, n * c.n_heads * (c.nope_dim() + c.head_dim)), resize(dc_, n * c.kv_rank);
      resize(dcraw_, n * c.kv_rank), resize(dkpe_, n * c.rope_dim);
    }
  }
}

const float* Workspace::residual(int64_t layer) const {
  if (!limits_.training) throw usage_error("workspace: residuals of every layer are kept only when training");
  return resid_.at(static_cast<size_t>(layer)).data();
}

int64_t Workspace::bytes() const {
  int64_t values = 0;
  for (const auto& r : resid_) values += static_cast<int64_t>(r.size());
  for (const Layer& L : layers_)
    for (const auto* v : {&L.ln1, &L.rstd1, &L.q, &L.k, &L.v, &L.att, &L.lse, &L.mid, &L.ln2, &L.rstd2, &L.gate,
                          &L.up, &L.act, &L.craw, &L.c, &L.rstdc, &L.kpe, &L.kv})
      values += static_cast<int64_t>(v->size());
  for (const Layer& L : layers_) values += static_cast<int64_t>(L.sel.size());
  for (const auto* v : {&lnf_, &rstdf_, &logits_, &dlogits_, &scratch_, &dx_, &dmid_, &dnorm_, &dq_, &dk_, &dv_,
                        &datt_, &dgate_, &dup_, &dact_, &dkv_, &dc_, &dcraw_, &dkpe_, &latent_, &qabs_})
    values += static_cast<int64_t>(v->size());
  return values * 4 + static_cast<int64_t>(positions_.size()) * 4;
}

// ---------------------------------------------------------------- Model

Model::Model(const ParameterStore& weights) : weights_(weights) {}

void Model::forward(const TokenBatch& batch, Workspace& ws, const ForwardOptions& options) const {
  const Config& c = config();
  const int64_t n = batch.rows(), S = batch.segments(), d = c.d_model;
  const int64_t qd = c.n_heads * c.head_dim, kvd = c.n_kv_heads * c.head_dim;
  if (S < 1 || batch.offsets[0] != 0 || batch.offsets[static_cast<size_t>(S)] != n)
    throw usage_error("model: the batch's offsets must run from 0 to its " + std::to_string(n) + " tokens");
  if ((options.cache || options.mla || options.attention) && static_cast<int64_t>(batch.slots.size()) != S)
    throw usage_error("model: a cached forward needs one slot per segment");
  if (options.attention && (c.mla() || options.cache || options.mla || ws.limits_.training))
    throw usage_error(c.mla() ? "model: an attention backend needs a grouped-query model (this one is mla)"
                              : "model: an attention backend owns the cache and runs inference only (no KvCache, no training workspace)");
  if (options.mla && (!c.mla() || options.cache || ws.limits_.training))
    throw usage_error(!c.mla() ? "model: an MLA backend needs an mla model"
                               : "model: an MLA backend owns the cache and runs inference only (no KvCache, no training workspace)");
  if (n > ws.limits_.max_tokens)
    throw usage_error("model: a batch of " + std::to_string(n) + " tokens exceeds the workspace's " +
                      std::to_string(ws.limits_.max_tokens));
  for (int64_t s = 0; s < S; ++s) {
    const int64_t len = batch.offsets[static_cast<size_t>(s + 1)] - batch.offsets[static_cast<size_t>(s)];
    if (len < 1 || len > ws.limits_.max_segment)
      throw usage_error("model: segment " + std::to_string(s) + " has " + std::to_string(len) +
                        " tokens; the workspace takes 1.." + std::to_string(ws.limits_.max_segment));
    const int32_t slot = batch.slots.empty() ? 0 : batch.slots[static_cast<size_t>(s)];
    const int64_t cached = options.cache       ? options.cache->length(slot)
                           : options.mla       ? options.mla->length(slot)
                           : options.attention ? options.attention->length(slot)
                                               : 0;
    for (int64_t i = 0; i < len; ++i)
      ws.positions_[static_cast<size_t>(batch.offsets[static_cast<size_t>(s)] + i)] = static_cast<int32_t>(cached + i);
  }
  KvCache* cache = options.cache;
  if (cache) {
    for (int64_t s = 0; s < S; ++s) {
      const int64_t len = batch.offsets[static_cast<size_t>(s + 1)] - batch.offsets[static_cast<size_t>(s)];
      if (!cache->reserve(batch.slots[static_cast<size_t>(s)], len))
        throw usage_error("model: the KV cache has no room for " + std::to_string(len) + " more tokens of slot " +
                          std::to_string(batch.slots[static_cast<size_t>(s)]) + " (or they pass the context of " +
                          std::to_string(c.max_seq) + ")");
    }
  }
  if (!batch.positions.empty()) {
    if (static_cast<int64_t>(batch.positions.size()) != n) throw usage_error("model: positions must give one per token");
    std::copy(batch.positions.begin(), batch.positions.end(), ws.positions_.begin());
  }
  const bool causal = c.mode == Mode::causal;
  const float* embed = weights_.data() + weights_.info("model.embed_tokens.weight").offset;

  float* x = ws.resid_[0].data();
  for (int64_t r = 0; r < n; ++r) {
    const int32_t t = batch.tokens[static_cast<size_t>(r)];
    if (t < 0 || t >= c.vocab)
      throw usage_error("model: token " + std::to_string(t) + " at row " + std::to_string(r) + " is outside the vocabulary of " +
                        std::to_string(c.vocab));
    std::copy(embed + t * d, embed + (t + 1) * d, x + r * d);
  }
  const int32_t* pos = ws.positions_.data();
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const LayerWeights w = layer_weights(weights_, l);
    Workspace::Layer& L = ws.layers_[ws.limits_.training ? static_cast<size_t>(l) : 0];
    const float* xin = ws.resid_[ws.limits_.training ? static_cast<size_t>(l) : static_cast<size_t>(l % 2)].data();
    float* xout = ws.resid_[ws.limits_.training ? static_cast<size_t>(l + 1) : static_cast<size_t>((l + 1) % 2)].data();
    Observer* obs = options.observer && options.observer->wants(l) ? options.observer : nullptr;
    const Site site{l, options.step, &batch};
    if (obs) obs->residual(site, xin);
    rmsnorm_forward(xin, w.ln1, n, d, c.norm_eps, L.ln1.data(), L.rstd1.data());
    if (obs) obs->attention_input(site, L.ln1.data());
    linear(L.ln1.data(), w.q, n, d, qd, L.q.data());
    if (c.mla()) {
      // q per head [q_nope, q_R]; the latent c = RMSNorm(a W_DKV^T); k_R = RoPE(a W_KR^T), one for all heads.
      const int64_t H = c.n_heads, hd = c.head_dim, R = c.rope_dim, nope = c.nope_dim(), dc = c.kv_rank;
      rope_part(L.q.data(), pos, n, H, hd, nope, R, c.rope_theta);
      linear(L.ln1.data(), w.kva, n, d, dc, L.craw.data());
      linear(L.ln1.data(), w.kva + dc * d, n, d, R, L.kpe.data());
      rmsnorm_forward(L.craw.data(), w.kvnorm, n, dc, c.norm_eps, L.c.data(), L.rstdc.data());
      rope_part(L.kpe.data(), pos, n, 1, R, 0, R, c.rope_theta);
      if (options.mla || obs) {
        mla_absorb_queries(c, w.kvb, L.q.data(), n, ws.qabs_.data());
        if (obs) obs->mla(site, L.c.data(), L.kpe.data(), ws.qabs_.data());
      }
      if (options.mla) {
        MlaCall call;
        call.layer = l, call.step = options.step, call.batch = &batch, call.positions = pos;
        call.ckv = L.c.data(), call.kpe = L.kpe.data(), call.q = ws.qabs_.data();
        call.heads = H, call.kv_rank = dc, call.rope_dim = R, call.scale = 1.0 / std::sqrt(static_cast<double>(hd));
        call.causal = causal;
        options.mla->attend(call, ws.latent_.data());
        mla_expand_latent(c, w.kvb, ws.latent_.data(), n, L.att.data());
      } else {
        // The unabsorbed form: per head k = [c W_UK^T, k_R], v = c W_UV^T; then multi-head attention.
        linear(L.c.data(), w.kvb, n, dc, H * (nope + hd), L.kv.data());
#pragma omp parallel for schedule(static)
        for (int64_t task = 0; task < n * H; ++task) {
          const int64_t r = task / H;
          const float* kv = L.kv.data() + task * (nope + hd);
          std::copy(kv, kv + nope, L.k.data() + task * hd);
          std::copy(L.kpe.data() + r * R, L.kpe.data() + (r + 1) * R, L.k.data() + task * hd + nope);
          std::copy(kv + nope, kv + nope + hd, L.v.data() + task * hd);
        }
      }
    } else {
      linear(L.ln1.data(), w.k, n, d, kvd, L.k.data());
      linear(L.ln1.data(), w.v, n, d, kvd, L.v.data());
      rope(L.q.data(), pos, n, c.n_heads, c.head_dim, c.rope_theta);
      rope(L.k.data(), pos, n, c.n_kv_heads, c.head_dim, c.rope_theta);
    }
    if (obs && !options.mla) obs->qkv(site, L.q.data(), L.k.data(), L.v.data());
    if (options.mla) {
      // attended above
    } else if (options.attention) {
      AttentionCall call;
      call.layer = l, call.step = options.step, call.batch = &batch, call.positions = pos;
      call.x = L.ln1.data(), call.q = L.q.data(), call.k = L.k.data(), call.v = L.v.data();
      call.heads = c.n_heads, call.kv_heads = c.n_kv_heads, call.head_dim = c.head_dim;
      call.scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim)), call.causal = causal;
      options.attention->attend(call, L.att.data());
    } else if (cache && c.sparse) {
      for (int64_t s = 0; s < S; ++s) {
        const int64_t begin = batch.offsets[static_cast<size_t>(s)], len = batch.offsets[static_cast<size_t>(s + 1)] - begin;
        cache->write(batch.slots[static_cast<size_t>(s)], l, L.k.data() + begin * kvd, L.v.data() + begin * kvd, len);
      }
      cached_sparse_attention(*cache, batch, l, L.q.data(), L.att.data(), L.lse.data(), c);
    } else if (cache)
      cached_attention(*cache, batch, l, L.q.data(), L.k.data(), L.v.data(), causal, L.att.data(), L.lse.data(), ws.scratch_.data(), c);
    else if (c.sparse) {
      select_batch(c.selector, L.q.data(), L.k.data(), batch.offsets.data(), S, c.n_heads, c.n_kv_heads, c.head_dim,
                   L.sel.data());
      sparse_attention_forward(c.selector, L.sel.data(), L.q.data(), L.k.data(), L.v.data(), batch.offsets.data(), S,
                               c.n_heads, c.n_kv_heads, c.head_dim, L.att.data(), L.lse.data());
    } else
      dense_ops().attention_forward(L.q.data(), L.k.data(), L.v.data(), batch.offsets.data(), S, c.n_heads, c.n_kv_heads,
                                    c.head_dim, causal, L.att.data(), L.lse.data(), ws.scratch_.data(), c.max_seq);
    // mid = x + att Wo^T
    float* mid = L.mid.data();
    linear(L.att.data(), w.o, n, qd, d, mid);
    Map(mid, n, d) += ConstMap(xin, n, d);
    rmsnorm_forward(mid, w.ln2, n, d, c.norm_eps, L.ln2.data(), L.rstd2.data());
    linear(L.ln2.data(), w.gate, n, d, c.d_ff, L.gate.data());
    linear(L.ln2.data(), w.up, n, d, c.d_ff, L.up.data());
    swiglu_forward(L.gate.data(), L.up.data(), n * c.d_ff, L.act.data());
    linear(L.act.data(), w.down, n, c.d_ff, d, xout);
    Map(xout, n, d) += ConstMap(mid, n, d);
  }
  const float* xl = ws.resid_[ws.limits_.training ? static_cast<size_t>(c.n_layers) : static_cast<size_t>(c.n_layers % 2)].data();
  if (options.observer && options.observer->wants(c.n_layers)) options.observer->residual({c.n_layers, options.step, &batch}, xl);
  const float* norm = weights_.data() + weights_.info("model.norm.weight").offset;
  rmsnorm_forward(xl, norm, n, d, c.norm_eps, ws.lnf_.data(), ws.rstdf_.data());
  if (cache)
    for (int64_t s = 0; s < S; ++s)
      cache->advance(batch.slots[static_cast<size_t>(s)], batch.offsets[static_cast<size_t>(s + 1)] - batch.offsets[static_cast<size_t>(s)]);
  const float* head = c.tied_head ? embed : weights_.data() + weights_.info("lm_head.weight").offset;
  if (options.logits == LogitRows::all) {
    ws.logit_rows_ = n;
    linear(ws.lnf_.data(), head, n, d, c.vocab, ws.logits_.data());
  } else {
    // Compact the segments' last rows to the front (row s's source is at or after s), then one GEMM of S rows.
    float* lnf = ws.lnf_.data();
    for (int64_t s = 0; s < S; ++s) {
      const int64_t last = batch.offsets[static_cast<size_t>(s + 1)] - 1;
      if (last != s) std::copy(lnf + last * d, lnf + (last + 1) * d, lnf + s * d);
    }
    ws.logit_rows_ = S;
    linear(lnf, head, S, d, c.vocab, ws.logits_.data());
  }
  ws.backward_ready_ = ws.limits_.training && !cache && options.logits == LogitRows::all;
}

void Model::backward(const TokenBatch& batch, Workspace& ws, const ParameterMask& mask, ParameterStore& grads) const {
  if (!ws.backward_ready_)
    throw usage_error("model: backward needs a forward on a training workspace, with all logit rows and no cache");
  if (grads.size() != weights_.size()) throw usage_error("model: gradients of another model's shape");
  const Config& c = config();
  const int64_t n = batch.rows(), S = batch.segments(), d = c.d_model;
  const int64_t qd = c.n_heads * c.head_dim, kvd = c.n_kv_heads * c.head_dim, f = c.d_ff;
  const bool causal = c.mode == Mode::causal;
  float* G = grads.data();
  const float* W = weights_.data();
  const auto grad_of = [&](size_t t) { return G + weights_.tensors()[t].offset; };

  // Head and final norm.
  const size_t embed_t = tensor_index(weights_, "model.embed_tokens.weight");
  const size_t head_t = c.tied_head ? embed_t : tensor_index(weights_, "lm_head.weight");
  const size_t norm_t = tensor_index(weights_, "model.norm.weight");
  const float* head = W + weights_.tensors()[head_t].offset;
  linear_dx(ws.dlogits_.data(), head, n, d, c.vocab, ws.dnorm_.data(), false);
  if (mask.trainable(head_t)) linear_dw(ws.dlogits_.data(), ws.lnf_.data(), n, d, c.vocab, grad_of(head_t));
  std::vector<float> unused_norm_grad;
  float* dnorm_w = grad_of(norm_t);
  if (!mask.trainable(norm_t)) {
    unused_norm_grad.assign(static_cast<size_t>(d), 0.0f);
    dnorm_w = unused_norm_grad.data();
  }
  rmsnorm_backward(ws.dnorm_.data(), ws.resid_[static_cast<size_t>(c.n_layers)].data(), W + weights_.tensors()[norm_t].offset,
                   ws.rstdf_.data(), n, d, ws.dx_.data(), dnorm_w);

  const int32_t* pos = ws.positions_.data();
  std::vector<float> sink(static_cast<size_t>(std::max({d, f, c.kv_rank})), 0.0f);  // dweight of frozen norms
  for (int64_t l = c.n_layers - 1; l >= 0; --l) {
    const LayerWeights w = layer_weights(weights_, l);
    Workspace::Layer& L = ws.layers_[static_cast<size_t>(l)];
    const float* xin = ws.resid_[static_cast<size_t>(l)].data();
    float* dx = ws.dx_.data();  // d loss / d (output of layer l), becomes d loss / d (input)
    // MLP: out = mid + act Wd^T.
    linear_dx(dx, w.down, n, f, d, ws.dact_.data(), false);
    if (mask.trainable(w.down_t)) linear_dw(dx, L.act.data(), n, f, d, grad_of(w.down_t));
    swiglu_backward(ws.dact_.data(), L.gate.data(), L.up.data(), n * f, ws.dgate_.data(), ws.dup_.data());
    linear_dx(ws.dgate_.data(), w.gate, n, d, f, ws.dnorm_.data(), false);
    linear_dx(ws.dup_.data(), w.up, n, d, f, ws.dnorm_.data(), true);
    if (mask.trainable(w.gate_t)) linear_dw(ws.dgate_.data(), L.ln2.data(), n, d, f, grad_of(w.gate_t));
    if (mask.trainable(w.up_t)) linear_dw(ws.dup_.data(), L.ln2.data(), n, d, f, grad_of(w.up_t));
    std::fill(sink.begin(), sink.end(), 0.0f);
    rmsnorm_backward(ws.dnorm_.data(), L.mid.data(), w.ln2, L.rstd2.data(), n, d, ws.dmid_.data(),
                     mask.trainable(w.ln2_t) ? grad_of(w.ln2_t) : sink.data());
    Map(ws.dmid_.data(), n, d) += ConstMap(dx, n, d);
    // Attention: mid = x + att Wo^T.
    const float* dmid = ws.dmid_.data();
    linear_dx(dmid, w.o, n, qd, d, ws.datt_.data(), false);
    if (mask.trainable(w.o_t)) linear_dw(dmid, L.att.data(), n, qd, d, grad_of(w.o_t));
    if (c.sparse)
      sparse_attention_backward(c.selector, L.sel.data(), ws.datt_.data(), L.att.data(), L.q.data(), L.k.data(),
                                L.v.data(), L.lse.data(), batch.offsets.data(), S, c.n_heads, c.n_kv_heads, c.head_dim,
                                ws.dq_.data(), ws.dk_.data(), ws.dv_.data());
    else
      dense_ops().attention_backward(ws.datt_.data(), L.att.data(), L.q.data(), L.k.data(), L.v.data(), L.lse.data(),
                                     batch.offsets.data(), S, c.n_heads, c.n_kv_heads, c.head_dim, causal, ws.dq_.data(),
                                     ws.dk_.data(), ws.dv_.data(), ws.scratch_.data(), c.max_seq);
    if (c.mla()) {
      const int64_t H = c.n_heads, hd = c.head_dim, R = c.rope_dim, nope = c.nope_dim(), dc = c.kv_rank;
      rope_part(ws.dq_.data(), pos, n, H, hd, nope, R, c.rope_theta, true);
      // Back through k = [k_nope, k_R] (k_R shared: its gradient sums over heads) and v into c W_kv_b^T.
      float* dkpe = ws.dkpe_.data();
#pragma omp parallel for schedule(static)
      for (int64_t r = 0; r < n; ++r) {
        std::fill(dkpe + r * R, dkpe + (r + 1) * R, 0.0f);
        for (int64_t h = 0; h < H; ++h) {
          const float* dk = ws.dk_.data() + (r * H + h) * hd;
          const float* dv = ws.dv_.data() + (r * H + h) * hd;
          float* dkv = ws.dkv_.data() + (r * H + h) * (nope + hd);
          std::copy(dk, dk + nope, dkv);
          std::copy(dv, dv + hd, dkv + nope);
          for (int64_t e = 0; e < R; ++e) dkpe[r * R + e] += dk[nope + e];
        }
      }
      rope_part(dkpe, pos, n, 1, R, 0, R, c.rope_theta, true);
      linear_dx(ws.dkv_.data(), w.kvb, n, dc, H * (nope + hd), ws.dc_.data(), false);
      if (mask.trainable(w.kvb_t)) linear_dw(ws.dkv_.data(), L.c.data(), n, dc, H * (nope + hd), grad_of(w.kvb_t));
      std::fill(sink.begin(), sink.end(), 0.0f);
      rmsnorm_backward(ws.dc_.data(), L.craw.data(), w.kvnorm, L.rstdc.data(), n, dc, ws.dcraw_.data(),
                       mask.trainable(w.kvnorm_t) ? grad_of(w.kvnorm_t) : sink.data());
      linear_dx(ws.dq_.data(), w.q, n, d, qd, ws.dnorm_.data(), false);
      linear_dx(ws.dcraw_.data(), w.kva, n, d, dc, ws.dnorm_.data(), true);
      linear_dx(dkpe, w.kva + dc * d, n, d, R, ws.dnorm_.data(), true);
      if (mask.trainable(w.q_t)) linear_dw(ws.dq_.data(), L.ln1.data(), n, d, qd, grad_of(w.q_t));
      if (mask.trainable(w.kva_t)) {
        linear_dw(ws.dcraw_.data(), L.ln1.data(), n, d, dc, grad_of(w.kva_t));
        linear_dw(dkpe, L.ln1.data(), n, d, R, grad_of(w.kva_t) + dc * d);
      }
    } else {
      rope(ws.dq_.data(), pos, n, c.n_heads, c.head_dim, c.rope_theta, true);
      rope(ws.dk_.data(), pos, n, c.n_kv_heads, c.head_dim, c.rope_theta, true);
      linear_dx(ws.dq_.data(), w.q, n, d, qd, ws.dnorm_.data(), false);
      linear_dx(ws.dk_.data(), w.k, n, d, kvd, ws.dnorm_.data(), true);
      linear_dx(ws.dv_.data(), w.v, n, d, kvd, ws.dnorm_.data(), true);
      if (mask.trainable(w.q_t)) linear_dw(ws.dq_.data(), L.ln1.data(), n, d, qd, grad_of(w.q_t));
      if (mask.trainable(w.k_t)) linear_dw(ws.dk_.data(), L.ln1.data(), n, d, kvd, grad_of(w.k_t));
      if (mask.trainable(w.v_t)) linear_dw(ws.dv_.data(), L.ln1.data(), n, d, kvd, grad_of(w.v_t));
    }
    std::fill(sink.begin(), sink.end(), 0.0f);
    rmsnorm_backward(ws.dnorm_.data(), xin, w.ln1, L.rstd1.data(), n, d, dx,
                     mask.trainable(w.ln1_t) ? grad_of(w.ln1_t) : sink.data());
    Map(dx, n, d) += ConstMap(dmid, n, d);
  }
  // Embedding: dE[token] += dx[row]; by column so that threads never share a value.
  if (mask.trainable(embed_t)) {
    float* de = grad_of(embed_t);
    const float* dx = ws.dx_.data();
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < d; ++e)
      for (int64_t r = 0; r < n; ++r) de[batch.tokens[static_cast<size_t>(r)] * d + e] += dx[r * d + e];
  }
}

}  // namespace nk::lm
