// labels.cpp - token labels of an nk-lm capture for probing: the WordNet part
// of speech of the word a token belongs to, and the word's first letter on
// the token that holds it.
#include <algorithm>
#include <array>
#include <cctype>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/lm/tokenizer.hpp"
#include "nk/log.hpp"
#include "sae-buffer/probe.hpp"
#include "sae-buffer/sae_buffer.hpp"

namespace sb {

namespace {

constexpr std::array<const char*, kPosClasses> kPosFiles = {"noun", "verb", "adj", "adv"};

// WordNet's lemma index and exception lists, with morphy's detachment rules.
class WordNet {
 public:
  explicit WordNet(const std::string& folder) {
    for (int p = 0; p < kPosClasses; ++p) {
      const std::string path = folder + "/index." + kPosFiles[p];
      std::ifstream in(path);
      if (!in) throw nk::io_error(path, "cannot read the WordNet index (install wordnet-base, or give --wordnet DIR)");
      std::string line;
      while (std::getline(in, line)) {
        if (line.empty() || line[0] == ' ') continue;  // the licence header
        std::istringstream fields(line);
        std::string lemma, pos;
        int64_t synsets = 0, pointers = 0, senses = 0, tagged = 0;
        fields >> lemma >> pos >> synsets >> pointers;
        for (int64_t i = 0; i < pointers; ++i) fields >> pos;
        fields >> senses >> tagged;
        score_[p][lemma] = tagged * 1000 + synsets;  // how often a sense was seen tagged, then how many senses
      }
      std::ifstream exc(folder + "/" + kPosFiles[p] + ".exc");
      std::string inflected, base;
      while (exc >> inflected >> base) {
        exceptions_[p].emplace(inflected, base);
        std::getline(exc, line);
      }
    }
  }

  /// 1..4 for the part of speech whose senses are most used, 0 when the word is not in WordNet.
  int8_t pos_of(const std::string& word) const {
    int8_t best = 0;
    int64_t best_score = -1;
    for (int p = 0; p < kPosClasses; ++p) {
      const int64_t s = score(p, word);
      if (s > best_score) best_score = s, best = static_cast<int8_t>(p + 1);
    }
    return best_score >= 0 ? best : 0;
  }

 private:
  int64_t lookup(int p, const std::string& lemma) const {
    const auto it = score_[p].find(lemma);
    return it == score_[p].end() ? -1 : it->second;
  }
  // morphy: the word itself, its exception-list base, or a detached suffix.
  int64_t score(int p, const std::string& word) const {
    if (const int64_t s = lookup(p, word); s >= 0) return s;
    if (const auto it = exceptions_[p].find(word); it != exceptions_[p].end())
      if (const int64_t s = lookup(p, it->second); s >= 0) return s;
    static const std::array<std::vector<std::pair<const char*, const char*>>, kPosClasses> rules = {{
        {{"s", ""}, {"ses", "s"}, {"xes", "x"}, {"zes", "z"}, {"ches", "ch"}, {"shes", "sh"}, {"men", "man"}, {"ies", "y"}},
        {{"s", ""}, {"ies", "y"}, {"es", "e"}, {"es", ""}, {"ed", "e"}, {"ed", ""}, {"ing", "e"}, {"ing", ""}},
        {{"er", ""}, {"est", ""}, {"er", "e"}, {"est", "e"}},
        {},
    }};
    for (const auto& [suffix, replacement] : rules[p]) {
      const std::string suf = suffix;
      if (word.size() > suf.size() && word.compare(word.size() - suf.size(), suf.size(), suf) == 0)
        if (const int64_t s = lookup(p, word.substr(0, word.size() - suf.size()) + replacement); s >= 0) return s;
    }
    return -1;
  }
  std::array<std::unordered_map<std::string, int64_t>, kPosClasses> score_;
  std::array<std::unordered_map<std::string, std::string>, kPosClasses> exceptions_;
};

bool letter(unsigned char c) { return std::isalpha(c) && c < 128; }

}  // namespace

void labels(const LabelsOptions& o, const nk::RunEnv&) {
  const nk::h5::File cap = nk::h5::File::open(o.input);
  cap.require_schema("nk-lm.capture/");
  cap.require("/capture/tokens");
  const std::vector<int32_t> tokens = cap.read<int32_t>("/capture/tokens", 1, "T").data;
  const int64_t T = static_cast<int64_t>(tokens.size());
  std::vector<int64_t> offsets = {0, T};
  if (cap.has("/capture/offsets")) {
    offsets = cap.read<int64_t>("/capture/offsets", 1, "R+1").data;
    if (offsets.size() < 2 || offsets.front() != 0 || offsets.back() != T || !std::is_sorted(offsets.begin(), offsets.end()))
      throw nk::input_error(o.input, "/capture/offsets", "must rise from 0 to the " + std::to_string(T) + " tokens");
  }
  const nk::h5::File model = nk::h5::File::open(o.model);
  const nk::lm::Tokenizer tokenizer = nk::lm::Tokenizer::load(model, "/tokenizer");
  const WordNet wordnet(o.wordnet);

  std::vector<int8_t> pos(static_cast<size_t>(T), 0), first(static_cast<size_t>(T), -1);
  std::array<int64_t, kPosClasses + 1> counts{};
  for (size_t row = 0; row + 1 < offsets.size(); ++row) {
    // The row's text and where each token starts in it.
    std::string text;
    std::vector<int64_t> start;
    for (int64_t t = offsets[row]; t < offsets[row + 1]; ++t) {
      if (tokens[t] < 0 || tokens[t] >= tokenizer.size())
        throw nk::input_error(o.input, "/capture/tokens", "entry " + std::to_string(t) + " is " + std::to_string(tokens[t]) +
                                                              ", outside the model's vocabulary of " + std::to_string(tokenizer.size()));
      start.push_back(static_cast<int64_t>(text.size()));
      text += tokenizer.bytes_of(tokens[t]);
    }
    start.push_back(static_cast<int64_t>(text.size()));
    // Words: maximal runs of ASCII letters, each with its part of speech.
    std::vector<int8_t> word_pos(text.size(), 0);
    std::vector<int64_t> word_start(text.size(), -1);
    for (size_t a = 0; a < text.size();) {
      if (!letter(static_cast<unsigned char>(text[a]))) {
        ++a;
        continue;
      }
      size_t b = a;
      std::string word;
      while (b < text.size() && letter(static_cast<unsigned char>(text[b]))) word += static_cast<char>(std::tolower(text[b++]));
      const int8_t p = wordnet.pos_of(word);
      for (size_t c = a; c < b; ++c) word_pos[c] = p, word_start[c] = static_cast<int64_t>(a);
      a = b;
    }
    // A token belongs to the word of its first letter; it holds the word's
    // first letter when that byte lies inside the token.
    for (int64_t i = 0; i + 1 < static_cast<int64_t>(start.size()); ++i) {
      const int64_t t = offsets[row] + i;
      for (int64_t c = start[i]; c < start[i + 1]; ++c) {
        if (word_start[c] < 0) continue;
        pos[t] = word_pos[c];
        if (word_start[c] >= start[i]) first[t] = static_cast<int8_t>(std::tolower(text[word_start[c]]) - 'a');
        break;
      }
      ++counts[pos[t]];
    }
  }
  nk::h5::Writer out(o.output, kLabelsSchema, o.no_clobber);
  out.write("/labels/pos", pos.data(), {T}, "T");
  out.write("/labels/first_letter", first.data(), {T}, "T");
  out.attr("/labels/pos", "classes", "0 none, 1 noun, 2 verb, 3 adjective, 4 adverb (WordNet)");
  out.attr("/labels/first_letter", "classes", "0..25 a..z on the token holding a word's first letter, -1 elsewhere");
  out.attr("/", "capture", o.input);
  out.attr("/", "model", o.model);
  out.commit();
  spdlog::info("labels: {} tokens: {} none, {} noun, {} verb, {} adjective, {} adverb; {} word-initial", T, counts[0], counts[1],
               counts[2], counts[3], counts[4], std::count_if(first.begin(), first.end(), [](int8_t v) { return v >= 0; }));
}

}  // namespace sb
