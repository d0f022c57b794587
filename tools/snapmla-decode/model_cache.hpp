// model_cache.hpp - an MLA model's absorbed decoding over a cache kept in one
// of the row layouts: each layer's new rows [c, k_R] are encoded as they are
// appended (quantize on append), and every query attends through the paged
// kernel to its own prefix (causal). Because a row's scale is its own, a
// teacher-forced pass (all of a window's queries at once) reads exactly the
// bytes that decoding token by token reads.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nk/lm/checkpoint.hpp"
#include "nk/lm/model.hpp"
#include "snapmla-decode/format.hpp"
#include "snapmla-decode/kernel.hpp"

namespace snapmla {

class LayoutMlaCache : public nk::lm::MlaBackend {
 public:
  /// A cache of 'slots' sequences of an mla model's layers in 'layout'; the
  /// kernel's options (PV mode, query form) as attend's, one split per query
  /// (a query's result does not depend on the others in its batch).
  LayoutMlaCache(const nk::lm::Config& config, Layout layout, Pv pv, bool q_fp32, int64_t slots, int threads);
  int64_t length(int32_t slot) const override;
  void attend(const nk::lm::MlaCall& call, float* latent) override;
  /// Empties every slot (the next window starts at position 0).
  void clear();
  /// The largest |c| and |k_R| appended since construction (the value ranges of the model's own caches).
  float c_amax() const { return c_amax_; }
  float kr_amax() const { return kr_amax_; }

 private:
  struct Rows {
    std::vector<uint8_t> bytes;  // pages of kPageTokens rows, grown a page at a time
    int64_t count = 0;
  };
  Layout layout_;
  AttendOptions options_;
  int64_t layers_, dc_, dr_, row_bytes_;
  std::vector<std::vector<Rows>> rows_;  // [slot][layer]
  std::vector<int32_t> table_, lengths_;
  float c_amax_ = 0, kr_amax_ = 0;
};

/// Held-out text for a model: the validation split of an nk-lm corpus
/// (documents joined by EOS; corpus_path) or a text file (text_path), cut
/// into chunks of 'context' tokens (0: the model's context) of which
/// 'windows' are taken, spread evenly over the text. Usage errors (exit 2,
/// prefixed by 'verb') for a context beyond the model's, a model without a
/// tokenizer, a corpus of another tokenizer, text shorter than one window.
std::vector<std::vector<int32_t>> held_out_windows(const nk::lm::Checkpoint& ck, const std::string& model,
                                                   const std::string& corpus_path, const std::string& text_path,
                                                   int64_t windows, int64_t context, const std::string& verb);

}  // namespace snapmla
