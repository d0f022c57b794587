// text.hpp - the English text Debian ships, read as named documents: the
// quotations of `fortunes`, WordNet 3.0's synsets (`wordnet-base`) and the
// GCIDE dictionary (`dict-gcide`), plus plain text files.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nk::lm {

struct Document {
  std::string name;  ///< stable across runs and machines, e.g. "fortunes:art:12", "wordnet:dog.n.01", "gcide:dog"
  std::string text;
};

/// One source by name, its documents in a fixed order ('root' replaces the
/// default folder; tests use fixture folders):
/// - "fortunes": the files of /usr/share/games/fortunes without an extension
///   (not *.dat, *.u8, nor the folder `off` of offensive ones), in sorted
///   order; fortunes (separated by lines "%") in file order, trailing newlines
///   trimmed, overstriking resolved ("_\bA" -> "A"), blank ones skipped. Named
///   "fortunes:<file>:<i>", i counting the kept fortunes of the file from 0.
/// - "wordnet": one per synset, data.noun, data.verb, data.adj, data.adv in
///   file order; named "wordnet:" + NLTK's synset name (see WordNetEntry);
///   text "dog, domestic dog, Canis familiaris (noun): <gloss as stored>",
///   the gloss being the definition then the quoted examples ("; "-separated).
///   The part of speech is noun, verb, adjective (satellites too) or adverb.
/// - "gcide": one per entry of /usr/share/dictd/gcide.dict.dz in gcide.index
///   order, its text as stored (GCIDE's light markup: \pro"nun`ci*a"tion\,
///   {cross references}, [1913 Webster] source notes; bytes, mostly UTF-8),
///   leading and trailing newlines trimmed. Index lines that point at the
///   same bytes (alternative headwords) give one document, named after the
///   first of those headwords the text starts with, else the first: "gcide:dog";
///   a name's later uses get ":2", ":3"... dictd's entries (headwords
///   00-database*, 00database*) and the lines sharing their bytes are skipped.
/// Exit 2 for another source name; exit 4 naming the folder (or file) and the
/// Debian package when the source is not installed; exit 3 naming the file and
/// line for a malformed line.
std::vector<Document> debian_text(std::string_view source, const std::string& root = "");

/// The default folder of a source, and the Debian package that installs it.
std::string debian_text_root(std::string_view source);
std::string debian_text_package(std::string_view source);

/// A plain text file ('-': standard input) as documents: split at blank
/// (whitespace-only) lines when 'paragraphs', otherwise the whole file;
/// leading and trailing newlines trimmed, blank documents skipped; named
/// "<path>:<index>", counting the documents kept from 0. Exit 4 when unreadable.
std::vector<Document> text_file(const std::string& path, bool paragraphs);

struct WordNetEntry {
  /// NLTK's name: the first lemma lower-cased (underscores and all), the
  /// ss_type (n v a s r: satellites keep 's', as in NLTK: "emergent.s.02"),
  /// the sense number, two digits at least: the synset's position in its
  /// lemma's line of index.<pos> ("dog.n.01", "chase.v.01").
  std::string name;
  char pos = 'n';                   ///< n v a r (satellites 's' reported as 'a')
  std::vector<std::string> lemmas;  ///< underscores turned into spaces, adjective markers "(ip)" dropped
  std::string gloss;                ///< the definition, without the examples
  /// The quoted examples, without quotes or attributions ("- Shakespeare").
  std::vector<std::string> examples;
  uint64_t offset = 0;  ///< the synset's byte offset in data.<pos> (WordNet's synset id within a part of speech)
  /// The offsets of its hypernyms, in data.<pos> of the same part of speech:
  /// pointers '@' (hypernym) and '@i' (instance hypernym), in file order.
  std::vector<uint64_t> hypernyms;
};
/// Every synset of WordNet (for the tools that ask about words: parts of
/// speech, held-out facts).
std::vector<WordNetEntry> wordnet_entries(const std::string& root = "");

}  // namespace nk::lm
