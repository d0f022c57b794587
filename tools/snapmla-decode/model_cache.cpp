// model_cache.cpp - quantize-on-append MLA caches for a model's decoding.
#include "snapmla-decode/model_cache.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>

#include "nk/error.hpp"
#include "nk/lm/corpus.hpp"

namespace snapmla {

LayoutMlaCache::LayoutMlaCache(const nk::lm::Config& config, Layout layout, Pv pv, bool q_fp32, int64_t slots,
                               int threads)
    : layout_(layout), layers_(config.n_layers), dc_(config.kv_rank), dr_(config.rope_dim) {
  if (!config.mla()) throw nk::usage_error("the model is not an mla model (its attention is gqa)");
  if (layout == Layout::flashmla656 && dc_ % kFlashTile != 0)
    throw nk::usage_error("flashmla656 needs d_c a multiple of 128; the model's kv_rank is " + std::to_string(dc_));
  row_bytes_ = row_bytes(layout, dc_, dr_);
  options_.pv = pv;
  options_.splits = 1;
  options_.q_fp32 = q_fp32 && layout == Layout::snapmla644;
  options_.threads = threads;
  rows_.assign(static_cast<size_t>(slots), std::vector<Rows>(static_cast<size_t>(layers_)));
}

int64_t LayoutMlaCache::length(int32_t slot) const {
  if (slot < 0 || slot >= static_cast<int32_t>(rows_.size()))
    throw nk::usage_error("no cache slot " + std::to_string(slot));
  return rows_[static_cast<size_t>(slot)].back().count;
}

void LayoutMlaCache::clear() {
  for (auto& slot : rows_)
    for (Rows& r : slot) r.bytes.clear(), r.count = 0;
}

void LayoutMlaCache::attend(const nk::lm::MlaCall& call, float* latent) {
  const nk::lm::TokenBatch& batch = *call.batch;
  const int64_t H = call.heads, dk = dc_ + dr_, page_bytes = kPageTokens * row_bytes_;
  options_.softmax_scale = static_cast<float>(call.scale);
  for (int64_t s = 0; s < batch.segments(); ++s) {
    const int32_t slot = batch.slots[static_cast<size_t>(s)];
    Rows& rows = rows_.at(static_cast<size_t>(slot)).at(static_cast<size_t>(call.layer));
    const int64_t begin = batch.offsets[static_cast<size_t>(s)], n = batch.offsets[static_cast<size_t>(s + 1)] - begin;
    const int64_t first = rows.count;
    // Quantize on append: each new row encoded once into its page.
    for (int64_t i = 0; i < n; ++i) {
      const int64_t r = first + i;
      if (r % kPageTokens == 0) rows.bytes.resize(static_cast<size_t>((r / kPageTokens + 1) * page_bytes), 0);
      const float* c = call.ckv + (begin + i) * dc_;
      const float* kr = call.kpe + (begin + i) * dr_;
      for (int64_t e = 0; e < dc_; ++e) c_amax_ = std::max(c_amax_, std::fabs(c[e]));
      for (int64_t e = 0; e < dr_; ++e) kr_amax_ = std::max(kr_amax_, std::fabs(kr[e]));
      encode_row(layout_, c, kr, dc_, dr_, rows.bytes.data() + r * row_bytes_);
    }
    rows.count = first + n;
    // Query i sees rows 0 .. first + i (causal) or all: one batch row of the kernel each, over the same pages.
    const int64_t pages = (rows.count + kPageTokens - 1) / kPageTokens;
    table_.resize(static_cast<size_t>(n * pages));
    lengths_.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t p = 0; p < pages; ++p) table_[static_cast<size_t>(i * pages + p)] = static_cast<int32_t>(p);
      lengths_[static_cast<size_t>(i)] = static_cast<int32_t>(call.causal ? first + i + 1 : rows.count);
    }
    PagedView view;
    view.layout = layout_, view.dc = dc_, view.dr = dr_, view.row_bytes = row_bytes_;
    view.pages = rows.bytes.data(), view.page_count = pages;
    view.block_table = table_.data(), view.max_pages = pages;
    view.lengths = lengths_.data(), view.batch = n;
    std::vector<float> lse(static_cast<size_t>(n * H));
    snapmla::attend(view, call.q + begin * H * dk, H, 0, n, options_, latent + begin * H * dc_, lse.data());
  }
}

std::vector<std::vector<int32_t>> held_out_windows(const nk::lm::Checkpoint& ck, const std::string& model,
                                                   const std::string& corpus_path, const std::string& text_path,
                                                   int64_t windows_wanted, int64_t context, const std::string& verb) {
  const nk::lm::Config& c = ck.weights.config();
  const int64_t T = context > 0 ? context : c.max_seq;
  if (T < 2 || T > c.max_seq)
    throw nk::usage_error(verb + ": --context must be in 2.." + std::to_string(c.max_seq) + " (the model's context)");
  if (!ck.tokenizer) throw nk::usage_error(verb + ": " + model + " has no tokenizer");
  std::vector<int32_t> stream;
  if (!text_path.empty()) {
    std::ifstream f(text_path, std::ios::binary);
    if (!f) throw nk::io_error(text_path, "cannot read");
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    stream = ck.tokenizer->encode(text);
  } else {
    const nk::lm::Corpus corpus = nk::lm::Corpus::open(corpus_path);
    if (corpus.tokenizer().fingerprint() != ck.tokenizer->fingerprint())
      throw nk::usage_error(verb + ": " + corpus_path + " was cut with another tokenizer than " + model + "'s");
    stream = corpus.stream(nk::lm::Split::validation);
  }
  // The stream's chunks of T tokens, W of them spread evenly over it (the
  // corpus's documents come grouped by source: the first W would see one).
  const int64_t chunks = static_cast<int64_t>(stream.size()) / T, W = std::min(windows_wanted, chunks);
  std::vector<std::vector<int32_t>> windows;
  for (int64_t w = 0; w < W; ++w) {
    const int64_t k = w * chunks / W;
    windows.emplace_back(stream.begin() + k * T, stream.begin() + (k + 1) * T);
  }
  if (windows.empty())
    throw nk::usage_error(verb + ": the held-out text has " + std::to_string(stream.size()) +
                          " tokens, fewer than one window of " + std::to_string(T));
  return windows;
}

}  // namespace snapmla
