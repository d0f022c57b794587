// tokenizer.cpp - byte-level BPE: GPT-2's pre-tokenisation over bytes,
// training with incremental pair counts, encoding by merge rank.
#include "nk/lm/tokenizer.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <optional>
#include <queue>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "byte_level.hpp"
#include "nk/rng.hpp"

namespace nk::lm {

namespace {

constexpr int64_t kSpecials = 4;
constexpr int64_t kMostVocab = int64_t{1} << 20;
constexpr int64_t kMostMerges = kMostVocab - 256 - kSpecials;
constexpr const char* kKind = "byte-bpe/1";
constexpr const char* kMappedKind = "byte-bpe-mapped/1";  // another layout: /ids and /specials beside /merges
constexpr size_t kMostCached = size_t{1} << 18;  // words in encode()'s cache

enum ByteClass : uint8_t { other, letter, digit, space };

constexpr std::array<ByteClass, 256> make_classes() {
  std::array<ByteClass, 256> classes{};
  for (int b = 0; b < 256; ++b) {
    if ((b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || b >= 0x80) {
      classes[b] = letter;
    } else if (b >= '0' && b <= '9') {
      classes[b] = digit;
    } else if (b == ' ' || (b >= '\t' && b <= '\r')) {
      classes[b] = space;
    } else {
      classes[b] = other;
    }
  }
  return classes;
}
constexpr std::array<ByteClass, 256> kClasses = make_classes();

ByteClass class_at(std::string_view text, size_t i) {
  return kClasses[static_cast<unsigned char>(text[i])];
}

/// Length of a contraction ('s 't 'm 'd 're 've 'll) starting at i, 0 if none.
size_t contraction_at(std::string_view text, size_t i) {
  if (text[i] != '\'' || i + 1 >= text.size()) return 0;
  const char c = text[i + 1];
  if (c == 's' || c == 't' || c == 'm' || c == 'd') return 2;
  if (i + 2 < text.size()) {
    const char d = text[i + 2];
    if ((c == 'r' && d == 'e') || (c == 'v' && d == 'e') || (c == 'l' && d == 'l')) return 3;
  }
  return 0;
}

/// End of the pre-tokenised word that starts at 'begin' (< text.size()); the
/// rule is documented in tokenizer.hpp.
size_t word_end(std::string_view text, size_t begin) {
  const size_t n = text.size();
  if (const size_t c = contraction_at(text, begin)) return begin + c;
  size_t i = begin;
  if (text[i] == ' ' && i + 1 < n && class_at(text, i + 1) != space) ++i;
  const ByteClass kind = class_at(text, i);
  size_t end = i + 1;
  while (end < n && class_at(text, end) == kind) ++end;
  // W+(?!\S): a whitespace run before a non-space leaves its last byte to it.
  if (kind == space && end < n && end - begin >= 2) --end;
  return end;
}

/// Calls emit(begin, end) for every pre-tokenised word of 'text', in order.
template <class Emit>
void for_each_word(std::string_view text, Emit&& emit) {
  for (size_t begin = 0; begin < text.size();) {
    const size_t end = word_end(text, begin);
    emit(begin, end);
    begin = end;
  }
}

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

/// Why 'merges' is not a valid merge list, or empty when it is.
std::string merge_problem(const std::vector<std::pair<int32_t, int32_t>>& merges) {
  if (static_cast<int64_t>(merges.size()) > kMostMerges) {
    return std::to_string(merges.size()) + " merges, more than the " + std::to_string(kMostMerges) + " allowed";
  }
  std::unordered_map<uint64_t, size_t> seen;
  seen.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const auto [left, right] = merges[i];
    const int64_t defined = 256 + static_cast<int64_t>(i);
    if (left < 0 || right < 0 || left >= defined || right >= defined) {
      return "merge " + std::to_string(i) + " (" + std::to_string(left) + ", " + std::to_string(right) +
             ") references an id outside 0.." + std::to_string(defined - 1) + " (ids defined before it)";
    }
    const auto [at, fresh] = seen.emplace(pair_key(left, right), i);
    if (!fresh) {
      return "merge " + std::to_string(i) + " (" + std::to_string(left) + ", " + std::to_string(right) +
             ") repeats merge " + std::to_string(at->second);
    }
  }
  return "";
}

std::string merges_dataset(const std::string& group) {
  return (group.empty() || group.back() == '/') ? group + "merges" : group + "/merges";
}

// --- training -------------------------------------------------------------

struct TrainWord {
  std::vector<int32_t> symbols;
  int64_t count = 0;
};

/// A heap entry: a pair with the count it had when pushed (an upper bound on
/// its count now, since a pair that exists only ever loses occurrences).
struct Candidate {
  int64_t count;
  uint64_t pair;
};
/// Most frequent first; equal counts to the smaller (left, right).
struct CandidateOrder {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.count != b.count ? a.count < b.count : a.pair > b.pair;
  }
};

/// Pair counts over the unique words, weighted by word count, kept exact as
/// merges rewrite the words; which words hold a pair (entries may be stale).
class PairTable {
 public:
  explicit PairTable(std::vector<TrainWord> words) : words_(std::move(words)) {
    for (size_t w = 0; w < words_.size(); ++w) {
      const std::vector<int32_t>& s = words_[w].symbols;
      for (size_t i = 0; i + 1 < s.size(); ++i) add(pair_key(s[i], s[i + 1]), words_[w].count, w);
    }
    std::vector<Candidate> start;
    start.reserve(counts_.size());
    for (const auto& [pair, count] : counts_) {
      if (count >= 2) start.push_back({count, pair});
    }
    heap_ = decltype(heap_)(CandidateOrder{}, std::move(start));
  }

  /// The most frequent pair if it occurs at least twice.
  bool best(uint64_t& pair) {
    while (!heap_.empty()) {
      const Candidate top = heap_.top();
      heap_.pop();
      const auto found = counts_.find(top.pair);
      const int64_t now = found == counts_.end() ? 0 : found->second;
      if (now == top.count) {
        pair = top.pair;
        return true;
      }
      if (now >= 2) heap_.push({now, top.pair});
    }
    return false;
  }

  /// Replaces every occurrence of 'pair' by 'merged' and updates the counts.
  void merge(uint64_t pair, int32_t merged) {
    const auto left = static_cast<int32_t>(pair >> 32);
    const auto right = static_cast<int32_t>(pair & 0xffffffffu);
    std::vector<size_t> holders = std::move(where_[pair]);
    where_.erase(pair);
    std::sort(holders.begin(), holders.end());
    holders.erase(std::unique(holders.begin(), holders.end()), holders.end());
    std::vector<uint64_t> created;
    for (size_t w : holders) {
      std::vector<int32_t>& s = words_[w].symbols;
      const int64_t c = words_[w].count;
      size_t out = 0;
      for (size_t i = 0; i < s.size(); ++out) {
        if (i + 1 < s.size() && s[i] == left && s[i + 1] == right) {
          // s[out - 1] is the symbol now before the occurrence (maybe merged already).
          if (out > 0) {
            remove(pair_key(s[out - 1], left), c);
            add(pair_key(s[out - 1], merged), c, w);
            created.push_back(pair_key(s[out - 1], merged));
          }
          if (i + 2 < s.size()) {
            remove(pair_key(right, s[i + 2]), c);
            add(pair_key(merged, s[i + 2]), c, w);
            created.push_back(pair_key(merged, s[i + 2]));
          }
          remove(pair, c);
          s[out] = merged;
          i += 2;
        } else {
          s[out] = s[i];
          i += 1;
        }
      }
      s.resize(out);
    }
    // Pairs holding 'merged' exist only from now, so their counts are final here.
    std::sort(created.begin(), created.end());
    created.erase(std::unique(created.begin(), created.end()), created.end());
    for (uint64_t p : created) {
      const auto found = counts_.find(p);
      if (found != counts_.end() && found->second >= 2) heap_.push({found->second, p});
    }
  }

 private:
  void add(uint64_t pair, int64_t count, size_t word) {
    counts_[pair] += count;
    std::vector<size_t>& holders = where_[pair];
    if (holders.empty() || holders.back() != word) holders.push_back(word);
  }
  void remove(uint64_t pair, int64_t count) {
    const auto found = counts_.find(pair);
    if ((found->second -= count) == 0) counts_.erase(found);
  }

  std::vector<TrainWord> words_;
  std::unordered_map<uint64_t, int64_t> counts_;
  std::unordered_map<uint64_t, std::vector<size_t>> where_;
  std::priority_queue<Candidate, std::vector<Candidate>, CandidateOrder> heap_;
};

/// The unique words of the documents with their counts, in byte order (so
/// nothing downstream sees hash-map order).
std::vector<TrainWord> count_words(std::span<const std::string_view> documents) {
  std::unordered_map<std::string_view, int64_t> counts;
  for (std::string_view document : documents) {
    for_each_word(document, [&](size_t begin, size_t end) { ++counts[document.substr(begin, end - begin)]; });
  }
  std::vector<std::pair<std::string_view, int64_t>> sorted(counts.begin(), counts.end());
  std::sort(sorted.begin(), sorted.end());
  std::vector<TrainWord> words;
  words.reserve(sorted.size());
  for (const auto& [word, count] : sorted) {
    if (word.size() < 2) continue;  // nothing to merge in a single byte
    TrainWord& t = words.emplace_back();
    t.count = count;
    t.symbols.reserve(word.size());
    for (char b : word) t.symbols.push_back(static_cast<unsigned char>(b));
  }
  return words;
}

}  // namespace

// --- construction -----------------------------------------------------------

Tokenizer::Tokenizer() : Tokenizer(std::vector<std::pair<int32_t, int32_t>>{}) {}

Tokenizer::Tokenizer(std::vector<std::pair<int32_t, int32_t>> merges) : merges_(std::move(merges)) {
  const auto base = static_cast<int32_t>(256 + merges_.size());
  for (int k = 0; k < 4; ++k) {
    specials_[static_cast<size_t>(k)] = base + k;
    names_[static_cast<size_t>(k)] = kSpecialNames[static_cast<size_t>(k)];
  }
  vocab_ = base + kSpecials;
  bytes_.reserve(256 + merges_.size());
  for (int b = 0; b < 256; ++b) bytes_.emplace_back(1, static_cast<char>(b));
  rank_.reserve(merges_.size());
  for (size_t i = 0; i < merges_.size(); ++i) {
    const auto [left, right] = merges_[i];
    bytes_.push_back(bytes_[left] + bytes_[right]);
    rank_.emplace(pair_key(left, right), static_cast<int32_t>(i));
  }
}

Tokenizer Tokenizer::from_merges(std::vector<std::pair<int32_t, int32_t>> merges) {
  const std::string problem = merge_problem(merges);
  if (!problem.empty()) throw usage_error("tokenizer merges: " + problem);
  return Tokenizer(std::move(merges));
}

Tokenizer Tokenizer::from_layout(std::vector<std::pair<int32_t, int32_t>> merges, Layout layout) {
  const std::string problem = merge_problem(merges);
  if (!problem.empty()) throw usage_error("tokenizer merges: " + problem);
  const size_t tokens = 256 + merges.size();
  if (layout.ids.size() != tokens)
    throw usage_error("tokenizer layout: " + std::to_string(layout.ids.size()) + " ids for " + std::to_string(tokens) + " tokens");
  if (layout.vocab < 1 || layout.vocab > kMostVocab) throw usage_error("tokenizer layout: vocabulary out of range");
  bool identity = layout.vocab == static_cast<int64_t>(tokens) + kSpecials;
  for (size_t t = 0; t < tokens && identity; ++t) identity = layout.ids[t] == static_cast<int32_t>(t);
  for (int k = 0; k < 4 && identity; ++k)
    identity = layout.specials[static_cast<size_t>(k)] == static_cast<int32_t>(tokens) + k;
  if (identity) return Tokenizer(std::move(merges));
  if (layout.specials[0] < 0) layout.specials[0] = layout.specials[1];  // GPT-2's one <|endoftext|> opens texts too
  if (layout.specials[0] < 0) throw usage_error("tokenizer layout: neither a BOS nor an EOS token");
  std::vector<int32_t> from(static_cast<size_t>(layout.vocab), -1);
  std::vector<char> taken(static_cast<size_t>(layout.vocab), 0);
  for (size_t t = 0; t < tokens; ++t) {
    const int32_t id = layout.ids[t];
    if (id == -1 && t < 256) continue;  // a byte without a token: text holding it cannot be encoded
    if (id < 0 || id >= layout.vocab) throw usage_error("tokenizer layout: id " + std::to_string(id) + " outside the vocabulary");
    if (taken[static_cast<size_t>(id)]) throw usage_error("tokenizer layout: two tokens on id " + std::to_string(id));
    taken[static_cast<size_t>(id)] = 1;
    from[static_cast<size_t>(id)] = static_cast<int32_t>(t);
  }
  for (int k = 0; k < 4; ++k) {
    const int32_t id = layout.specials[static_cast<size_t>(k)];
    if (id == -1) continue;
    if (id < 0 || id >= layout.vocab || from[static_cast<size_t>(id)] >= 0)
      throw usage_error("tokenizer layout: special id " + std::to_string(id) + " outside the vocabulary or on a token");
  }
  Tokenizer tok(std::move(merges));
  tok.specials_ = layout.specials;
  tok.names_ = std::move(layout.names);
  tok.vocab_ = layout.vocab;
  tok.to_vocab_ = std::move(layout.ids);
  tok.from_vocab_ = std::move(from);
  return tok;
}

Tokenizer Tokenizer::train(std::span<const std::string_view> documents, int64_t vocab) {
  if (vocab < 256 + kSpecials || vocab > kMostVocab) {
    throw usage_error("tokenizer vocabulary must be in " + std::to_string(256 + kSpecials) + ".." +
                      std::to_string(kMostVocab) + ", got " + std::to_string(vocab));
  }
  const auto wanted = static_cast<size_t>(vocab - 256 - kSpecials);
  std::vector<std::pair<int32_t, int32_t>> merges;
  merges.reserve(wanted);
  if (wanted > 0) {
    PairTable table(count_words(documents));
    uint64_t pair = 0;
    while (merges.size() < wanted && table.best(pair)) {
      const auto merged = static_cast<int32_t>(256 + merges.size());
      merges.emplace_back(static_cast<int32_t>(pair >> 32), static_cast<int32_t>(pair & 0xffffffffu));
      table.merge(pair, merged);
    }
  }
  return Tokenizer(std::move(merges));
}

// --- encoding -----------------------------------------------------------------

int64_t Tokenizer::size() const { return vocab_; }

int32_t Tokenizer::rank_of(int32_t left, int32_t right) const {
  const auto found = rank_.find(pair_key(left, right));
  return found == rank_.end() ? -1 : found->second;
}

void Tokenizer::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  const auto n = static_cast<int32_t>(word.size());
  if (n == 1 || rank_.empty()) {
    for (char b : word) out.push_back(static_cast<unsigned char>(b));
    return;
  }
  // A linked list of symbols and a min-heap of (rank, position): merging the
  // lowest rank first, leftmost first, is GPT-2's bpe() in O(n log n), since
  // every pair a merge creates has a higher rank than the merge itself.
  std::vector<int32_t> symbol(word.size()), next(word.size());
  std::vector<int32_t> previous(word.size());
  using Entry = std::pair<int32_t, int32_t>;
  std::vector<Entry> heap;
  const auto push = [&](int32_t at) {
    const int32_t rank = rank_of(symbol[at], symbol[next[at]]);
    if (rank >= 0) {
      heap.emplace_back(rank, at);
      std::push_heap(heap.begin(), heap.end(), std::greater<>());
    }
  };
  for (int32_t i = 0; i < n; ++i) {
    symbol[i] = static_cast<unsigned char>(word[i]);
    next[i] = i + 1;
    previous[i] = i - 1;
  }
  for (int32_t i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    const auto [rank, at] = heap.back();
    heap.pop_back();
    // Stale when the symbol was absorbed by its left neighbour or either side changed.
    if (symbol[at] < 0 || next[at] >= n || rank_of(symbol[at], symbol[next[at]]) != rank) continue;
    const int32_t absorbed = next[at];
    symbol[at] = 256 + rank;
    symbol[absorbed] = -1;
    next[at] = next[absorbed];
    if (next[at] < n) previous[next[at]] = at;
    if (previous[at] >= 0) push(previous[at]);
    if (next[at] < n) push(at);
  }
  for (int32_t i = 0; i < n; i = next[i]) out.push_back(symbol[i]);
}

std::vector<int32_t> Tokenizer::encode(std::string_view bytes) const {
  std::vector<int32_t> ids;
  std::vector<int64_t> begin;
  encode_with_offsets(bytes, ids, begin);
  return ids;
}

void Tokenizer::encode_with_offsets(std::string_view bytes, std::vector<int32_t>& ids,
                                    std::vector<int64_t>& begin) const {
  ids.clear();
  begin.clear();
  // A cache per call (encode() is const and may run on several threads):
  // word -> [first, first + count) in 'ids', where the word was first encoded.
  std::unordered_map<std::string_view, std::pair<size_t, size_t>> cache;
  for_each_word(bytes, [&](size_t word_begin, size_t word_end) {
    const std::string_view word = bytes.substr(word_begin, word_end - word_begin);
    const size_t first = ids.size();
    if (word.size() == 1) {
      ids.push_back(static_cast<unsigned char>(word[0]));
    } else if (const auto found = cache.find(word); found != cache.end()) {
      const auto [from, count] = found->second;
      for (size_t k = 0; k < count; ++k) {
        const int32_t id = ids[from + k];  // a copy: push_back may reallocate
        ids.push_back(id);
      }
    } else {
      encode_word(word, ids);
      if (cache.size() >= kMostCached) cache.clear();  // bounded memory on text of few repeats
      cache.emplace(word, std::pair<size_t, size_t>(first, ids.size() - first));
    }
    auto offset = static_cast<int64_t>(word_begin);
    for (size_t k = first; k < ids.size(); ++k) {
      begin.push_back(offset);
      offset += static_cast<int64_t>(bytes_[ids[k]].size());
    }
  });
  if (native()) return;
  for (size_t k = 0; k < ids.size(); ++k) {  // internal ids to the vocabulary's, after the cache has served
    const int32_t id = to_vocab_[static_cast<size_t>(ids[k])];
    if (id < 0)
      throw Error(Exit::input, "byte 0x" + std::string(1, "0123456789abcdef"[(ids[k] >> 4) & 15]) +
                                   std::string(1, "0123456789abcdef"[ids[k] & 15]) + " at offset " +
                                   std::to_string(begin[k]) + " has no token in this tokenizer's vocabulary");
    ids[k] = id;
  }
}

// --- decoding -----------------------------------------------------------------

std::string_view Tokenizer::bytes_of(int32_t id) const {
  if (id < 0 || id >= size()) {
    throw Error(Exit::input,
                "token id " + std::to_string(id) + " is outside the vocabulary 0.." + std::to_string(size() - 1));
  }
  if (native()) return id >= specials_[0] ? std::string_view() : std::string_view(bytes_[static_cast<size_t>(id)]);
  const int32_t t = from_vocab_[static_cast<size_t>(id)];
  return t < 0 ? std::string_view() : std::string_view(bytes_[static_cast<size_t>(t)]);
}

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
  std::string text;
  for (int32_t id : ids) text += bytes_of(id);
  return text;
}

uint64_t Tokenizer::fingerprint() const {
  uint64_t h = mix64(0x6279746562706531ull ^ merges_.size());  // "bytebpe1"
  for (const auto& [left, right] : merges_) h = mix64(h ^ mix64(pair_key(left, right)));
  if (native()) return h;
  h = mix64(h ^ static_cast<uint64_t>(vocab_));
  for (int32_t id : to_vocab_) h = mix64(h ^ static_cast<uint32_t>(id));
  for (int32_t id : specials_) h = mix64(h ^ static_cast<uint32_t>(id));
  return h;
}

// --- storage ------------------------------------------------------------------

void Tokenizer::save(nk::h5::Writer& out, const std::string& group) const {
  std::vector<int32_t> flat;
  flat.reserve(2 * merges_.size());
  for (const auto& [left, right] : merges_) {
    flat.push_back(left);
    flat.push_back(right);
  }
  // The dataset first: writing it creates the group the attributes go on.
  out.write(merges_dataset(group), flat.data(), {static_cast<int64_t>(merges_.size()), 2}, "M,pair");
  const std::string object = group.empty() ? "/" : group;
  out.attr(object, "kind", native() ? kKind : kMappedKind);
  out.attr(object, "vocab", size());
  if (native()) return;
  const std::string prefix = group.empty() ? "/" : group + "/";
  out.write(prefix + "ids", to_vocab_.data(), {static_cast<int64_t>(to_vocab_.size())}, "token");
  out.write(prefix + "specials", specials_.data(), {4}, "BOS,EOS,MASK,PAD");
  for (int k = 0; k < 4; ++k) out.attr(prefix + "specials", "name_" + std::to_string(k), names_[static_cast<size_t>(k)]);
}

Tokenizer Tokenizer::load(const nk::h5::File& in, const std::string& group) {
  const std::string dataset = merges_dataset(group);
  const std::string object = group.empty() ? "/" : group;
  const std::optional<std::string> kind = in.attr_string(object, "kind");
  if (kind != kKind && kind != kMappedKind) {
    throw input_error(in.path(), dataset,
                      "tokenizer attribute kind of " + object + ": expected " + kKind + ", found " +
                          (kind ? "'" + *kind + "'" : "none"));
  }
  const nk::h5::DatasetInfo info = in.info(dataset);
  if (info.shape.size() != 2 || info.shape[1] != 2) {
    throw input_error(in.path(), dataset, "expected merges [M,2], found " + nk::h5::shape_text(info.shape));
  }
  if (info.shape[0] > kMostMerges) {
    throw input_error(
        in.path(), dataset,
        std::to_string(info.shape[0]) + " merges, more than the " + std::to_string(kMostMerges) + " allowed");
  }
  const nk::h5::Array<int32_t> flat = in.read<int32_t>(dataset);
  std::vector<std::pair<int32_t, int32_t>> merges(static_cast<size_t>(info.shape[0]));
  for (size_t i = 0; i < merges.size(); ++i) merges[i] = {flat.data[2 * i], flat.data[2 * i + 1]};
  const std::string problem = merge_problem(merges);
  if (!problem.empty()) throw input_error(in.path(), dataset, problem);
  const std::optional<double> vocab = in.attr_number(object, "vocab");
  if (kind == kMappedKind) {
    const std::string prefix = group.empty() ? "/" : group + "/";
    if (!vocab || *vocab < 1 || *vocab > static_cast<double>(kMostVocab) || *vocab != std::floor(*vocab))
      throw input_error(in.path(), dataset, "tokenizer attribute vocab of " + object + " missing or out of range");
    const nk::h5::DatasetInfo ids_info = in.info(prefix + "ids");
    if (ids_info.shape != std::vector<int64_t>{256 + static_cast<int64_t>(merges.size())})
      throw input_error(in.path(), prefix + "ids", "expected [256 + merges], found " + nk::h5::shape_text(ids_info.shape));
    if (in.info(prefix + "specials").shape != std::vector<int64_t>{4})
      throw input_error(in.path(), prefix + "specials", "expected [4] (BOS, EOS, MASK, PAD)");
    Layout layout;
    layout.ids = in.read<int32_t>(prefix + "ids").data;
    const std::vector<int32_t> specials = in.read<int32_t>(prefix + "specials").data;
    std::copy(specials.begin(), specials.end(), layout.specials.begin());
    for (int k = 0; k < 4; ++k)
      layout.names[static_cast<size_t>(k)] = in.attr_string(prefix + "specials", "name_" + std::to_string(k)).value_or("");
    layout.vocab = static_cast<int64_t>(*vocab);
    try {
      return from_layout(std::move(merges), std::move(layout));
    } catch (const Error& e) {
      throw input_error(in.path(), prefix + "ids", e.what());
    }
  }
  const int64_t expected = 256 + static_cast<int64_t>(merges.size()) + kSpecials;
  if (!vocab || *vocab != static_cast<double>(expected)) {
    throw input_error(in.path(), dataset,
                      "tokenizer attribute vocab of " + object + " should be " + std::to_string(expected) +
                          " (256 + merges + 4), found " + (vocab ? std::to_string(*vocab) : std::string("none")));
  }
  return Tokenizer(std::move(merges));
}

}  // namespace nk::lm
