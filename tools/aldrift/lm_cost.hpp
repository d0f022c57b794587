// lm_cost.hpp - the costs d(s) of experiment C on generated text: a lipogram
// (the share of letters that are one letter), WordNet hyponymy (1 - the
// share of words that name a kind of SYNSET), or a user's program.
#pragma once
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ald {

class TextCost {
 public:
  /// "letter:e" (one ASCII letter, either case), "wordnet:SYNSET" (NLTK's
  /// name, e.g. animal.n.01; WordNet read from 'wordnet_root', default
  /// /usr/share/wordnet), or "cmd:PROG" (run by /bin/sh). Exit 2 for another
  /// form, an unknown synset or letter; exit 4 when WordNet is not installed.
  static TextCost parse(const std::string& spec, const std::string& wordnet_root = "");
  /// d of each text; cmd: one call for the batch (one text per line, '\n'
  /// and '\r' inside a text sent as spaces; one number per line back, exit 3
  /// naming the command and line otherwise). Every d is finite.
  std::vector<double> operator()(const std::vector<std::string>& texts) const;
  const std::string& spec() const { return spec_; }
  /// wordnet: the lemmas (lower case, single words) of every hyponym of the
  /// synset, transitively (hypernym and instance-hypernym pointers, the
  /// synset itself excluded).
  const std::unordered_set<std::string>& hyponyms() const { return hyponyms_; }

 private:
  enum class Kind { letter, wordnet, command };
  Kind kind_ = Kind::letter;
  std::string spec_;
  char letter_ = 'e';
  std::string command_;
  std::unordered_set<std::string> hyponyms_;
  std::unordered_map<std::string, std::vector<std::string>> exceptions_;  // noun.exc: inflected -> bases
  bool is_hyponym(const std::string& word) const;
};

/// The share of ASCII letters of 'text' that are 'letter' (either case); 1
/// for a text without letters (so an empty string is not a perfect lipogram).
double letter_share(const std::string& text, char letter);
/// Maximal runs of ASCII letters, lower-cased.
std::vector<std::string> words_of(const std::string& text);

}  // namespace ald
