// test_lm_tokenizer.cpp - nk::lm::Tokenizer: lossless round trips, training
// against a brute-force trainer and merges counted by hand, encoding against
// GPT-2's bpe() loop, the pre-tokenisation rule, offsets, specials, HDF5
// storage and the errors for bad ids and tampered files.
#include <doctest/doctest.h>

#include <climits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/lm/tokenizer.hpp"
#include "nk/rng.hpp"
#include "test_support.hpp"

namespace {

using nk::lm::Tokenizer;
using Merges = std::vector<std::pair<int32_t, int32_t>>;

const char* const kEnglish[] = {
    "The quick brown fox jumps over the lazy dog. The dog did not mind; it had seen the fox before, "
    "and it knew that the fox was only showing off for the birds in the hedge.",
    "It's a truth universally acknowledged that a single man in possession of a good fortune must be "
    "in want of a wife. However little known the feelings or views of such a man may be, they're "
    "fixed in the minds of the surrounding families.",
    "In the beginning the Universe was created. This has made a lot of people very angry and been "
    "widely regarded as a bad move. We'll see what the people of the town think of it in 1979, "
    "when the report is due.",
    "There is nothing either good or bad, but thinking makes it so. The rest is silence, and the "
    "silence of the night is the best thing the town has, or so the people there say.\n\n"
    "    Then they went home, and the night went on without them.",
    "Café crème, naïve façade: les mots français gardent leurs accents. Ωμέγα und Straße too.",
};

std::vector<std::string_view> english_documents(int repeats) {
  std::vector<std::string_view> documents;
  for (int r = 0; r < repeats; ++r) {
    for (const char* text : kEnglish) documents.emplace_back(text);
  }
  return documents;
}

std::string random_bytes(nk::Rng& rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng.below(256));
  return s;
}

/// Random text drawn from the characters of the English paragraphs, so that
/// merges apply often.
std::string random_text(nk::Rng& rng, size_t n) {
  const std::string_view alphabet = kEnglish[1];
  std::string s(n, '\0');
  for (char& c : s) c = alphabet[rng.below(alphabet.size())];
  return s;
}

/// GPT-2's bpe() loop: merge the lowest-ranked adjacent pair everywhere, repeat.
std::vector<int32_t> reference_bpe(const Merges& merges, std::string_view word) {
  std::map<std::pair<int32_t, int32_t>, int32_t> rank;
  for (size_t i = 0; i < merges.size(); ++i) rank.emplace(merges[i], static_cast<int32_t>(i));
  std::vector<int32_t> symbols;
  for (char b : word) symbols.push_back(static_cast<unsigned char>(b));
  while (symbols.size() >= 2) {
    int32_t best = INT_MAX;
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      const auto found = rank.find({symbols[i], symbols[i + 1]});
      if (found != rank.end()) best = std::min(best, found->second);
    }
    if (best == INT_MAX) break;
    std::vector<int32_t> merged;
    for (size_t i = 0; i < symbols.size();) {
      if (i + 1 < symbols.size() && std::make_pair(symbols[i], symbols[i + 1]) == merges[best]) {
        merged.push_back(256 + best);
        i += 2;
      } else {
        merged.push_back(symbols[i++]);
      }
    }
    symbols = merged;
  }
  return symbols;
}

/// Recounts every pair over every word per merge (ties to the smaller pair,
/// stops below two occurrences): the definition train() must match.
Merges reference_train(const std::map<std::string, int64_t>& words, size_t wanted) {
  std::vector<std::pair<std::vector<int32_t>, int64_t>> symbols;
  for (const auto& [word, count] : words) {
    std::vector<int32_t> s;
    for (char b : word) s.push_back(static_cast<unsigned char>(b));
    symbols.emplace_back(s, count);
  }
  Merges merges;
  while (merges.size() < wanted) {
    std::map<std::pair<int32_t, int32_t>, int64_t> counts;
    for (const auto& [s, count] : symbols) {
      for (size_t i = 0; i + 1 < s.size(); ++i) counts[{s[i], s[i + 1]}] += count;
    }
    std::pair<int32_t, int32_t> best{};
    int64_t best_count = 0;
    for (const auto& [pair, count] : counts) {
      if (count > best_count) best = pair, best_count = count;
    }
    if (best_count < 2) break;
    const auto id = static_cast<int32_t>(256 + merges.size());
    merges.push_back(best);
    for (auto& [s, count] : symbols) {
      std::vector<int32_t> merged;
      for (size_t i = 0; i < s.size();) {
        if (i + 1 < s.size() && std::make_pair(s[i], s[i + 1]) == best) {
          merged.push_back(id);
          i += 2;
        } else {
          merged.push_back(s[i++]);
        }
      }
      s = merged;
    }
  }
  return merges;
}

/// Tokens tile the input: begin[0] = 0, each token starts where the last
/// ended and holds exactly the input's bytes there.
void check_offsets(const Tokenizer& tok, std::string_view text) {
  std::vector<int32_t> ids;
  std::vector<int64_t> begin;
  tok.encode_with_offsets(text, ids, begin);
  REQUIRE(ids.size() == begin.size());
  CHECK(ids == tok.encode(text));
  int64_t at = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    REQUIRE(begin[i] == at);
    const std::string_view piece = tok.bytes_of(ids[i]);
    REQUIRE(!piece.empty());
    REQUIRE(text.substr(static_cast<size_t>(at), piece.size()) == piece);
    at += static_cast<int64_t>(piece.size());
  }
  CHECK(at == static_cast<int64_t>(text.size()));
}

void write_tokenizer_group(const std::string& path, const std::vector<int32_t>& flat, std::vector<int64_t> shape,
                           const std::string& kind, int64_t vocab) {
  nk::h5::Writer out(path, "test.tokenizer/1");
  out.write("/tok/merges", flat.data(), shape, "M,pair");
  out.attr("/tok", "kind", kind);
  out.attr("/tok", "vocab", vocab);
  out.commit();
}

}  // namespace

TEST_SUITE("lm_tokenizer") {
  TEST_CASE("the untrained tokenizer is the 256 bytes and four specials") {
    const Tokenizer tok;
    CHECK(tok.size() == 260);
    CHECK(tok.merges().empty());
    CHECK(tok.bos() == 256);
    CHECK(tok.pad() == 259);
    const std::string text = "héllo\n";
    const std::vector<int32_t> ids = tok.encode(text);
    REQUIRE(ids.size() == text.size());
    for (size_t i = 0; i < ids.size(); ++i) CHECK(ids[i] == static_cast<unsigned char>(text[i]));
    CHECK(tok.decode(ids) == text);
  }

  TEST_CASE("the first merges of a tiny corpus are the ones counted by hand") {
    // Words "aaab" x1 and " aaab" x2; "xy" once. (a,a) 6 -> 256; then (a,b)
    // and (256,a) both 3, the tie to the smaller pair (97,98) -> 257; then
    // (256,257) 3 -> 258; (' ',258) 2 -> 259; then no pair occurs twice.
    const std::vector<std::string_view> documents{"aaab aaab aaab", "xy"};
    const Tokenizer tok = Tokenizer::train(documents, 2048);
    const Merges expected{{97, 97}, {97, 98}, {256, 257}, {32, 258}};
    CHECK(tok.merges() == expected);
    CHECK(tok.size() == 264);  // the documented smaller vocabulary
    CHECK(tok.bos() == 260);
    CHECK(tok.encode("aaab aaab") == std::vector<int32_t>{258, 259});
    CHECK(tok.encode("aaaa") == std::vector<int32_t>{256, 256});
    CHECK(tok.encode("aaa") == std::vector<int32_t>{256, 97});
    CHECK(tok.encode("xy") == std::vector<int32_t>{120, 121});
    // Asking for fewer merges stops there.
    CHECK(Tokenizer::train(documents, 262).merges() == Merges{{97, 97}, {97, 98}});
    CHECK(Tokenizer::train(documents, 260).merges().empty());
  }

  TEST_CASE("training equals a brute-force trainer on random corpora") {
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      CAPTURE(seed);
      nk::Rng rng(seed);
      std::vector<std::string> storage;
      std::map<std::string, int64_t> words;
      for (int d = 0; d < 4; ++d) {
        std::string document;
        for (int w = 0; w < 60; ++w) {
          std::string word = w ? " " : "";
          const uint64_t length = 1 + rng.below(6);
          for (uint64_t k = 0; k < length; ++k) word += static_cast<char>('a' + rng.below(4));
          ++words[word];
          document += word;
        }
        storage.push_back(document);
      }
      const std::vector<std::string_view> documents(storage.begin(), storage.end());
      const Merges expected = reference_train(words, 200);
      const Tokenizer tok = Tokenizer::train(documents, 460);
      CHECK(tok.merges() == expected);
      CHECK(tok.size() == 260 + static_cast<int64_t>(expected.size()));
    }
  }

  TEST_CASE("training on English is deterministic and compresses") {
    const std::vector<std::string_view> documents = english_documents(3);
    const Tokenizer tok = Tokenizer::train(documents, 400);
    CHECK(tok.size() == 400);
    CHECK(Tokenizer::train(documents, 400).merges() == tok.merges());
    // Word counts do not depend on the documents' order.
    std::vector<std::string_view> reversed(documents.rbegin(), documents.rend());
    CHECK(Tokenizer::train(reversed, 400).merges() == tok.merges());
    CHECK(Tokenizer::train(documents, 400).fingerprint() == tok.fingerprint());
    CHECK(Tokenizer::train(documents, 399).fingerprint() != tok.fingerprint());

    size_t bytes = 0, tokens = 0;
    for (std::string_view document : documents) {
      const std::vector<int32_t> ids = tok.encode(document);
      CHECK(tok.decode(ids) == document);
      bytes += document.size();
      tokens += ids.size();
    }
    CHECK(static_cast<double>(tokens) < 0.5 * static_cast<double>(bytes));

    // Asking for more than the text supports stops when no pair occurs twice.
    const Tokenizer all = Tokenizer::train(documents, 1 << 20);
    CHECK(all.size() < (1 << 20));
    CHECK(all.size() > 400);
    CHECK(Tokenizer::train(documents, all.size() + 50).merges() == all.merges());
  }

  TEST_CASE("decode(encode(x)) == x on random bytes, UTF-8 and empty input") {
    const Tokenizer tok = Tokenizer::train(english_documents(2), 500);
    nk::Rng rng(7);
    CHECK(tok.encode("").empty());
    CHECK(tok.decode(std::vector<int32_t>{}).empty());
    for (size_t n = 0; n < 200; ++n) {
      CAPTURE(n);
      const std::string bytes = random_bytes(rng, n);
      REQUIRE(tok.decode(tok.encode(bytes)) == bytes);
      const std::string text = random_text(rng, n);
      REQUIRE(tok.decode(tok.encode(text)) == text);
    }
    for (size_t n : {1000u, 4096u, 20000u}) {
      const std::string bytes = random_bytes(rng, n);
      CHECK(tok.decode(tok.encode(bytes)) == bytes);
    }
    const std::string utf8 =
        "Ωμέγα, Straße, naïve café — 日本語のテキスト, emoji 😀👍🏽 and \xff\xfe broken \xc3.";
    const std::vector<int32_t> ids = tok.encode(utf8);
    CHECK(tok.decode(ids) == utf8);
    for (int32_t id : ids) CHECK(id < tok.bos());
  }

  TEST_CASE("encoding a word equals GPT-2's bpe() loop") {
    const Tokenizer tok = Tokenizer::train(english_documents(2), 600);
    nk::Rng rng(11);
    // Single words (letters after one space), so the loop sees what encode() sees.
    const std::string letters = "etaoinshrdlucmfwyp";
    for (int trial = 0; trial < 300; ++trial) {
      std::string word = " ";
      const uint64_t length = 1 + rng.below(trial < 250 ? 12 : 400);
      for (uint64_t k = 0; k < length; ++k) word += letters[rng.below(letters.size())];
      CAPTURE(word);
      REQUIRE(tok.encode(word) == reference_bpe(tok.merges(), word));
    }
    // Overlapping occurrences of a pair of equal symbols, in a long word.
    const Tokenizer runs = Tokenizer::from_merges({{97, 97}, {256, 256}, {257, 97}});
    for (size_t n : {1u, 2u, 3u, 5u, 7u, 8u, 9u, 10000u}) {
      const std::string word(n, 'a');
      CAPTURE(n);
      CHECK(runs.encode(word) == reference_bpe(runs.merges(), word));
    }
  }

  TEST_CASE("pre-tokenisation: merges never cross a word boundary") {
    // A whitespace run before a word leaves its last space to the word.
    const Tokenizer spaces = Tokenizer::from_merges({{32, 32}, {32, 98}});
    CHECK(spaces.encode("a   b") == std::vector<int32_t>{97, 256, 257});
    CHECK(spaces.encode("a  ") == std::vector<int32_t>{97, 256});  // trailing run kept whole
    // Newlines: "\n\n" before a word splits into "\n", "\n" (only a space joins a word).
    const Tokenizer newlines = Tokenizer::from_merges({{10, 10}, {10, 121}});
    CHECK(newlines.encode("x\n\ny") == std::vector<int32_t>{120, 10, 10, 121});
    CHECK(newlines.encode("x\n\n") == std::vector<int32_t>{120, 256});
    // Contractions split off ("don", "'t"), although n' has the lower rank.
    const Tokenizer contractions = Tokenizer::from_merges({{110, 39}, {39, 116}});
    CHECK(contractions.encode("don't") == std::vector<int32_t>{100, 111, 110, 257});
    // Upper case is no contraction: "DON", "'", "T".
    const Tokenizer upper = Tokenizer::from_merges({{78, 39}, {39, 84}});
    CHECK(upper.encode("DON'T") == std::vector<int32_t>{68, 79, 78, 39, 84});
    // Letters, digits and punctuation are separate words; a space leads each.
    const Tokenizer classes = Tokenizer::from_merges({{98, 49}, {32, 49}, {32, 44}, {44, 44}});
    CHECK(classes.encode("ab12") == std::vector<int32_t>{97, 98, 49, 50});
    CHECK(classes.encode("a 12") == std::vector<int32_t>{97, 257, 50});
    CHECK(classes.encode("a ,,,") == std::vector<int32_t>{97, 258, 259});
    // Bytes >= 0x80 are letters: "é" stays one word, "!" is another.
    const Tokenizer utf8 = Tokenizer::from_merges({{0xc3, 0xa9}, {0xa9, 0x21}, {120, 256}});
    CHECK(utf8.encode("\xc3\xa9!") == std::vector<int32_t>{256, 33});
    CHECK(utf8.encode("x\xc3\xa9") == std::vector<int32_t>{258});
  }

  TEST_CASE("offsets tile the input") {
    const Tokenizer tok = Tokenizer::train(english_documents(2), 500);
    nk::Rng rng(3);
    for (std::string_view document : english_documents(1)) check_offsets(tok, document);
    for (size_t n : {0u, 1u, 2u, 17u, 500u}) {
      check_offsets(tok, random_bytes(rng, n));
      check_offsets(tok, random_text(rng, n));
    }
    std::vector<int32_t> ids{1, 2, 3};
    std::vector<int64_t> begin{4};
    tok.encode_with_offsets("", ids, begin);
    CHECK(ids.empty());
    CHECK(begin.empty());
  }

  TEST_CASE("specials are the top four ids and decode to nothing") {
    const Tokenizer tok = Tokenizer::train(english_documents(1), 300);
    REQUIRE(tok.size() == 300);
    CHECK(tok.bos() == 296);
    CHECK(tok.eos() == 297);
    CHECK(tok.mask() == 298);
    CHECK(tok.pad() == 299);
    const std::vector<int32_t> specials{tok.bos(), tok.eos(), tok.mask(), tok.pad()};
    CHECK(tok.decode(specials) == "");
    for (int32_t id : specials) CHECK(tok.bytes_of(id).empty());
    const std::vector<int32_t> mixed{tok.bos(), 104, 105, tok.eos()};
    CHECK(tok.decode(mixed) == "hi");
    CHECK(tok.bytes_of(295) ==
          std::string(tok.bytes_of(tok.merges()[39].first)) + std::string(tok.bytes_of(tok.merges()[39].second)));
  }

  TEST_CASE("bad ids and bad merges are errors with their exit codes") {
    const Tokenizer tok = Tokenizer::train(english_documents(1), 300);
    using nk::test::exit_code;
    CHECK(exit_code([&] { tok.decode(std::vector<int32_t>{300}); }) == 3);
    CHECK(exit_code([&] { tok.decode(std::vector<int32_t>{65, -1}); }) == 3);
    CHECK(exit_code([&] { tok.bytes_of(1 << 30); }) == 3);
    CHECK(exit_code([&] { tok.decode(std::vector<int32_t>{299}); }) == 0);
    CHECK(exit_code([] { Tokenizer::train(std::vector<std::string_view>{"ab ab"}, 259); }) == 2);
    CHECK(exit_code([] { Tokenizer::train(std::vector<std::string_view>{"ab ab"}, (1 << 20) + 1); }) == 2);
    CHECK(exit_code([] { Tokenizer::from_merges({{97, 256}}); }) == 2);
    CHECK(exit_code([] { Tokenizer::from_merges({{97, 98}, {256, 257}}); }) == 2);
    CHECK(exit_code([] { Tokenizer::from_merges({{-1, 98}}); }) == 2);
    CHECK(exit_code([] { Tokenizer::from_merges({{97, 98}, {97, 98}}); }) == 2);
    CHECK(exit_code([] { Tokenizer::from_merges({{97, 98}, {256, 256}}); }) == 0);
  }

  TEST_CASE("save and load round-trip through HDF5") {
    nk::test::ScratchDir dir;
    const std::string path = dir.file("tokenizer.h5");
    const Tokenizer tok = Tokenizer::train(english_documents(2), 450);
    const Tokenizer empty;
    {
      nk::h5::Writer out(path, "test.tokenizer/1");
      tok.save(out, "/tokenizer");
      empty.save(out, "/nested/empty");
      out.commit();
    }
    const nk::h5::File in = nk::h5::File::open(path);
    CHECK(in.info("/tokenizer/merges").shape == std::vector<int64_t>{190, 2});
    CHECK(in.info("/tokenizer/merges").dims == "M,pair");
    CHECK(in.attr_string("/tokenizer", "kind") == "byte-bpe/1");
    CHECK(in.attr_number("/tokenizer", "vocab") == 450.0);
    const Tokenizer back = Tokenizer::load(in, "/tokenizer");
    CHECK(back.merges() == tok.merges());
    CHECK(back.size() == tok.size());
    CHECK(back.fingerprint() == tok.fingerprint());
    for (std::string_view document : english_documents(1)) CHECK(back.encode(document) == tok.encode(document));
    const Tokenizer empty_back = Tokenizer::load(in, "/nested/empty");
    CHECK(empty_back.size() == 260);
    CHECK(empty_back.fingerprint() == empty.fingerprint());
    CHECK(empty_back.fingerprint() != tok.fingerprint());
  }

  TEST_CASE("load refuses tampered tokenizers with exit 3") {
    nk::test::ScratchDir dir;
    using nk::test::exit_code;
    const auto load_code = [&](const std::string& name, const std::vector<int32_t>& flat, std::vector<int64_t> shape,
                               const std::string& kind, int64_t vocab) {
      const std::string path = dir.file(name);
      write_tokenizer_group(path, flat, std::move(shape), kind, vocab);
      const nk::h5::File in = nk::h5::File::open(path);
      return exit_code([&] { Tokenizer::load(in, "/tok"); });
    };
    CHECK(load_code("good.h5", {97, 97, 256, 98}, {2, 2}, "byte-bpe/1", 262) == 0);
    CHECK(load_code("forward.h5", {97, 97, 257, 98}, {2, 2}, "byte-bpe/1", 262) == 3);
    CHECK(load_code("negative.h5", {97, -5}, {1, 2}, "byte-bpe/1", 261) == 3);
    CHECK(load_code("repeated.h5", {97, 97, 97, 97}, {2, 2}, "byte-bpe/1", 262) == 3);
    CHECK(load_code("kind.h5", {97, 97, 256, 98}, {2, 2}, "gpt2-bpe/1", 262) == 3);
    CHECK(load_code("vocab.h5", {97, 97, 256, 98}, {2, 2}, "byte-bpe/1", 263) == 3);
    CHECK(load_code("shape.h5", {97, 97, 98, 99, 100, 101}, {2, 3}, "byte-bpe/1", 262) == 3);
    CHECK(load_code("rank.h5", {97, 97, 256, 98}, {4}, "byte-bpe/1", 262) == 3);

    const std::string path = dir.file("forward.h5");
    const nk::h5::File in = nk::h5::File::open(path);
    try {
      Tokenizer::load(in, "/tok");
      FAIL("expected an error");
    } catch (const nk::Error& e) {
      const std::string message = e.what();
      CHECK(message.find(path) != std::string::npos);
      CHECK(message.find("/tok/merges") != std::string::npos);
    }
    CHECK(exit_code([&] { Tokenizer::load(in, "/absent"); }) == 3);
  }

  TEST_CASE("another vocabulary layout: ids mapped both ways, specials where it puts them, saved and loaded") {
    const Tokenizer tok = Tokenizer::train(english_documents(2), 400);
    const auto tokens = static_cast<int32_t>(256 + tok.merges().size());
    // The identity layout is nk's own.
    Tokenizer::Layout same;
    for (int32_t t = 0; t < tokens; ++t) same.ids.push_back(t);
    same.specials = {tokens, tokens + 1, tokens + 2, tokens + 3};
    same.vocab = tokens + 4;
    CHECK(Tokenizer::from_layout(tok.merges(), same).native());
    // Reversed ids with GPT-2-like specials: one EOS at id 0 (BOS falls back to it), no MASK, PAD, 5 spare ids.
    Tokenizer::Layout other;
    const int32_t V = tokens + 6;
    for (int32_t t = 0; t < tokens; ++t) other.ids.push_back(V - 1 - t);
    other.specials = {-1, 0, -1, -1};
    other.names[1] = "<|endoftext|>";
    other.vocab = V;
    const Tokenizer mapped = Tokenizer::from_layout(tok.merges(), other);
    CHECK_FALSE(mapped.native());
    CHECK(mapped.size() == V);
    CHECK(mapped.bos() == 0);
    CHECK(mapped.eos() == 0);
    CHECK(mapped.mask() == -1);
    CHECK(mapped.special_name(1) == "<|endoftext|>");
    CHECK(mapped.fingerprint() != tok.fingerprint());
    for (std::string_view document : english_documents(1)) {
      const std::vector<int32_t> a = tok.encode(document), b = mapped.encode(document);
      REQUIRE(a.size() == b.size());
      for (size_t k = 0; k < a.size(); ++k) CHECK(b[k] == V - 1 - a[k]);
      CHECK(mapped.decode(b) == document);
    }
    CHECK(mapped.bytes_of(0).empty());  // the special
    CHECK(mapped.bytes_of(3).empty());  // a spare id
    nk::test::ScratchDir dir;
    const std::string path = dir.file("mapped.h5");
    {
      nk::h5::Writer out(path, "test.tokenizer/1");
      mapped.save(out, "/tok");
      out.commit();
    }
    const nk::h5::File in = nk::h5::File::open(path);
    CHECK(in.attr_string("/tok", "kind") == "byte-bpe-mapped/1");
    const Tokenizer back = Tokenizer::load(in, "/tok");
    CHECK(back.fingerprint() == mapped.fingerprint());
    CHECK(back.special_name(1) == "<|endoftext|>");
    CHECK(back.encode("The cat.") == mapped.encode("The cat."));
    // A byte without a token cannot be encoded (exit 3); bad layouts are usage errors.
    Tokenizer::Layout gap = other;
    gap.ids[static_cast<size_t>('~')] = -1;
    const Tokenizer holes = Tokenizer::from_layout(tok.merges(), gap);
    using nk::test::exit_code;
    CHECK(exit_code([&] { holes.encode("a~b"); }) == 3);
    CHECK(exit_code([&] { holes.encode("ab"); }) == 0);
    Tokenizer::Layout twice = other;
    twice.ids[1] = twice.ids[0];
    CHECK(exit_code([&] { Tokenizer::from_layout(tok.merges(), twice); }) == 2);
    Tokenizer::Layout none = other;
    none.specials = {-1, -1, -1, -1};
    CHECK(exit_code([&] { Tokenizer::from_layout(tok.merges(), none); }) == 2);
    Tokenizer::Layout on_token = other;
    on_token.specials[1] = V - 1;
    CHECK(exit_code([&] { Tokenizer::from_layout(tok.merges(), on_token); }) == 2);
  }
}
