// key_subset_attention.hpp - Louver inside the causal model: decoding where
// each layer's query heads read only the cached keys a KeySelector returns
// (Louver's halfspace range search at a threshold, Quest's top pages or IVF's
// probed lists at a budget, or every key), with the softmax over those keys
// alone. The index of each (sequence, layer, KV head) is built once over the
// prompt's keys after its prefill and appended to at every generated token.
// Plugged into generate_causal through GenerateOptions::attention.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nk/lm/model.hpp"

namespace nk::lm {

/// Which of a stream's cached keys a decoding query reads. A stream is one
/// (slot, layer, KV head); its keys arrive in order: the prompt's at once
/// (build), then one or a few per forward (append). select() is called from
/// several threads at once (different streams or the same one), so it must
/// not change the selector.
class KeySelector {
 public:
  virtual ~KeySelector() = default;
  /// The stream's first keys [n, d] (the prompt's): the index is built over
  /// them, forgetting whatever the stream held.
  virtual void build(int64_t stream, const float* keys, int64_t n) = 0;
  virtual void append(int64_t stream, const float* keys, int64_t n) = 0;
  /// The ids (ascending) of the stream's keys that query q reads; 'position'
  /// is the query's own (keys after it are not returned). 'draw' keys the
  /// selector's random choices (a sample), so they do not depend on threads.
  virtual void select(int64_t stream, const float* q, int64_t position, double scale, uint64_t draw,
                      std::vector<int64_t>& ids) const = 0;
};

struct KeySelectorOptions {
  std::string method = "dense";  ///< dense | louver | quest | ivf
  // louver: exactly one of threshold, mass, topk gives T per query.
  bool has_threshold = false;
  double threshold = 0;      ///< T on q.k (unscaled, as louver-index)
  double mass = 0;           ///< T that keeps this share of the softmax mass (louver-index --mass)
  int64_t topk = 0;          ///< T = the k-th largest score (the oracle)
  int64_t mass_sample = 256; ///< distinct keys sampled for --mass (besides the first and recent keys)
  int64_t subspaces = 0;     ///< 0: head_dim / 4
  int64_t leaf_size = 16;
  int64_t buffer = 64;
  // quest, ivf: the share of the keys read per query.
  double budget = 0.1;
  int64_t page_size = 16;    ///< quest
  int64_t lists = 0;         ///< ivf: 0 = sqrt(prompt keys)
  int64_t iterations = 10;   ///< ivf k-means rounds
  uint64_t seed = 0;
};

/// The selector for options.method; a usage error (exit 2) for a method or
/// an option out of range. 'dense' returns null (every key is read).
std::unique_ptr<KeySelector> make_key_selector(const KeySelectorOptions& options, int64_t head_dim);

class KeySubsetAttention : public AttentionBackend {
 public:
  /// A grouped-query causal model's config; 'selector' null reads every key
  /// (the dense reference through the same code). With 'measure_missed',
  /// every decoding query also scores all its keys to measure the softmax
  /// mass the selection left out (a diagnostic; costs a dense pass).
  KeySubsetAttention(const Config& config, KeySelector* selector, int64_t slots, bool measure_missed = false);
  int64_t length(int32_t slot) const override { return length_.at(static_cast<size_t>(slot)); }
  void reset(int32_t slot) override;
  /// A slot's first forward (its prompt) attends densely and causally, then
  /// builds the selector's index over its keys; later forwards append their
  /// keys and read the selected ones.
  void attend(const AttentionCall& call, float* out) override;

  struct Stats {
    int64_t queries = 0;          ///< decoding (query head, token) pairs
    int64_t read = 0, keys = 0;   ///< keys read and keys there were, summed over them
    double missed_max = 0, missed_sum = 0;  ///< softmax mass left out (measure_missed)
    double prefill_seconds = 0, build_seconds = 0;   ///< dense prompt attention; index builds
    double append_seconds = 0, select_seconds = 0, attend_seconds = 0;  ///< per decoding step, summed
    double density() const { return keys ? static_cast<double>(read) / static_cast<double>(keys) : 1.0; }
  };
  const Stats& stats() const { return stats_; }

 private:
  int64_t stream(int32_t slot, int64_t layer, int64_t g) const { return (slot * layers_ + layer) * kv_heads_ + g; }

  KeySelector* selector_;
  bool measure_;
  int64_t layers_, heads_, kv_heads_, head_dim_;
  std::vector<int64_t> length_;
  std::vector<std::vector<float>> k_, v_;  ///< per stream: [tokens, hd]
  std::vector<std::vector<int64_t>> ids_;  ///< per (row, head) task of a call
  Stats stats_;
};

}  // namespace nk::lm
