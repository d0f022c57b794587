// trace.hpp - a capture file as the verbs read it: /capture/layer_LL/{attn_in
// [T,D], q [Hq,T,d], k and v [Hkv,T,d]} for layers 0..L-1, an optional
// leading batch axis on all of them, root attribute rope_theta. A capture of
// many rows (nk-lm capture --corpus: rows of any lengths concatenated along
// T, with /capture/offsets [R+1]) is read as R sequences.
//
// In memory every layer's data is sequence-major: attn_in [total, D], and
// q, k, v [sequence][heads][T_s][d], sequence s starting at token offset[s].
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nk/h5.hpp"
#include "nk/lm/block_select.hpp"

namespace sparda {

struct Trace {
  enum class Layout { single, batched, packed };  ///< [H,T,d]; [B,H,T,d]; [H,total,d] + /capture/offsets
  nk::h5::File file;
  int64_t layers = 0, heads = 0, kv_heads = 0, head_dim = 0, d_model = 0;
  std::vector<int64_t> offsets;  ///< sequence s is tokens offsets[s] .. offsets[s+1]
  double rope_theta = 1e4;
  Layout layout = Layout::single;

  int64_t sequences() const { return static_cast<int64_t>(offsets.size()) - 1; }
  int64_t length(int64_t s) const { return offsets[s + 1] - offsets[s]; }
  int64_t total() const { return offsets.back(); }
  int64_t longest() const;

  /// Opens and checks a trace from its metadata (every layer's shapes, the
  /// attribute), reading no data. Every failure is exit 3 naming file,
  /// dataset and layer.
  static Trace open(const std::string& path);
  const std::string& path() const { return file.path(); }
  int64_t group() const { return heads / kv_heads; }

  /// "/capture/layer_LL/what".
  static std::string name(int64_t layer, const std::string& what);
  /// One layer's dataset as float, sequence-major (see above), checked finite.
  std::vector<float> read(int64_t layer, const std::string& what) const;
  /// The shape an output of 'per_token' values per head and token takes in
  /// this trace's layout, e.g. [Hkv, T, K] or [B, Hkv, T, K], with its dims
  /// text; and sequence-major data [seq][heads][T_s][per_token] put in it.
  std::vector<int64_t> output_shape(int64_t heads, int64_t per_token) const;
  std::string output_dims(const std::string& per_token) const;
  std::vector<int32_t> to_layout(const std::vector<int32_t>& seq_major, int64_t heads, int64_t per_token) const;
  bool has(int64_t layer, const std::string& what) const { return file.has(name(layer, what)); }

 private:
  explicit Trace(nk::h5::File f) : file(std::move(f)) {}
};

/// --positions A:B (A..B-1) inside 0:T; empty: 0:T. A usage error otherwise.
std::pair<int64_t, int64_t> parse_positions(const std::string& text, int64_t T);

/// Exit 3 unless the longest sequence holds a complete block and --topk is
/// not above its number of complete blocks.
void require_selector(const Trace& trace, const nk::lm::BlockSelectorConfig& sel);

}  // namespace sparda
