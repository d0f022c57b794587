// test_lm_text.cpp - nk::lm's text readers on fixture folders in each Debian
// format (fortunes, WordNet 3.0 data/index files, a dictzip GCIDE written
// here with zlib), plain text files, and the corpus: its file, split hash,
// exclusion, stream, sampler and the errors for tampered files.
#include <doctest/doctest.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/lm/corpus.hpp"
#include "nk/lm/text.hpp"
#include "nk/lm/tokenizer.hpp"
#include "nk/rng.hpp"
#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;
using nk::lm::Document;
using nk::lm::Split;
using nk::lm::Tokenizer;

void write_file(const std::string& path, const std::string& content) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << content;
}

/// The exit code and message f() fails with; {0, ""} when it does not fail.
std::pair<int, std::string> failure_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const nk::Error& e) {
    return {static_cast<int>(e.code()), e.what()};
  }
  return {0, ""};
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::vector<std::string> names_of(const std::vector<Document>& documents) {
  std::vector<std::string> names;
  for (const Document& d : documents) names.push_back(d.name);
  return names;
}

std::string text_named(const std::vector<Document>& documents, const std::string& name) {
  for (const Document& d : documents) {
    if (d.name == name) return d.text;
  }
  FAIL("no document " << name);
  return {};
}

// ---- fixtures ------------------------------------------------------------------------

void write_fortunes(const std::string& root) {
  write_file(root + "/beta", "Beta one\n%\n");
  write_file(
      root + "/alpha",
      "First fortune\n\t-- Someone\n%\nSecond _\bu_\bn_\bd_\be_\br line, B\bBo\bol\bld\bd\n%\n%\n  \n%\nThird\n\n");
  write_file(root + "/alpha.dat", std::string("\0\0\0\2\0\0\0\3", 8));
  write_file(root + "/alpha.u8", "Not read\n%\n");
  write_file(root + "/off/alpha", "Offensive\n%\n");
}

const char* const kLicense = "  1 This software and database is being provided to you, the LICENSEE, by  \n";

/// A WordNet folder: real lines (shortened pointer lists), a lemma whose
/// second sense is a synset of its own ("dog.n.02"), w_cnt in hexadecimal,
/// verb frames, a satellite with an adjective marker, an attribution.
void write_wordnet(const std::string& root) {
  write_file(root + "/data.noun",
             std::string(kLicense) +
                 "00001740 03 n 01 entity 0 003 ~ 00001930 n 0000 ~ 00002137 n 0000 ~ 04424418 n 0000 | that which "
                 "is perceived or known or inferred to have its own distinct existence (living or nonliving)  \n"
                 "02084071 05 n 03 dog 0 domestic_dog 0 Canis_familiaris 0 001 @ 02083346 n 0000 | a member of the "
                 "genus Canis; \"the dog barked all night\"  \n"
                 "10023039 18 n 01 dog 0 001 @ 10287213 n 0000 | informal term for a man; \"you lucky dog\"  \n"
                 "09000000 18 n 02 Bankhead 0 Tallulah_Bankhead 0 001 @i 00005000 n 0000 | United States actress (1903-1968)  \n"
                 "00005000 03 n 0a thing 0 t2 0 t3 0 t4 0 t5 0 t6 0 t7 0 t8 0 t9 0 t10 0 000 | ten lemmas  \n");
  write_file(root + "/index.noun", std::string(kLicense) +
                                       "bankhead n 1 0 1 0 09000000  \n"
                                       "dog n 2 1 @ 2 1 02084071 10023039  \n"
                                       "entity n 1 1 ~ 1 1 00001740  \n"
                                       "thing n 1 0 1 0 00005000  \n");
  write_file(root + "/data.verb", std::string(kLicense) +
                                      "00001740 29 v 02 breathe 0 respire 0 001 * 00005041 v 0000 02 + 02 00 + 08 00 "
                                      "| draw air into, and expel out of, the lungs; \"I can breathe better now\"  \n");
  write_file(root + "/index.verb", std::string(kLicense) + "breathe v 1 1 * 1 1 00001740  \n");
  write_file(root + "/data.adj", std::string(kLicense) +
                                     "00003356 00 a 01 emergent 0 001 & 00003553 s 0000 | just beginning  \n"
                                     "00003553 00 s 02 emergent 0 emerging 0 001 & 00003356 a 0000 | coming into "
                                     "existence; \"an emergent republic\"  \n"
                                     "00004000 00 s 01 galore(ip) 0 000 | in great numbers; \"apples galore\"  \n");
  write_file(root + "/index.adj", std::string(kLicense) +
                                      "emergent a 2 1 & 2 0 00003356 00003553  \n"
                                      "galore a 1 0 1 0 00004000  \n");
  write_file(root + "/data.adv", std::string(kLicense) +
                                     "00001741 02 r 01 wrongfully 0 000 | in an unjust manner; \"she was wrongfully "
                                     "dismissed\"- Anon  \n");
  write_file(root + "/index.adv", std::string(kLicense) + "wrongfully r 1 0 1 0 00001741  \n");
}

/// dictd's base64 numbers, written independently of the reader.
std::string dictd_base64(uint64_t value) {
  const char* digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  do {
    out.insert(out.begin(), digits[value % 64]);
    value /= 64;
  } while (value > 0);
  return out;
}

void write_gzip(const std::string& path, const std::string& content) {
  const gzFile file = gzopen(path.c_str(), "wb");
  REQUIRE(file != nullptr);
  REQUIRE(gzwrite(file, content.data(), static_cast<unsigned>(content.size())) == static_cast<int>(content.size()));
  REQUIRE(gzclose(file) == Z_OK);
}

/// A GCIDE folder: dictd's metadata (and an alias of it), two entries of one
/// headword, an alias line pointing at another entry's bytes.
void write_gcide(const std::string& root) {
  const std::vector<std::string> entries = {
      "00-database-short\n   Test dictionary\n",
      "Dog \\Dog\\, n.\n   A domestic animal.\n   [1913 Webster]\n\n",
      "Dog \\Dog\\, v. t.\n   To follow.\n",
      "Sundog \\Sun\"dog`\\, n.\n   A spot near the sun; -- called also {dog}.\n",
      "Zebra \\Ze\"bra\\, n.\n   Striped.\n",
  };
  std::string dict;
  std::vector<std::string> ranges;
  for (const std::string& entry : entries) {
    ranges.push_back(dictd_base64(dict.size()) + "\t" + dictd_base64(entry.size()));
    dict += entry;
  }
  fs::create_directories(root);
  write_gzip(root + "/gcide.dict.dz", dict);
  write_file(root + "/gcide.index", "00-database-short\t" + ranges[0] + "\n00-gcide-short\t" + ranges[0] + "\ndog\t" +
                                        ranges[3] + "\nDog\t" + ranges[1] + "\nDog\t" + ranges[2] + "\nSundog\t" +
                                        ranges[3] + "\nZebra\t" + ranges[4] + "\n");
}

// ---- corpus helpers ------------------------------------------------------------------

/// The split rule corpus.hpp documents, computed here on its own.
Split expected_split(const std::string& name, double validation) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (const unsigned char c : name) hash = (hash ^ c) * 0x100000001b3ull;
  return static_cast<double>(nk::mix64(hash) >> 11) / 9007199254740992.0 < validation ? Split::validation
                                                                                      : Split::train;
}

std::vector<Document> generated_documents(int n) {
  const char* const words[] = {"the", "dog", "barked", "at", "a", "fox", "all", "night", "and", "day"};
  nk::Rng rng(7);
  std::vector<Document> documents;
  for (int i = 0; i < n; ++i) {
    std::string text;
    const uint64_t length = 1 + rng.below(12);
    for (uint64_t w = 0; w < length; ++w) text += std::string(w ? " " : "") + words[rng.below(10)];
    documents.push_back({"doc:" + std::to_string(i), text + "."});
  }
  return documents;
}

Tokenizer small_tokenizer() {
  const std::vector<std::string_view> texts = {"the dog barked at a fox all night.", "the fox and the dog, all day."};
  return Tokenizer::train(texts, 300);
}

/// A corpus file written by hand (tokenizer: bytes only, vocabulary 260).
void write_raw_corpus(const std::string& path, const std::string& schema, const std::vector<int32_t>& tokens,
                      const std::vector<int64_t>& offsets, const std::vector<int8_t>& split, size_t names) {
  nk::h5::Writer out(path, schema);
  out.write("/tokens", tokens.data(), {static_cast<int64_t>(tokens.size())}, "N");
  out.write("/doc_offsets", offsets.data(), {static_cast<int64_t>(offsets.size())}, "D+1");
  const std::vector<int64_t> bytes(offsets.size() - 1, 1);
  out.write("/doc_bytes", bytes.data(), {static_cast<int64_t>(bytes.size())}, "D");
  out.write("/split", split.data(), {static_cast<int64_t>(split.size())}, "D");
  std::vector<std::string> name_list;
  for (size_t i = 0; i < names; ++i) name_list.push_back(std::to_string(i));
  out.write_strings("/names", name_list, "D");
  Tokenizer().save(out, "/tokenizer");
  out.commit();
}

}  // namespace

TEST_SUITE("lm_text") {
  TEST_CASE("fortunes: files without an extension in sorted order, fortunes in file order") {
    nk::test::ScratchDir dir;
    write_fortunes(dir.file("fortunes"));
    const std::vector<Document> documents = nk::lm::debian_text("fortunes", dir.file("fortunes"));
    CHECK(names_of(documents) ==
          std::vector<std::string>{"fortunes:alpha:0", "fortunes:alpha:1", "fortunes:alpha:2", "fortunes:beta:0"});
    CHECK(documents[0].text == "First fortune\n\t-- Someone");
    CHECK(documents[1].text == "Second under line, Bold");
    CHECK(documents[2].text == "Third");
    CHECK(documents[3].text == "Beta one");
  }

  TEST_CASE("wordnet: one document per synset, named as NLTK names synsets") {
    nk::test::ScratchDir dir;
    write_wordnet(dir.file("wn"));
    const std::vector<Document> documents = nk::lm::debian_text("wordnet", dir.file("wn"));
    CHECK(names_of(documents) == std::vector<std::string>{"wordnet:entity.n.01", "wordnet:dog.n.01", "wordnet:dog.n.02",
                                                          "wordnet:bankhead.n.01", "wordnet:thing.n.01",
                                                          "wordnet:breathe.v.01", "wordnet:emergent.a.01",
                                                          "wordnet:emergent.s.02", "wordnet:galore.s.01",
                                                          "wordnet:wrongfully.r.01"});
    CHECK(text_named(documents, "wordnet:dog.n.01") ==
          "dog, domestic dog, Canis familiaris (noun): a member of the genus Canis; \"the dog barked all night\"");
    CHECK(text_named(documents, "wordnet:breathe.v.01") ==
          "breathe, respire (verb): draw air into, and expel out of, the lungs; \"I can breathe better now\"");
    CHECK(text_named(documents, "wordnet:galore.s.01") == "galore (adjective): in great numbers; \"apples galore\"");
    CHECK(contains(text_named(documents, "wordnet:thing.n.01"), "thing, t2, t3, t4, t5, t6, t7, t8, t9, t10 (noun)"));

    const std::vector<nk::lm::WordNetEntry> entries = nk::lm::wordnet_entries(dir.file("wn"));
    REQUIRE(entries.size() == documents.size());
    CHECK(entries[1].name == "dog.n.01");
    CHECK(entries[1].pos == 'n');
    CHECK(entries[1].lemmas == std::vector<std::string>{"dog", "domestic dog", "Canis familiaris"});
    CHECK(entries[1].gloss == "a member of the genus Canis");
    CHECK(entries[1].examples == std::vector<std::string>{"the dog barked all night"});
    CHECK(entries[3].lemmas == std::vector<std::string>{"Bankhead", "Tallulah Bankhead"});
    CHECK(entries[3].examples.empty());
    // Hypernyms: '@' and '@i' pointers within the part of speech; '~', '*' and '&' are not.
    CHECK(entries[1].offset == 2084071);
    CHECK(entries[1].hypernyms == std::vector<uint64_t>{2083346});
    CHECK(entries[3].hypernyms == std::vector<uint64_t>{5000});
    CHECK(entries[0].hypernyms.empty());
    CHECK(entries[5].hypernyms.empty());
    CHECK(entries[7].hypernyms.empty());
    CHECK(entries[7].name == "emergent.s.02");
    CHECK(entries[7].pos == 'a');
    CHECK(entries[9].pos == 'r');
    CHECK(entries[9].gloss == "in an unjust manner");
    CHECK(entries[9].examples == std::vector<std::string>{"she was wrongfully dismissed"});
  }

  TEST_CASE("wordnet: a malformed line is exit 3 naming the file and line") {
    nk::test::ScratchDir dir;
    write_wordnet(dir.file("wn"));
    write_file(dir.file("wn/data.noun"), std::string(kLicense) + "00001740 03 n 01 entity 0 000 | a thing\n" +
                                             "02084071 05 n 03 dog 0 001 | truncated\n");
    auto [code, message] = failure_of([&] { nk::lm::debian_text("wordnet", dir.file("wn")); });
    CHECK(code == 3);
    CHECK(contains(message, "data.noun"));
    CHECK(contains(message, "line 3"));

    write_wordnet(dir.file("wn"));
    write_file(dir.file("wn/index.verb"), "breathe v 1 1 * 1 1\n");
    std::tie(code, message) = failure_of([&] { nk::lm::wordnet_entries(dir.file("wn")); });
    CHECK(code == 3);
    CHECK(contains(message, "index.verb"));
    CHECK(contains(message, "line 1"));

    write_wordnet(dir.file("wn"));
    write_file(dir.file("wn/index.adv"), "wrongly r 1 0 1 0 00001741\n");  // the synset's lemma is not indexed
    std::tie(code, message) = failure_of([&] { nk::lm::wordnet_entries(dir.file("wn")); });
    CHECK(code == 3);
    CHECK(contains(message, "data.adv"));
  }

  TEST_CASE("gcide: one document per entry in index order, dictd's metadata skipped, names unique") {
    nk::test::ScratchDir dir;
    write_gcide(dir.file("dictd"));
    const std::vector<Document> documents = nk::lm::debian_text("gcide", dir.file("dictd"));
    CHECK(names_of(documents) == std::vector<std::string>{"gcide:Sundog", "gcide:Dog", "gcide:Dog:2", "gcide:Zebra"});
    CHECK(documents[0].text == "Sundog \\Sun\"dog`\\, n.\n   A spot near the sun; -- called also {dog}.");
    CHECK(documents[1].text == "Dog \\Dog\\, n.\n   A domestic animal.\n   [1913 Webster]");
    CHECK(documents[2].text == "Dog \\Dog\\, v. t.\n   To follow.");
  }

  TEST_CASE("gcide: a bad index line, an entry past the end or a truncated dictzip is exit 3") {
    nk::test::ScratchDir dir;
    write_gcide(dir.file("dictd"));
    const std::string index = dir.file("dictd/gcide.index");
    std::ofstream(index, std::ios::app) << "Zebu\tA*\tB\n";
    auto [code, message] = failure_of([&] { nk::lm::debian_text("gcide", dir.file("dictd")); });
    CHECK(code == 3);
    CHECK(contains(message, "gcide.index"));
    CHECK(contains(message, "line 8"));

    write_gcide(dir.file("dictd"));
    std::ofstream(index, std::ios::app) << "Zebu\t" << dictd_base64(100) << "\t" << dictd_base64(1000) << "\n";
    std::tie(code, message) = failure_of([&] { nk::lm::debian_text("gcide", dir.file("dictd")); });
    CHECK(code == 3);
    CHECK(contains(message, "Zebu"));

    write_gcide(dir.file("dictd"));
    const std::string dz = dir.file("dictd/gcide.dict.dz");
    fs::resize_file(dz, fs::file_size(dz) - 12);  // the trailer and some data
    std::tie(code, message) = failure_of([&] { nk::lm::debian_text("gcide", dir.file("dictd")); });
    CHECK(code == 3);
    CHECK(contains(message, "gcide.dict.dz"));
  }

  TEST_CASE("a source not installed is exit 4 naming folder and package; an unknown source is exit 2") {
    nk::test::ScratchDir dir;
    for (const char* source : {"fortunes", "wordnet", "gcide"}) {
      const auto [code, message] = failure_of([&] { nk::lm::debian_text(source, dir.file("absent")); });
      CHECK(code == 4);
      CHECK(contains(message, "absent"));
      CHECK(contains(message, nk::lm::debian_text_package(source)));
    }
    CHECK(nk::lm::debian_text_package("gcide") == "dict-gcide");
    CHECK(nk::lm::debian_text_root("wordnet") == "/usr/share/wordnet");
    fs::create_directories(dir.file("empty"));
    const auto [code, message] = failure_of([&] { nk::lm::debian_text("gcide", dir.file("empty")); });
    CHECK(code == 4);
    CHECK(contains(message, "gcide.index"));
    const auto [usage, listing] = failure_of([&] { nk::lm::debian_text("shakespeare"); });
    CHECK(usage == 2);
    CHECK(contains(listing, "fortunes, wordnet, gcide"));
  }

  TEST_CASE("text_file: the whole file or its paragraphs") {
    nk::test::ScratchDir dir;
    const std::string path = dir.file("book.txt");
    write_file(path, "\nOne line\nand another.\n\n \t\nSecond paragraph.\n\n\nThird.");
    const std::vector<Document> whole = nk::lm::text_file(path, false);
    REQUIRE(whole.size() == 1);
    CHECK(whole[0].name == path + ":0");
    CHECK(whole[0].text == "One line\nand another.\n\n \t\nSecond paragraph.\n\n\nThird.");
    const std::vector<Document> paragraphs = nk::lm::text_file(path, true);
    CHECK(names_of(paragraphs) == std::vector<std::string>{path + ":0", path + ":1", path + ":2"});
    CHECK(paragraphs[0].text == "One line\nand another.");
    CHECK(paragraphs[1].text == "Second paragraph.");
    CHECK(paragraphs[2].text == "Third.");
    CHECK(nk::test::exit_code([&] { nk::lm::text_file(dir.file("missing.txt"), true); }) == 4);
  }

  TEST_CASE("the installed fortunes, when there") {
    const std::string root = nk::lm::debian_text_root("fortunes");
    if (!fs::exists(root + "/fortunes")) {
      MESSAGE("skipped: the Debian package fortunes is not installed");
      return;
    }
    const std::vector<Document> documents = nk::lm::debian_text("fortunes");
    CHECK(documents.size() > 1000);
    const std::vector<std::string> names = names_of(documents);
    CHECK(std::set<std::string>(names.begin(), names.end()).size() == names.size());
    CHECK(std::is_sorted(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
      return a.substr(0, a.rfind(':')) < b.substr(0, b.rfind(':'));
    }));
  }

  TEST_CASE("corpus: write and open round trip, split by name hash") {
    nk::test::ScratchDir dir;
    const std::vector<Document> documents = generated_documents(2000);
    const Tokenizer tokenizer = small_tokenizer();
    nk::lm::write_corpus(dir.file("c.h5"), documents, tokenizer, {.validation = 0.1, .exclude = {}}, "generated");
    const nk::lm::Corpus corpus = nk::lm::Corpus::open(dir.file("c.h5"));
    REQUIRE(corpus.documents() == 2000);
    CHECK(corpus.tokenizer().merges() == tokenizer.merges());
    int64_t validation = 0, train_tokens = 0, validation_bytes = 0;
    for (int64_t d = 0; d < corpus.documents(); ++d) {
      const std::vector<int32_t> expected = tokenizer.encode(documents[d].text);
      const std::span<const int32_t> stored = corpus.document(d);
      CHECK(std::vector<int32_t>(stored.begin(), stored.end()) == expected);
      CHECK(corpus.name(d) == documents[d].name);
      CHECK(corpus.split(d) == expected_split(documents[d].name, 0.1));
      if (corpus.split(d) == Split::validation) {
        ++validation;
        validation_bytes += static_cast<int64_t>(documents[d].text.size());
      } else {
        train_tokens += static_cast<int64_t>(expected.size());
      }
    }
    CHECK(validation > 150);  // 200 expected, standard deviation 13
    CHECK(validation < 250);
    CHECK(corpus.tokens(Split::train) == train_tokens);
    CHECK(corpus.bytes(Split::validation) == validation_bytes);
    const nk::h5::File file = nk::h5::File::open(dir.file("c.h5"));
    CHECK(file.require_schema("nk-lm.corpus/") == "nk-lm.corpus/1");
    CHECK(file.attr_string("/", "sources") == "generated");
    CHECK(file.attr_number("/", "documents") == 2000.0);

    // The same names in reverse order land in the same splits.
    std::vector<Document> reversed(documents.rbegin(), documents.rend());
    nk::lm::write_corpus(dir.file("r.h5"), reversed, tokenizer, {.validation = 0.1, .exclude = {}}, "generated");
    const nk::lm::Corpus again = nk::lm::Corpus::open(dir.file("r.h5"));
    for (int64_t d = 0; d < again.documents(); ++d) CHECK(again.split(d) == corpus.split(1999 - d));
    CHECK(again.tokens(Split::validation) == corpus.tokens(Split::validation));
  }

  TEST_CASE("corpus: excluded names are dropped; nothing left is a usage error") {
    nk::test::ScratchDir dir;
    const std::vector<Document> documents = generated_documents(20);
    nk::lm::CorpusOptions options{.validation = 0.0, .exclude = {"doc:3", "doc:17", "doc:no-such"}};
    nk::lm::write_corpus(dir.file("c.h5"), documents, Tokenizer(), options, "generated");
    const nk::lm::Corpus corpus = nk::lm::Corpus::open(dir.file("c.h5"));
    REQUIRE(corpus.documents() == 18);
    for (int64_t d = 0; d < corpus.documents(); ++d) {
      CHECK(corpus.name(d) != "doc:3");
      CHECK(corpus.name(d) != "doc:17");
      CHECK(corpus.split(d) == Split::train);
    }
    CHECK(corpus.name(3) == "doc:4");
    CHECK(corpus.tokens(Split::validation) == 0);

    options.exclude.clear();
    for (const Document& d : documents) options.exclude.push_back(d.name);
    CHECK(nk::test::exit_code(
              [&] { nk::lm::write_corpus(dir.file("e.h5"), documents, Tokenizer(), options, "generated"); }) == 2);
    CHECK(!fs::exists(dir.file("e.h5")));
    CHECK(nk::test::exit_code([&] { nk::lm::write_corpus(dir.file("e.h5"), {}, Tokenizer(), {}, "nothing"); }) == 2);
  }

  TEST_CASE("corpus: the stream puts EOS after each document; the sampler cuts windows of it") {
    nk::test::ScratchDir dir;
    const std::vector<Document> documents = generated_documents(200);
    const Tokenizer tokenizer = small_tokenizer();
    nk::lm::write_corpus(dir.file("c.h5"), documents, tokenizer, {.validation = 0.2, .exclude = {}}, "generated");
    const nk::lm::Corpus corpus = nk::lm::Corpus::open(dir.file("c.h5"));
    std::vector<int32_t> expected;
    for (int64_t d = 0; d < corpus.documents(); ++d) {
      if (corpus.split(d) != Split::validation) continue;
      const std::vector<int32_t> ids = tokenizer.encode(documents[d].text);
      expected.insert(expected.end(), ids.begin(), ids.end());
      expected.push_back(tokenizer.eos());
    }
    const std::vector<int32_t> stream = corpus.stream(Split::validation);
    CHECK(stream == expected);

    const int64_t batch = 4, context = 16;
    const nk::lm::BatchSampler sampler(corpus, Split::validation, batch, context, 42);
    std::vector<int32_t> first(batch * (context + 1)), again(first.size()), next(first.size()), other(first.size());
    sampler.fill(5, first.data());
    sampler.fill(5, again.data());
    sampler.fill(6, next.data());
    nk::lm::BatchSampler(corpus, Split::validation, batch, context, 43).fill(5, other.data());
    CHECK(first == again);
    CHECK(first != next);
    CHECK(first != other);
    for (int64_t b = 0; b < batch; ++b) {
      const auto row = first.begin() + b * (context + 1);
      CHECK(std::search(stream.begin(), stream.end(), row, row + context + 1) != stream.end());
    }
    const std::vector<int32_t> train = corpus.stream(Split::train);
    CHECK(nk::test::exit_code([&] {
            nk::lm::BatchSampler(corpus, Split::validation, 1, static_cast<int64_t>(stream.size()), 1);
          }) == 2);
    CHECK(nk::test::exit_code(
              [&] { nk::lm::BatchSampler(corpus, Split::train, 1, static_cast<int64_t>(train.size()) - 1, 1); }) == 0);
  }

  TEST_CASE("corpus: tampered files are exit 3 naming the dataset") {
    nk::test::ScratchDir dir;
    const std::string path = dir.file("t.h5");
    write_raw_corpus(path, "nk-lm.corpus/1", {1, 2, 3, 259}, {0, 2, 4}, {0, 1}, 2);
    CHECK(nk::lm::Corpus::open(path).documents() == 2);

    const auto failure = [&] { return failure_of([&] { nk::lm::Corpus::open(path); }); };
    const auto expect_failure = [&](const std::string& dataset) {
      const auto [code, message] = failure();
      CHECK(code == 3);
      CHECK(contains(message, dataset));
      CHECK(contains(message, path));
    };
    write_raw_corpus(path, "nk-lm.model/1", {1, 2, 3, 4}, {0, 2, 4}, {0, 1}, 2);
    expect_failure("nk-lm.corpus/");
    write_raw_corpus(path, "nk-lm.corpus/1", {1, 2, 3, 4}, {0, 2, 3}, {0, 1}, 2);
    expect_failure("/doc_offsets");
    write_raw_corpus(path, "nk-lm.corpus/1", {1, 2, 3, 4}, {0, 3, 2, 4}, {0, 1, 0}, 3);
    expect_failure("/doc_offsets");
    write_raw_corpus(path, "nk-lm.corpus/1", {1, 2, 3, 4}, {1, 2, 4}, {0, 1}, 2);
    expect_failure("/doc_offsets");
    write_raw_corpus(path, "nk-lm.corpus/1", {1, 2, 3, 260}, {0, 2, 4}, {0, 1}, 2);
    expect_failure("/tokens");
    write_raw_corpus(path, "nk-lm.corpus/1", {1, -2, 3, 4}, {0, 2, 4}, {0, 1}, 2);
    expect_failure("/tokens");
    write_raw_corpus(path, "nk-lm.corpus/1", {1, 2, 3, 4}, {0, 2, 4}, {0, 2}, 2);
    expect_failure("/split");
    write_raw_corpus(path, "nk-lm.corpus/1", {1, 2, 3, 4}, {0, 2, 4}, {0, 1}, 3);
    expect_failure("/names");
    write_raw_corpus(path, "nk-lm.corpus/1", {1, 2, 3, 4}, {0, 2, 4}, {0}, 2);
    expect_failure("/split");
  }
}
