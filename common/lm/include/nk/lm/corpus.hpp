// corpus.hpp - a tokenised corpus in HDF5 (nk-lm.corpus/1) and the
// deterministic batches training draws from it.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "nk/lm/text.hpp"
#include "nk/lm/tokenizer.hpp"

namespace nk::lm {

enum class Split : int8_t { train = 0, validation = 1 };

struct CorpusOptions {
  double validation = 0.02;          ///< fraction of documents, chosen by a hash of the name (not by order)
  std::vector<std::string> exclude;  ///< document names kept out of the file altogether
};

/// Whether the document of this name is in the validation split at this
/// fraction (the hash write_corpus uses; the tokenizer learns only from the
/// others).
bool in_validation(std::string_view name, double fraction);

/// Writes nk-lm.corpus/1: /tokens int32 [N] (every document's tokens, one
/// after another), /doc_offsets int64 [D+1], /doc_bytes int64 [D], /split int8
/// [D] (0 train, 1 validation), /names [D] strings, the tokenizer under
/// /tokenizer, root attrs documents, tokens, sources, validation. Atomic
/// (nk::h5::Writer). Documents keep their order, less those named in
/// options.exclude (the count dropped is logged; an exclude name that matches
/// nothing is a warning). A document is validation iff
/// (mix64(FNV-1a 64 of its name's bytes) >> 11) / 2^53 < options.validation,
/// so its split depends on its name alone. Tokenised in parallel (the result
/// does not depend on the thread count). Usage error (exit 2) when no
/// document is left or the fraction is outside [0, 1].
void write_corpus(const std::string& path, const std::vector<Document>& documents, const Tokenizer& tokenizer,
                  const CorpusOptions& options, const std::string& sources);

class Corpus {
 public:
  /// Exit 3 naming the file and dataset for a foreign schema, a missing
  /// dataset or one of another rank or type, per-document datasets whose
  /// length is not D, offsets that do not tile /tokens (start at 0, never
  /// decrease, end at N), ids outside the tokenizer's vocabulary, split
  /// values other than 0/1; exit 4 when the file cannot be read.
  static Corpus open(const std::string& path);
  const std::string& path() const { return path_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }
  int64_t documents() const;
  /// Document d's tokens (no EOS); d, also for name() and split(), in 0..D-1 (usage error otherwise).
  std::span<const int32_t> document(int64_t d) const;
  const std::string& name(int64_t d) const;
  Split split(int64_t d) const;
  int64_t tokens(Split) const;
  int64_t bytes(Split) const;  ///< UTF-8 bytes of the split's text (bits per byte)
  int64_t document_bytes(int64_t d) const;  ///< bytes of document d's text
  /// The split's documents concatenated, each followed by EOS.
  std::vector<int32_t> stream(Split) const;

 private:
  std::string path_;
  Tokenizer tokenizer_;
  std::vector<int32_t> tokens_;
  std::vector<int64_t> offsets_, bytes_;
  std::vector<int8_t> split_;
  std::vector<std::string> names_;
};

/// Training windows: batch rows of context + 1 tokens cut at uniformly random
/// starts of a split's stream; fill(step) depends only on (seed, step), so a
/// resumed run sees the same batches. Row b of step s starts at
/// Rng(seed).split(s).split(b).below(stream size - context). Usage error
/// when batch or context is below 1 or the stream is shorter than context + 1.
class BatchSampler {
 public:
  BatchSampler(const Corpus& corpus, Split split, int64_t batch, int64_t context, uint64_t seed);
  int64_t batch() const { return batch_; }
  int64_t context() const { return context_; }
  /// tokens [batch, context + 1], row-major.
  void fill(int64_t step, int32_t* tokens) const;

 private:
  std::vector<int32_t> stream_;
  int64_t batch_, context_;
  uint64_t seed_;
};

}  // namespace nk::lm
