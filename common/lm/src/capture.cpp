// capture.cpp - copying what the hooks see, and writing it for other tools.
#include "nk/lm/capture.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/lm/checkpoint.hpp"

namespace nk::lm {

namespace {

int64_t first_segment_rows(const Site& site) { return site.batch->offsets[1] - site.batch->offsets[0]; }

/// Token-major [T, heads*hd] rows to head-major [heads, T, hd].
std::vector<float> head_major(const float* x, int64_t rows, int64_t heads, int64_t hd) {
  std::vector<float> out(static_cast<size_t>(rows * heads * hd));
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t h = 0; h < heads; ++h)
      std::copy_n(x + (t * heads + h) * hd, hd, out.begin() + (h * rows + t) * hd);
  return out;
}

std::string two(int64_t v, int width) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%0*lld", width, static_cast<long long>(v));
  return buf;
}

}  // namespace

CaptureObserver::CaptureObserver(const Config& config, std::vector<int64_t> layers, bool residual_only)
    : config_(config), residual_only_(residual_only) {
  wanted_.assign(static_cast<size_t>(config.n_layers + 1), layers.empty() ? 1 : 0);
  for (int64_t l : layers) {
    if (l < 0 || l > config.n_layers)
      throw usage_error("capture: layer " + std::to_string(l) + " is not in 0.." + std::to_string(config.n_layers));
    wanted_[static_cast<size_t>(l)] = 1;
  }
}

bool CaptureObserver::wants(int64_t layer) const {
  return layer >= 0 && layer <= config_.n_layers && wanted_[static_cast<size_t>(layer)];
}

CaptureObserver::Record& CaptureObserver::record(const Site& site) {
  for (auto r = records_.rbegin(); r != records_.rend(); ++r)  // the newest first: a corpus capture has many
    if (r->step == site.step && r->layer == site.layer) return *r;
  records_.push_back({site.step, site.layer, first_segment_rows(site), {}, {}, {}, {}, {}});
  return records_.back();
}

void CaptureObserver::residual(const Site& site, const float* x) {
  Record& r = record(site);
  r.resid.assign(x, x + r.rows * config_.d_model);
}

void CaptureObserver::attention_input(const Site& site, const float* x) {
  if (residual_only_) return;
  Record& r = record(site);
  r.attn_in.assign(x, x + r.rows * config_.d_model);
}

void CaptureObserver::qkv(const Site& site, const float* q, const float* k, const float* v) {
  if (residual_only_) return;
  Record& r = record(site);
  r.q = head_major(q, r.rows, config_.n_heads, config_.head_dim);
  r.k = head_major(k, r.rows, config_.n_kv_heads, config_.head_dim);
  r.v = head_major(v, r.rows, config_.n_kv_heads, config_.head_dim);
}

namespace {

void write_model_attributes(nk::h5::Writer& out, const Config& c) {
  out.attr("/", "layers", c.n_layers);
  out.attr("/", "heads", c.n_heads);
  out.attr("/", "kv_heads", c.n_kv_heads);
  out.attr("/", "head_dim", c.head_dim);
  out.attr("/", "d_model", c.d_model);
  out.attr("/", "rope_theta", c.rope_theta);
  out.attr("/", "mode", mode_name(c.mode));
}

}  // namespace

void write_capture(nk::h5::Writer& out, const CaptureObserver& capture, std::span<const int32_t> tokens) {
  const Config& c = capture.config();
  int64_t last_step = 0;
  for (const auto& r : capture.records()) last_step = std::max(last_step, r.step);
  const int64_t T = static_cast<int64_t>(tokens.size());
  out.write("/capture/tokens", tokens.data(), {T}, "T");
  for (const auto& r : capture.records()) {
    if (r.step != last_step) continue;
    const std::string g = "/capture/layer_" + two(r.layer, 2);
    if (!r.resid.empty()) out.write(g + "/resid", r.resid.data(), {r.rows, c.d_model}, "T,D");
    if (!r.attn_in.empty()) out.write(g + "/attn_in", r.attn_in.data(), {r.rows, c.d_model}, "T,D");
    if (!r.q.empty()) {
      out.write(g + "/q", r.q.data(), {c.n_heads, r.rows, c.head_dim}, "H,T,d");
      out.write(g + "/k", r.k.data(), {c.n_kv_heads, r.rows, c.head_dim}, "Hkv,T,d");
      out.write(g + "/v", r.v.data(), {c.n_kv_heads, r.rows, c.head_dim}, "Hkv,T,d");
    }
  }
  write_model_attributes(out, c);
}

void write_capture_rows(nk::h5::Writer& out, const CaptureObserver& capture,
                        const std::vector<std::vector<int32_t>>& rows) {
  const Config& c = capture.config();
  const int64_t R = static_cast<int64_t>(rows.size());
  std::vector<int64_t> offsets{0};
  std::vector<int32_t> tokens;
  for (const auto& row : rows) {
    tokens.insert(tokens.end(), row.begin(), row.end());
    offsets.push_back(static_cast<int64_t>(tokens.size()));
  }
  const int64_t T = offsets.back();
  out.write("/capture/tokens", tokens.data(), {T}, "T");
  out.write("/capture/offsets", offsets.data(), {R + 1}, "R1");
  // Per layer, the records of every row in row order (a row's record has step = its index).
  std::vector<std::vector<const CaptureObserver::Record*>> by_layer(static_cast<size_t>(c.n_layers + 1),
                                                                     std::vector<const CaptureObserver::Record*>(static_cast<size_t>(R)));
  for (const auto& r : capture.records())
    if (r.step >= 0 && r.step < R) by_layer[static_cast<size_t>(r.layer)][static_cast<size_t>(r.step)] = &r;
  std::vector<float> rowwise, headwise;
  for (int64_t l = 0; l <= c.n_layers; ++l) {
    const auto& recs = by_layer[static_cast<size_t>(l)];
    if (!recs[0]) continue;
    for (int64_t r = 0; r < R; ++r)
      if (!recs[static_cast<size_t>(r)] || recs[static_cast<size_t>(r)]->rows != offsets[r + 1] - offsets[r])
        throw std::logic_error("write_capture_rows: row " + std::to_string(r) + " of layer " + std::to_string(l) + " was not captured");
    const std::string g = "/capture/layer_" + two(l, 2);
    const auto concat_rows = [&](auto member, const char* name) {
      if ((recs[0]->*member).empty()) return;
      rowwise.clear();
      for (const auto* rec : recs) rowwise.insert(rowwise.end(), (rec->*member).begin(), (rec->*member).end());
      out.write(g + "/" + name, rowwise.data(), {T, c.d_model}, "T,D");
    };
    concat_rows(&CaptureObserver::Record::resid, "resid");
    concat_rows(&CaptureObserver::Record::attn_in, "attn_in");
    const auto concat_heads = [&](auto member, const char* name, int64_t heads, const char* dims) {
      if ((recs[0]->*member).empty()) return;
      const auto hd = static_cast<size_t>(c.head_dim);
      headwise.assign(static_cast<size_t>(heads * T) * hd, 0.0f);
      for (int64_t r = 0; r < R; ++r) {
        const std::vector<float>& x = recs[static_cast<size_t>(r)]->*member;  // [heads, rows, hd]
        const int64_t n = offsets[r + 1] - offsets[r];
        for (int64_t h = 0; h < heads; ++h)
          std::copy_n(x.begin() + static_cast<std::ptrdiff_t>(h * n) * static_cast<std::ptrdiff_t>(hd),
                      static_cast<size_t>(n) * hd,
                      headwise.begin() + static_cast<std::ptrdiff_t>(h * T + offsets[r]) * static_cast<std::ptrdiff_t>(hd));
      }
      out.write(g + "/" + name, headwise.data(), {heads, T, c.head_dim}, dims);
    };
    concat_heads(&CaptureObserver::Record::q, "q", c.n_heads, "H,T,d");
    concat_heads(&CaptureObserver::Record::k, "k", c.n_kv_heads, "Hkv,T,d");
    concat_heads(&CaptureObserver::Record::v, "v", c.n_kv_heads, "Hkv,T,d");
  }
  write_model_attributes(out, c);
  out.attr("/", "rows", R);
}

void write_query_key_weights(nk::h5::Writer& out, const ParameterStore& weights, const CaptureObserver& capture) {
  const Config& c = weights.config();
  if (c.attention != AttentionKind::gqa) return;
  std::vector<char> done(static_cast<size_t>(c.n_layers + 1), 0);
  for (const auto& r : capture.records()) {
    if (r.q.empty() || r.layer >= c.n_layers || done[static_cast<size_t>(r.layer)]) continue;
    done[static_cast<size_t>(r.layer)] = 1;
    const std::string g = "/capture/layer_" + two(r.layer, 2);
    for (const auto& [part, name, heads] : {std::tuple{"self_attn.q_proj.weight", "/wq", c.n_heads},
                                            std::tuple{"self_attn.k_proj.weight", "/wk", c.n_kv_heads}}) {
      const std::span<const float> w = weights.tensor(layer_tensor(r.layer, part));  // [heads*hd, D]
      const int64_t rows = heads * c.head_dim, D = c.d_model;
      std::vector<float> t(static_cast<size_t>(rows * D));
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < D; ++j) t[static_cast<size_t>(j * rows + i)] = w[static_cast<size_t>(i * D + j)];
      out.write(g + name, t.data(), {D, rows}, heads == c.n_heads ? "D,Hq*d" : "D,Hkv*d");
    }
  }
}

void write_trajectory(nk::h5::Writer& out, const CaptureObserver& capture) {
  const Config& c = capture.config();
  int64_t written = 0;
  for (const auto& r : capture.records()) {
    if (r.q.empty()) continue;
    const std::string g = "/layers/" + two(r.layer, 2) + "/steps/" + two(r.step, 3);
    out.write(g + "/q", r.q.data(), {c.n_heads, r.rows, c.head_dim}, "H,L,d");
    out.write(g + "/k", r.k.data(), {c.n_kv_heads, r.rows, c.head_dim}, "Hkv,L,d");
    out.write(g + "/v", r.v.data(), {c.n_kv_heads, r.rows, c.head_dim}, "Hkv,L,d");
    ++written;
  }
  if (written == 0) throw usage_error("capture: no q/k/v were captured for the trajectory");
}

void write_louver_kv(nk::h5::Writer& out, const CaptureObserver& capture, int64_t layer, int64_t queries) {
  const Config& c = capture.config();
  const CaptureObserver::Record* last = nullptr;
  for (const auto& r : capture.records())
    if (r.layer == layer && !r.q.empty() && (!last || r.step > last->step)) last = &r;
  if (!last) throw usage_error("capture: layer " + std::to_string(layer) + "'s keys were not captured");
  const int64_t T = last->rows, M = std::min(queries > 0 ? queries : T, T), hd = c.head_dim;
  out.write("/keys", last->k.data(), {c.n_kv_heads, T, hd}, "H,N,d");
  out.write("/values", last->v.data(), {c.n_kv_heads, T, hd}, "H,N,dv");
  std::vector<float> q(static_cast<size_t>(c.n_heads * M * hd));
  for (int64_t h = 0; h < c.n_heads; ++h)
    std::copy_n(last->q.begin() + (h * T + T - M) * hd, M * hd, q.begin() + h * M * hd);
  out.write("/queries", q.data(), {c.n_heads, M, hd}, "Hq,M,d");
  out.attr("/", "layer", layer);
  out.attr("/", "rope_theta", c.rope_theta);
}

}  // namespace nk::lm
