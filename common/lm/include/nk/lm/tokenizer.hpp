// tokenizer.hpp - byte-level BPE (GPT-2's scheme over raw bytes): ids 0..255
// are the bytes, then one id per learned merge (id 256 + i stands for the
// bytes of merge i's two parts, concatenated), then the four special tokens
// BOS, EOS, MASK, PAD at the top of the vocabulary. Lossless on any bytes
// (UTF-8 or not); stored inside checkpoints and corpora.
//
// Pre-tokenisation (merges never cross a word boundary) is GPT-2's pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?L+| ?N+| ?O+|W+(?!\S)|W+
// taken over bytes, first alternative that matches wins: L = a letter (ASCII
// A-Z a-z, and every byte >= 0x80, so a UTF-8 word stays one word), N = an
// ASCII digit, W = whitespace (space, \t, \n, \v, \f, \r), O = any other
// byte; " ?" is one optional leading space (0x20 only). So a run of
// whitespace before a word leaves its last space to the word ("a   b" ->
// "a", "  ", " b"), and the contractions are lower case only, as in GPT-2.
#pragma once
#include <cstdint>
#include <array>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace nk::h5 {
class File;
class Writer;
}  // namespace nk::h5

namespace nk::lm {

class Tokenizer {
 public:
  /// Where the tokens sit in a vocabulary laid out otherwise than nk's (a
  /// Hugging Face byte-level BPE imported with its model): the vocabulary id
  /// of byte b (ids[b], -1 when the vocabulary has no token for it) and of
  /// merge i's result (ids[256 + i]), the ids of BOS, EOS, MASK and PAD (-1:
  /// absent; BOS and EOS may be one token) and their texts, the vocabulary
  /// size. Ids not named are unused: they decode to nothing.
  struct Layout {
    std::vector<int32_t> ids;
    std::array<int32_t, 4> specials{-1, -1, -1, -1};
    std::array<std::string, 4> names;
    int64_t vocab = 0;
  };

  /// 256 byte tokens, no merges, the 4 specials (vocabulary 260).
  Tokenizer();
  /// Learns vocab - 260 merges from the documents (pre-split into words as
  /// above, a word never merging across a split): each step merges the
  /// adjacent pair most frequent over all words. Deterministic: ties
  /// between equally frequent pairs go to the smaller (left id, right id).
  /// Stops early when no pair occurs twice, so size() may be below 'vocab'.
  /// vocab must be in 260..1<<20 (usage error otherwise).
  static Tokenizer train(std::span<const std::string_view> documents, int64_t vocab = 2048);

  /// Words split as above, then merges applied within each word lowest
  /// rank first (GPT-2's bpe()). Never emits a special. Thread-safe.
  std::vector<int32_t> encode(std::string_view bytes) const;
  /// encode() plus, per token, the byte offset where it begins in 'bytes'.
  void encode_with_offsets(std::string_view bytes, std::vector<int32_t>& ids, std::vector<int64_t>& begin) const;
  /// The bytes of the tokens; specials decode to nothing; an id outside the
  /// vocabulary is an input error (exit 3).
  std::string decode(std::span<const int32_t> ids) const;
  /// The bytes one token stands for (empty for a special; exit 3 outside
  /// the vocabulary). Valid as long as the tokenizer.
  std::string_view bytes_of(int32_t id) const;

  int64_t size() const;  ///< the vocabulary: 256 + merges + 4 in nk's layout
  /// The specials' ids (nk's layout: the top four); in another layout -1
  /// where it has none (MASK, PAD; BOS is EOS where only EOS exists).
  int32_t bos() const { return specials_[0]; }
  int32_t eos() const { return specials_[1]; }
  int32_t mask() const { return specials_[2]; }
  int32_t pad() const { return specials_[3]; }
  /// The merges over internal ids (byte b is b, merge i makes 256 + i): the
  /// vocabulary ids themselves in nk's layout, else mapped by vocab_id().
  const std::vector<std::pair<int32_t, int32_t>>& merges() const { return merges_; }
  /// The vocabulary id of internal token t (0..256 + merges - 1); -1 for a
  /// byte the vocabulary lacks.
  int32_t vocab_id(int32_t t) const { return to_vocab_.empty() ? t : to_vocab_[static_cast<size_t>(t)]; }
  /// The text a special stands for in exported vocabularies (k: 0 BOS, 1 EOS, 2 MASK, 3 PAD).
  const std::string& special_name(int k) const { return names_[static_cast<size_t>(k)]; }
  /// True in nk's own layout (ids = bytes, merges, then the four specials).
  bool native() const { return to_vocab_.empty(); }
  /// In another layout, validated: every id within the vocabulary, no two
  /// tokens on one id, a BOS or an EOS (usage error otherwise). A layout
  /// that is nk's own gives a native tokenizer.
  static Tokenizer from_layout(std::vector<std::pair<int32_t, int32_t>> merges, Layout layout);
  /// A 64-bit fingerprint of the merges (corpora record the tokenizer they were cut with).
  uint64_t fingerprint() const;

  /// group/merges int32 [M,2] ("M,pair"; [0,2] without merges), attributes
  /// kind = "byte-bpe/1" and vocab = size() on the group.
  void save(nk::h5::Writer& out, const std::string& group) const;
  /// Exit 3 naming file and dataset for a foreign kind, merges not [M,2],
  /// merges that reference ids not yet defined (or repeat a pair), or a vocab
  /// attribute that disagrees with the merges.
  static Tokenizer load(const nk::h5::File& in, const std::string& group);
  /// Built from explicit merges (import of a Hugging Face byte-level BPE);
  /// merge i must combine ids in 0..256+i-1, each pair once, at most
  /// (1<<20) - 260 merges (usage error otherwise).
  static Tokenizer from_merges(std::vector<std::pair<int32_t, int32_t>> merges);

 private:
  std::vector<std::pair<int32_t, int32_t>> merges_;
  std::vector<std::string> bytes_;              // per non-special id
  std::unordered_map<uint64_t, int32_t> rank_;  // pair_key(left, right) -> merge index
  std::array<int32_t, 4> specials_{};
  std::array<std::string, 4> names_;
  int64_t vocab_ = 0;
  std::vector<int32_t> to_vocab_;    // internal -> vocabulary id; empty in nk's layout
  std::vector<int32_t> from_vocab_;  // vocabulary id -> internal, -1 for specials and unused ids

  /// Takes merges already validated; fills bytes_ and rank_.
  explicit Tokenizer(std::vector<std::pair<int32_t, int32_t>> merges);
  /// The merge index of (left, right), -1 when they do not merge.
  int32_t rank_of(int32_t left, int32_t right) const;
  /// Appends the tokens of one pre-tokenised word.
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;
};

}  // namespace nk::lm
