// text_verbs.cpp - nk-lm corpus and nk-lm tokenizer: Debian's English text
// (or the user's) into named documents, a byte-level BPE trained on the
// training split, and the tokenised corpus.
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "nk-lm/nk_lm.hpp"
#include "nk/atomic_file.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/lm/corpus.hpp"
#include "nk/lm/text.hpp"
#include "nk/log.hpp"
#include "nk/timer.hpp"

namespace nklm {

namespace {

std::vector<nk::lm::Document> read_documents(const TextSources& in) {
  std::vector<nk::lm::Document> docs;
  std::vector<std::string> sources = in.sources;
  if (sources.empty() && in.text.empty()) sources = {"fortunes", "wordnet", "gcide"};
  for (const std::string& s : sources) {
    nk::Stopwatch clock;
    std::vector<nk::lm::Document> more = nk::lm::debian_text(s);
    int64_t bytes = 0;
    for (const auto& d : more) bytes += static_cast<int64_t>(d.text.size());
    spdlog::info("{}: {} documents, {:.1f} MB ({:.1f} s)", s, more.size(), static_cast<double>(bytes) / 1e6, clock.seconds());
    for (auto& d : more) docs.push_back(std::move(d));
  }
  for (const std::string& path : in.text) {
    std::vector<nk::lm::Document> more = nk::lm::text_file(path, in.paragraphs);
    spdlog::info("{}: {} documents", path, more.size());
    for (auto& d : more) docs.push_back(std::move(d));
  }
  return docs;
}

std::vector<std::string> read_names(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw nk::io_error(path, "cannot read the list of document names");
  std::vector<std::string> names;
  std::string line;
  while (std::getline(f, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    if (!line.empty() && line[0] != '#') names.push_back(line);
  }
  return names;
}

/// The tokenizer's training text: the training split's documents, less the excluded ones.
nk::lm::Tokenizer train_tokenizer(const std::vector<nk::lm::Document>& docs, const std::vector<std::string>& exclude,
                                  double validation, int64_t vocab) {
  const std::set<std::string> skip(exclude.begin(), exclude.end());
  std::vector<std::string_view> text;
  for (const auto& d : docs)
    if (!skip.count(d.name) && !nk::lm::in_validation(d.name, validation)) text.emplace_back(d.text);
  if (text.empty()) throw nk::usage_error("no training documents to learn a tokenizer from");
  nk::Stopwatch clock;
  nk::lm::Tokenizer tok = nk::lm::Tokenizer::train(text, vocab);
  spdlog::info("tokenizer: {} merges (vocabulary {}) learned in {:.1f} s", tok.merges().size(), tok.size(), clock.seconds());
  return tok;
}

nk::lm::Tokenizer tokenizer_from(const std::string& path) {
  const nk::h5::File in = nk::h5::File::open(path);
  return nk::lm::Tokenizer::load(in, "/tokenizer");
}

}  // namespace

void corpus(const CorpusOptions& o) {
  const std::vector<nk::lm::Document> docs = read_documents(o.input);
  if (o.list) {
    for (const auto& d : docs)
      std::printf("%s\t%zu\t%s\n", d.name.c_str(), d.text.size(), nk::lm::in_validation(d.name, o.validation) ? "validation" : "train");
    return;
  }
  if (o.output.empty()) throw nk::usage_error("corpus: -o/--output is required (or --list)");
  check_writable(o.output, o.no_clobber);
  nk::lm::CorpusOptions options;
  options.validation = o.validation;
  if (!o.exclude.empty()) options.exclude = read_names(o.exclude);
  const nk::lm::Tokenizer tok =
      o.tokenizer.empty() ? train_tokenizer(docs, options.exclude, o.validation, o.vocab) : tokenizer_from(o.tokenizer);
  std::string sources;
  for (const auto& s : o.input.sources) sources += (sources.empty() ? "" : ",") + s;
  for (const auto& s : o.input.text) sources += (sources.empty() ? "" : ",") + s;
  if (sources.empty()) sources = "fortunes,wordnet,gcide";
  nk::Stopwatch clock;
  {
    // The verb's one output, read back below for its summary: published now.
    const nk::PublishNow now;
    nk::lm::write_corpus(o.output, docs, tok, options, sources);
  }
  const nk::lm::Corpus c = nk::lm::Corpus::open(o.output);
  using nk::lm::Split;
  spdlog::info("corpus {}: {} documents; train {} tokens ({:.2f} bytes/token), validation {} tokens ({:.1f} s)", o.output,
               c.documents(), c.tokens(Split::train),
               static_cast<double>(c.bytes(Split::train)) / static_cast<double>(std::max<int64_t>(1, c.tokens(Split::train))),
               c.tokens(Split::validation), clock.seconds());
}

void tokenizer(const TokenizerOptions& o) {
  const std::vector<nk::lm::Document> docs = read_documents(o.input);
  const nk::lm::Tokenizer tok = train_tokenizer(docs, {}, o.validation, o.vocab);
  // Compression on the validation documents: what the tokenizer buys a model.
  int64_t bytes = 0, tokens = 0;
  for (const auto& d : docs)
    if (nk::lm::in_validation(d.name, o.validation)) {
      bytes += static_cast<int64_t>(d.text.size());
      tokens += static_cast<int64_t>(tok.encode(d.text).size());
    }
  if (tokens > 0) spdlog::info("validation text: {:.3f} bytes per token", static_cast<double>(bytes) / static_cast<double>(tokens));
  nk::h5::Writer out(o.output, kTokenizerSchema, o.no_clobber);
  tok.save(out, "/tokenizer");
  out.attr("/", "validation_bytes_per_token", tokens > 0 ? static_cast<double>(bytes) / static_cast<double>(tokens) : 0.0);
  out.commit();
}

}  // namespace nklm
