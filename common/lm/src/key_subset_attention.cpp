// key_subset_attention.cpp - decoding through a key index: the selectors
// (Louver, Quest, IVF over nk::kernels' shared index code) and the backend
// that attends over the keys they return (see the header).
#include "nk/lm/key_subset_attention.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <string>

#include "nk/error.hpp"
#include "nk/kernels/louver_codes.hpp"
#include "nk/kernels/louver_ivf.hpp"
#include "nk/kernels/louver_quest.hpp"
#include "nk/kernels/louver_search.hpp"
#include "nk/rng.hpp"
#include "nk/timer.hpp"

namespace nk::lm {

namespace louver = nk::louver;

namespace {

/// Keys a budget share of 'keys' names (at least one).
int64_t budget_keys(double share, int64_t keys) {
  return std::clamp<int64_t>(static_cast<int64_t>(std::ceil(share * static_cast<double>(keys))), 1, keys);
}

/// Streams are created on first use; build() and append() run on the
/// caller's thread between forwards' parallel phases, select() only reads.
template <class State>
class Streams {
 public:
  State& operator[](int64_t stream) { return states_[stream]; }
  const State& at(int64_t stream) const {
    const auto it = states_.find(stream);
    if (it == states_.end()) throw usage_error("key selector: stream " + std::to_string(stream) + " has no keys yet");
    return it->second;
  }

 private:
  std::map<int64_t, State> states_;
};

/// Louver: exactly the keys with q.k >= T (louver-index's index and search).
class LouverSelector : public KeySelector {
 public:
  LouverSelector(const KeySelectorOptions& o, int64_t dims) : o_(o), dims_(dims) {
    params_.subspaces = o.subspaces > 0 ? o.subspaces : std::max<int64_t>(1, dims / 4);
    params_.leaf_size = o.leaf_size;
    params_.buffer = o.buffer;
    sub_ = louver::Subspaces::split(dims, params_.subspaces);
  }
  void build(int64_t stream, const float* keys, int64_t n) override {
    louver::HeadIndex& head = heads_[stream];
    head = louver::HeadIndex{};
    head.keys.assign(keys, keys + n * dims_);
    louver::build_codes(head, sub_, params_);
    louver::finish_head(head, dims_);
  }
  void append(int64_t stream, const float* keys, int64_t n) override {
    louver::append_keys(heads_[stream], sub_, params_, keys, nullptr, n, 0, louver::RebuildRule{});
  }
  void select(int64_t stream, const float* q, int64_t position, double scale, uint64_t draw,
              std::vector<int64_t>& ids) const override {
    const louver::HeadIndex& head = heads_.at(stream);
    const int64_t n = head.size(dims_);
    double t = o_.threshold;
    if (o_.topk > 0) {
      t = louver::kth_score(head, q, dims_, o_.topk);
    } else if (o_.mass > 0) {
      // Any set of distinct keys gives Z_S <= Z; the first keys (attention
      // sinks) and the most recent ones usually carry much of the mass, so
      // they join the sample and tighten T. The others are evenly strided
      // from a seeded offset (distinct without a draw per key or a sort).
      constexpr int64_t kFirst = 4, kRecent = 32;
      thread_local std::vector<int64_t> sample;
      sample.clear();
      if (n <= kFirst + kRecent + o_.mass_sample) {
        for (int64_t i = 0; i < n; ++i) sample.push_back(i);
      } else {
        for (int64_t i = 0; i < kFirst; ++i) sample.push_back(i);
        const double stride = static_cast<double>(n - kFirst - kRecent) / static_cast<double>(o_.mass_sample);
        const double offset = stride * nk::Rng(o_.seed).split(static_cast<uint64_t>(stream)).split(draw).uniform();
        for (int64_t i = 0; i < o_.mass_sample; ++i)
          sample.push_back(kFirst + std::min(n - kFirst - kRecent - 1, static_cast<int64_t>(offset + stride * static_cast<double>(i))));
        for (int64_t i = n - kRecent; i < n; ++i) sample.push_back(i);
      }
      t = louver::mass_threshold(head, q, dims_, o_.mass, scale, sample);
    }
    ids.clear();
    for (const louver::Hit& hit : louver::search(head, sub_, q, t).hits)
      if (hit.id <= position) ids.push_back(hit.id);
  }

 private:
  KeySelectorOptions o_;
  int64_t dims_;
  louver::IndexParams params_;
  louver::Subspaces sub_;
  Streams<louver::HeadIndex> heads_;
};

/// Quest: the pages of 'page_size' consecutive keys with the largest
/// channel-bound scores, up to the budget; every key of a chosen page is read.
class QuestSelector : public KeySelector {
 public:
  QuestSelector(const KeySelectorOptions& o, int64_t dims) : o_(o), dims_(dims) {}
  void build(int64_t stream, const float* keys, int64_t n) override {
    State& st = streams_[stream];
    st = State{};
    st.pages.page_size = o_.page_size;
    louver::extend_pages(st.pages, keys, 0, n, dims_);
    st.keys = n;
  }
  void append(int64_t stream, const float* keys, int64_t n) override {
    State& st = streams_[stream];
    louver::extend_pages(st.pages, keys, st.keys, n, dims_);
    st.keys += n;
  }
  void select(int64_t stream, const float* q, int64_t position, double, uint64_t, std::vector<int64_t>& ids) const override {
    const State& st = streams_.at(stream);
    const int64_t keys = std::min(st.keys, position + 1);
    ids.clear();
    // The page the query's own token fills is always read (Quest's implementation keeps it).
    for (int64_t page : louver::quest_pages(st.pages, keys, q, dims_, budget_keys(o_.budget, keys), (keys - 1) / o_.page_size))
      for (int64_t i = page * o_.page_size; i < std::min(keys, (page + 1) * o_.page_size); ++i) ids.push_back(i);
  }

 private:
  struct State {
    louver::Pages pages;
    int64_t keys = 0;
  };
  KeySelectorOptions o_;
  int64_t dims_;
  Streams<State> streams_;
};

/// IVF: k-means lists over the prompt's keys (new keys join their nearest
/// list), the lists with the highest q . centroid probed up to the budget.
class IvfSelector : public KeySelector {
 public:
  IvfSelector(const KeySelectorOptions& o, int64_t dims) : o_(o), dims_(dims) {}
  void build(int64_t stream, const float* keys, int64_t n) override {
    const int64_t lists = o_.lists > 0 ? o_.lists : louver::default_lists(n);
    streams_[stream] = louver::build_ivf(keys, n, dims_, lists, o_.iterations, nk::Rng(o_.seed).split(static_cast<uint64_t>(stream))());
  }
  void append(int64_t stream, const float* keys, int64_t n) override { louver::ivf_add(streams_[stream], keys, n); }
  void select(int64_t stream, const float* q, int64_t position, double, uint64_t, std::vector<int64_t>& ids) const override {
    const louver::Ivf& ivf = streams_.at(stream);
    const int64_t keys = std::min(ivf.size, position + 1);
    ids.clear();
    for (int64_t list : louver::ivf_probe(ivf, q, budget_keys(o_.budget, keys)))
      for (int64_t id : ivf.lists[static_cast<size_t>(list)])
        if (id <= position) ids.push_back(id);
    std::sort(ids.begin(), ids.end());
  }

 private:
  KeySelectorOptions o_;
  int64_t dims_;
  Streams<louver::Ivf> streams_;
};

/// out = sum_j softmax(scale q.k_j) v_j over the keys key_of(0..count-1),
/// in float as the model's own decoding attention (a running maximum, then
/// one pass of exponentials and the weighted sum); 'logits' holds count floats.
template <class KeyOf>
void attend_keys(const float* q, int64_t count, KeyOf key_of, const float* keys, const float* values, int64_t hd, double scale,
                 float* out, std::vector<float>& logits) {
  logits.resize(static_cast<size_t>(count));
  const auto s = static_cast<float>(scale);
  float top = -INFINITY;
  for (int64_t j = 0; j < count; ++j) {
    const float* k = keys + key_of(j) * hd;
    float dot = 0;
#pragma omp simd reduction(+ : dot)
    for (int64_t e = 0; e < hd; ++e) dot += q[e] * k[e];
    logits[static_cast<size_t>(j)] = s * dot;
    top = std::max(top, logits[static_cast<size_t>(j)]);
  }
  float z = 0;
  for (int64_t e = 0; e < hd; ++e) out[e] = 0;
  for (int64_t j = 0; j < count; ++j) {
    const float p = std::exp(logits[static_cast<size_t>(j)] - top);
    z += p;
    const float* v = values + key_of(j) * hd;
#pragma omp simd
    for (int64_t e = 0; e < hd; ++e) out[e] += p * v[e];
  }
  const float inv = count ? 1.0f / z : 0.0f;
  for (int64_t e = 0; e < hd; ++e) out[e] *= inv;
}

}  // namespace

std::unique_ptr<KeySelector> make_key_selector(const KeySelectorOptions& o, int64_t head_dim) {
  if (o.method == "dense") return nullptr;
  if (o.method == "louver") {
    const int given = static_cast<int>(o.has_threshold) + static_cast<int>(o.mass > 0) + static_cast<int>(o.topk > 0);
    if (given != 1) throw usage_error("key selector louver: give exactly one of a threshold, a mass and a top-k");
    if (o.mass >= 1) throw usage_error("key selector louver: the mass must be in (0, 1)");
    if (o.has_threshold && std::isnan(o.threshold)) throw usage_error("key selector louver: the threshold is NaN");
    if (o.leaf_size < 2 || o.buffer < 1 || o.mass_sample < 1) throw usage_error("key selector louver: leaf size >= 2, buffer and mass sample >= 1");
    if (o.subspaces > head_dim)
      throw usage_error("key selector louver: " + std::to_string(o.subspaces) + " subspaces for head_dim " + std::to_string(head_dim));
    return std::make_unique<LouverSelector>(o, head_dim);
  }
  if (o.method == "quest" || o.method == "ivf") {
    if (!(o.budget > 0 && o.budget <= 1)) throw usage_error("key selector " + o.method + ": the budget must be in (0, 1]");
    if (o.method == "quest") {
      if (o.page_size < 1) throw usage_error("key selector quest: the page size must be >= 1");
      return std::make_unique<QuestSelector>(o, head_dim);
    }
    if (o.lists < 0 || o.iterations < 0) throw usage_error("key selector ivf: lists and iterations must be >= 0");
    return std::make_unique<IvfSelector>(o, head_dim);
  }
  throw usage_error("key selector: unknown method '" + o.method + "' (dense, louver, quest, ivf)");
}

KeySubsetAttention::KeySubsetAttention(const Config& c, KeySelector* selector, int64_t slots, bool measure_missed)
    : selector_(selector),
      measure_(measure_missed),
      layers_(c.n_layers),
      heads_(c.n_heads),
      kv_heads_(c.n_kv_heads),
      head_dim_(c.head_dim),
      length_(static_cast<size_t>(slots), 0),
      k_(static_cast<size_t>(slots * c.n_layers * c.n_kv_heads)),
      v_(k_.size()) {
  if (c.mode != Mode::causal) throw usage_error("key index: decoding through an index needs a causal model (this one is diffusion)");
  if (c.mla() || c.sparse)
    throw usage_error("key index: needs a grouped-query model with dense attention (this one is " +
                      std::string(c.mla() ? "mla" : "sparse-gqa") + ")");
}

void KeySubsetAttention::reset(int32_t slot) {
  length_.at(static_cast<size_t>(slot)) = 0;
  for (int64_t l = 0; l < layers_; ++l)
    for (int64_t g = 0; g < kv_heads_; ++g) {
      k_[static_cast<size_t>(stream(slot, l, g))].clear();
      v_[static_cast<size_t>(stream(slot, l, g))].clear();
    }
}

void KeySubsetAttention::attend(const AttentionCall& call, float* out) {
  if (!call.causal) throw usage_error("key index: causal attention only");
  const TokenBatch& b = *call.batch;
  const int64_t S = b.segments(), H = heads_, G = kv_heads_, hd = head_dim_, group = H / G;
  const int64_t qs = H * hd, kvs = G * hd;
  const int64_t layer = call.layer;
  // New rows into the per-stream caches; the selector's index follows.
  std::vector<int64_t> first(static_cast<size_t>(S));
  for (int64_t s = 0; s < S; ++s) {
    const int32_t slot = b.slots[static_cast<size_t>(s)];
    if (slot < 0 || slot >= static_cast<int32_t>(length_.size())) throw usage_error("key index: slot " + std::to_string(slot) + " outside the backend's");
    const int64_t begin = b.offsets[static_cast<size_t>(s)], n = b.offsets[static_cast<size_t>(s + 1)] - begin;
    first[static_cast<size_t>(s)] = length_[static_cast<size_t>(slot)];
    for (int64_t g = 0; g < G; ++g) {
      std::vector<float>& K = k_[static_cast<size_t>(stream(slot, layer, g))];
      std::vector<float>& V = v_[static_cast<size_t>(stream(slot, layer, g))];
      for (int64_t i = 0; i < n; ++i) {
        K.insert(K.end(), call.k + (begin + i) * kvs + g * hd, call.k + (begin + i) * kvs + (g + 1) * hd);
        V.insert(V.end(), call.v + (begin + i) * kvs + g * hd, call.v + (begin + i) * kvs + (g + 1) * hd);
      }
    }
  }
  // The prompt (a slot's first forward): dense causal attention, then the index.
  std::vector<std::pair<int64_t, int64_t>> tasks;  // decoding (row, head)
  for (int64_t s = 0; s < S; ++s) {
    const int32_t slot = b.slots[static_cast<size_t>(s)];
    const int64_t begin = b.offsets[static_cast<size_t>(s)], n = b.offsets[static_cast<size_t>(s + 1)] - begin;
    if (first[static_cast<size_t>(s)] > 0) {
      for (int64_t i = 0; i < n; ++i)
        for (int64_t h = 0; h < H; ++h) tasks.emplace_back(begin + i, h);
      continue;
    }
    auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel for schedule(static)
    for (int64_t task = 0; task < n * H; ++task) {
      const int64_t i = task / H, h = task % H, st = stream(slot, layer, h / group);
      thread_local std::vector<float> logits;
      attend_keys(call.q + (begin + i) * qs + h * hd, i + 1, [](int64_t j) { return j; }, k_[static_cast<size_t>(st)].data(),
                  v_[static_cast<size_t>(st)].data(), hd, call.scale, out + (begin + i) * qs + h * hd, logits);
    }
    stats_.prefill_seconds += nk::seconds_since(t0);
    if (selector_) {
      t0 = std::chrono::steady_clock::now();
      for (int64_t g = 0; g < G; ++g) selector_->build(stream(slot, layer, g), k_[static_cast<size_t>(stream(slot, layer, g))].data(), n);
      stats_.build_seconds += nk::seconds_since(t0);
    }
  }
  if (!tasks.empty()) {
    auto t0 = std::chrono::steady_clock::now();
    if (selector_) {
      for (int64_t s = 0; s < S; ++s) {
        if (first[static_cast<size_t>(s)] == 0) continue;
        const int32_t slot = b.slots[static_cast<size_t>(s)];
        const int64_t n = b.offsets[static_cast<size_t>(s + 1)] - b.offsets[static_cast<size_t>(s)];
        for (int64_t g = 0; g < G; ++g)
          selector_->append(stream(slot, layer, g), k_[static_cast<size_t>(stream(slot, layer, g))].data() + first[static_cast<size_t>(s)] * hd, n);
      }
    }
    stats_.append_seconds += nk::seconds_since(t0);
    // Which segment a row belongs to, for its slot and position.
    std::vector<int64_t> seg_of(static_cast<size_t>(b.rows()));
    for (int64_t s = 0; s < S; ++s)
      for (int64_t r = b.offsets[static_cast<size_t>(s)]; r < b.offsets[static_cast<size_t>(s + 1)]; ++r) seg_of[static_cast<size_t>(r)] = s;
    const auto T = static_cast<int64_t>(tasks.size());
    ids_.resize(static_cast<size_t>(T));
    auto where = [&](int64_t task, int64_t& slot, int64_t& position) {
      const auto [row, h] = tasks[static_cast<size_t>(task)];
      const int64_t s = seg_of[static_cast<size_t>(row)];
      slot = b.slots[static_cast<size_t>(s)];
      position = first[static_cast<size_t>(s)] + row - b.offsets[static_cast<size_t>(s)];
    };
    t0 = std::chrono::steady_clock::now();
    if (selector_) {
#pragma omp parallel for schedule(dynamic, 1)
      for (int64_t task = 0; task < T; ++task) {
        int64_t slot = 0, position = 0;
        where(task, slot, position);
        const auto [row, h] = tasks[static_cast<size_t>(task)];
        selector_->select(stream(static_cast<int32_t>(slot), layer, h / group), call.q + row * qs + h * hd, position, call.scale,
                          static_cast<uint64_t>(position * H + h), ids_[static_cast<size_t>(task)]);
      }
    }
    stats_.select_seconds += nk::seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    std::vector<double> missed(measure_ ? static_cast<size_t>(T) : 0);
#pragma omp parallel for schedule(static)
    for (int64_t task = 0; task < T; ++task) {
      int64_t slot = 0, position = 0;
      where(task, slot, position);
      const auto [row, h] = tasks[static_cast<size_t>(task)];
      const int64_t st = stream(static_cast<int32_t>(slot), layer, h / group);
      const float* q = call.q + row * qs + h * hd;
      const float* K = k_[static_cast<size_t>(st)].data();
      const float* V = v_[static_cast<size_t>(st)].data();
      thread_local std::vector<float> logits;
      if (selector_) {
        const std::vector<int64_t>& ids = ids_[static_cast<size_t>(task)];
        attend_keys(q, static_cast<int64_t>(ids.size()), [&](int64_t j) { return ids[static_cast<size_t>(j)]; }, K, V, hd,
                    call.scale, out + row * qs + h * hd, logits);
      } else {
        attend_keys(q, position + 1, [](int64_t j) { return j; }, K, V, hd, call.scale, out + row * qs + h * hd, logits);
      }
      if (measure_) {
        // The whole softmax over keys 0..position, and the share the selection holds.
        std::vector<double> all(static_cast<size_t>(position + 1));
        double top = -INFINITY;
        for (int64_t j = 0; j <= position; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < hd; ++e) dot += static_cast<double>(q[e]) * K[j * hd + e];
          all[static_cast<size_t>(j)] = call.scale * dot;
          top = std::max(top, all[static_cast<size_t>(j)]);
        }
        double z = 0, kept = 0;
        for (double& l : all) z += (l = std::exp(l - top));
        if (selector_) {
          for (int64_t id : ids_[static_cast<size_t>(task)]) kept += all[static_cast<size_t>(id)];
        } else {
          kept = z;
        }
        missed[static_cast<size_t>(task)] = std::max(0.0, 1.0 - kept / z);
      }
    }
    stats_.attend_seconds += nk::seconds_since(t0);
    for (int64_t task = 0; task < T; ++task) {
      int64_t slot = 0, position = 0;
      where(task, slot, position);
      ++stats_.queries;
      stats_.keys += position + 1;
      stats_.read += selector_ ? static_cast<int64_t>(ids_[static_cast<size_t>(task)].size()) : position + 1;
      if (measure_) {
        stats_.missed_sum += missed[static_cast<size_t>(task)];
        stats_.missed_max = std::max(stats_.missed_max, missed[static_cast<size_t>(task)]);
      }
    }
  }
  if (layer == layers_ - 1)
    for (int64_t s = 0; s < S; ++s) length_[static_cast<size_t>(b.slots[static_cast<size_t>(s)])] += b.offsets[static_cast<size_t>(s + 1)] - b.offsets[static_cast<size_t>(s)];
}

}  // namespace nk::lm
