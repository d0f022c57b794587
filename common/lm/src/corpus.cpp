// corpus.cpp - nk-lm.corpus/1: documents split by a hash of their names and
// tokenised in parallel, written atomically; the strict reader; the sampler
// whose batches depend only on (seed, step).
#include "nk/lm/corpus.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <unordered_set>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/rng.hpp"

namespace nk::lm {

namespace {

constexpr const char* kCorpusSchema = "nk-lm.corpus/1";
constexpr const char* kCorpusSchemaFamily = "nk-lm.corpus/";

const char* split_name(Split split) {
  return split == Split::train ? "train" : "validation";
}

/// FNV-1a 64 of the name's bytes, through mix64, as 53 bits in [0, 1).
double name_uniform(std::string_view name) {
  uint64_t hash = 14695981039346656037ull;
  for (const unsigned char byte : name) {
    hash ^= byte;
    hash *= 1099511628211ull;
  }
  return static_cast<double>(nk::mix64(hash) >> 11) * 0x1.0p-53;
}

std::string count_text(int64_t n, const std::string& what) {
  return std::to_string(n) + " " + what;
}

}  // namespace

bool in_validation(std::string_view name, double fraction) { return name_uniform(name) < fraction; }

void write_corpus(const std::string& path, const std::vector<Document>& documents, const Tokenizer& tokenizer,
                  const CorpusOptions& options, const std::string& sources) {
  if (!(options.validation >= 0 && options.validation <= 1)) {
    throw usage_error("the validation fraction must be in [0, 1] (found " + std::to_string(options.validation) + ")");
  }
  const std::unordered_set<std::string_view> excluded(options.exclude.begin(), options.exclude.end());
  std::unordered_set<std::string_view> matched;
  std::vector<const Document*> kept;
  kept.reserve(documents.size());
  for (const Document& document : documents) {
    if (excluded.contains(document.name)) {
      matched.insert(document.name);
    } else {
      kept.push_back(&document);
    }
  }
  std::unordered_set<std::string_view> warned;
  for (const std::string& name : options.exclude) {
    if (!matched.contains(name) && warned.insert(name).second) {
      spdlog::warn("exclude: no document is named '{}'", name);
    }
  }
  const auto dropped = static_cast<int64_t>(documents.size() - kept.size());
  if (dropped > 0) spdlog::info("exclude: {} of {} documents dropped", dropped, documents.size());
  if (kept.empty()) {
    throw usage_error("no documents for the corpus '" + path + "'" +
                      (dropped > 0 ? " (all " + count_text(dropped, "were excluded)") : ""));
  }

  const auto count = static_cast<int64_t>(kept.size());
  std::vector<std::vector<int32_t>> encoded(kept.size());
#pragma omp parallel for schedule(dynamic, 64)
  for (int64_t d = 0; d < count; ++d) encoded[d] = tokenizer.encode(kept[d]->text);

  std::vector<int64_t> offsets(kept.size() + 1, 0), bytes(kept.size());
  std::vector<int8_t> split(kept.size());
  std::vector<std::string> names(kept.size());
  for (int64_t d = 0; d < count; ++d) {
    offsets[d + 1] = offsets[d] + static_cast<int64_t>(encoded[d].size());
    bytes[d] = static_cast<int64_t>(kept[d]->text.size());
    split[d] = name_uniform(kept[d]->name) < options.validation ? int8_t{1} : int8_t{0};
    names[d] = kept[d]->name;
  }
  std::vector<int32_t> tokens;
  tokens.reserve(static_cast<size_t>(offsets.back()));
  for (std::vector<int32_t>& ids : encoded) {
    tokens.insert(tokens.end(), ids.begin(), ids.end());
    std::vector<int32_t>().swap(ids);
  }

  nk::h5::Writer out(path, kCorpusSchema);
  out.write("/tokens", tokens.data(), {offsets.back()}, "N");
  out.write("/doc_offsets", offsets.data(), {count + 1}, "D+1");
  out.write("/doc_bytes", bytes.data(), {count}, "D", "bytes");
  out.write("/split", split.data(), {count}, "D");
  out.write_strings("/names", names, "D");
  tokenizer.save(out, "/tokenizer");
  out.attr("/", "documents", count);
  out.attr("/", "tokens", offsets.back());
  out.attr("/", "sources", sources);
  out.attr("/", "validation", options.validation);
  out.commit();
  const auto validation = std::count(split.begin(), split.end(), int8_t{1});
  spdlog::info("{}: {} documents ({} validation), {} tokens", path, count, validation, offsets.back());
}

Corpus Corpus::open(const std::string& path) {
  const nk::h5::File in = nk::h5::File::open(path);
  in.require_schema(kCorpusSchemaFamily);
  for (const char* dataset : {"/tokens", "/doc_offsets", "/doc_bytes", "/split", "/names"}) in.require(dataset);
  const auto fail = [&](const std::string& dataset, const std::string& what) {
    return input_error(path, dataset, what);
  };

  Corpus corpus;
  corpus.path_ = path;
  corpus.offsets_ = in.read<int64_t>("/doc_offsets", 1, "D+1").data;
  if (corpus.offsets_.empty()) throw fail("/doc_offsets", "expected D+1 >= 1 entries, found none");
  const auto documents = static_cast<int64_t>(corpus.offsets_.size()) - 1;
  const auto require_documents = [&](const std::string& dataset, int64_t found) {
    if (found != documents) {
      throw fail(dataset, "has " + std::to_string(found) + " entries for " +
                              count_text(documents, "documents (/doc_offsets has D+1)"));
    }
  };
  corpus.tokens_ = in.read<int32_t>("/tokens", 1, "N").data;
  corpus.bytes_ = in.read<int64_t>("/doc_bytes", 1, "D").data;
  require_documents("/doc_bytes", static_cast<int64_t>(corpus.bytes_.size()));
  corpus.split_ = in.read<int8_t>("/split", 1, "D").data;
  require_documents("/split", static_cast<int64_t>(corpus.split_.size()));
  if (in.info("/names").shape.size() != 1) throw fail("/names", "expected rank 1 (D)");
  corpus.names_ = in.read_strings("/names");
  require_documents("/names", static_cast<int64_t>(corpus.names_.size()));

  const std::vector<int64_t>& offsets = corpus.offsets_;
  if (offsets.front() != 0) throw fail("/doc_offsets", "must start at 0 (found " + std::to_string(offsets[0]) + ")");
  for (int64_t d = 0; d < documents; ++d) {
    if (offsets[d + 1] < offsets[d]) {
      throw fail("/doc_offsets", "must not decrease (index " + std::to_string(d + 1) + ": " +
                                     std::to_string(offsets[d + 1]) + " < " + std::to_string(offsets[d]) + ")");
    }
    if (corpus.bytes_[d] < 0) throw fail("/doc_bytes", "negative at index " + std::to_string(d));
    if (corpus.split_[d] != 0 && corpus.split_[d] != 1) {
      throw fail("/split", "values must be 0 (train) or 1 (validation) (index " + std::to_string(d) + ": " +
                               std::to_string(corpus.split_[d]) + ")");
    }
  }
  if (offsets.back() != static_cast<int64_t>(corpus.tokens_.size())) {
    throw fail("/doc_offsets", "must end at the length of /tokens, " + std::to_string(corpus.tokens_.size()) +
                                   " (found " + std::to_string(offsets.back()) + ")");
  }

  corpus.tokenizer_ = Tokenizer::load(in, "/tokenizer");
  const int64_t vocab = corpus.tokenizer_.size();
  for (size_t i = 0; i < corpus.tokens_.size(); ++i) {
    if (corpus.tokens_[i] < 0 || corpus.tokens_[i] >= vocab) {
      throw fail("/tokens", "id " + std::to_string(corpus.tokens_[i]) + " at index " + std::to_string(i) +
                                " is outside the tokenizer's vocabulary [0, " + std::to_string(vocab) + ")");
    }
  }
  return corpus;
}

int64_t Corpus::documents() const {
  return static_cast<int64_t>(names_.size());
}

std::span<const int32_t> Corpus::document(int64_t d) const {
  if (d < 0 || d >= documents()) {
    throw usage_error("document " + std::to_string(d) + " is outside 0.." + std::to_string(documents() - 1) + " of " +
                      path_);
  }
  return std::span<const int32_t>(tokens_).subspan(static_cast<size_t>(offsets_[d]),
                                                   static_cast<size_t>(offsets_[d + 1] - offsets_[d]));
}

const std::string& Corpus::name(int64_t d) const {
  document(d);  // the range check
  return names_[d];
}

Split Corpus::split(int64_t d) const {
  document(d);
  return static_cast<Split>(split_[d]);
}

int64_t Corpus::tokens(Split which) const {
  int64_t total = 0;
  for (int64_t d = 0; d < documents(); ++d) {
    if (split_[d] == static_cast<int8_t>(which)) total += offsets_[d + 1] - offsets_[d];
  }
  return total;
}

int64_t Corpus::document_bytes(int64_t d) const {
  document(d);  // the range check
  return bytes_[static_cast<size_t>(d)];
}

int64_t Corpus::bytes(Split which) const {
  int64_t total = 0;
  for (int64_t d = 0; d < documents(); ++d) {
    if (split_[d] == static_cast<int8_t>(which)) total += bytes_[d];
  }
  return total;
}

std::vector<int32_t> Corpus::stream(Split which) const {
  std::vector<int32_t> out;
  out.reserve(static_cast<size_t>(tokens(which) + documents()));
  for (int64_t d = 0; d < documents(); ++d) {
    if (split_[d] != static_cast<int8_t>(which)) continue;
    out.insert(out.end(), tokens_.begin() + offsets_[d], tokens_.begin() + offsets_[d + 1]);
    out.push_back(tokenizer_.eos());
  }
  return out;
}

BatchSampler::BatchSampler(const Corpus& corpus, Split split, int64_t batch, int64_t context, uint64_t seed)
    : batch_(batch), context_(context), seed_(seed) {
  if (batch < 1 || context < 1) {
    throw usage_error("batch and context must be at least 1 (found batch " + std::to_string(batch) + ", context " +
                      std::to_string(context) + ")");
  }
  stream_ = corpus.stream(split);
  if (static_cast<int64_t>(stream_.size()) < context + 1) {
    throw usage_error("the " + std::string(split_name(split)) + " split of '" + corpus.path() + "' has " +
                      count_text(static_cast<int64_t>(stream_.size()), "tokens") +
                      " with EOS, fewer than context + 1 = " + std::to_string(context + 1));
  }
}

void BatchSampler::fill(int64_t step, int32_t* tokens) const {
  const Rng step_stream = Rng(seed_).split(static_cast<uint64_t>(step));
  const auto starts = static_cast<uint64_t>(stream_.size()) - static_cast<uint64_t>(context_);
  for (int64_t b = 0; b < batch_; ++b) {
    const uint64_t start = step_stream.split(static_cast<uint64_t>(b)).below(starts);
    std::copy_n(stream_.begin() + static_cast<std::ptrdiff_t>(start), context_ + 1, tokens + b * (context_ + 1));
  }
}

}  // namespace nk::lm
