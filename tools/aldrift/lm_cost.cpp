// lm_cost.cpp - see lm_cost.hpp.
#include "aldrift/lm_cost.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "nk/command.hpp"
#include "nk/error.hpp"
#include "nk/lm/text.hpp"

namespace ald {

double letter_share(const std::string& text, char letter) {
  int64_t letters = 0, hits = 0;
  const char lower = static_cast<char>(std::tolower(static_cast<unsigned char>(letter)));
  for (const char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c >= 0x80 || !std::isalpha(c)) continue;
    ++letters;
    hits += std::tolower(c) == lower;
  }
  return letters == 0 ? 1.0 : static_cast<double>(hits) / static_cast<double>(letters);
}

std::vector<std::string> words_of(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  for (const char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x80 && std::isalpha(c)) {
      word.push_back(static_cast<char>(std::tolower(c)));
    } else if (!word.empty()) {
      words.push_back(std::move(word));
      word.clear();
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

namespace {

// WordNet's noun detachment rules (morphy): suffix -> replacement.
constexpr std::pair<const char*, const char*> kNounRules[] = {
    {"s", ""}, {"ses", "s"}, {"ves", "f"}, {"xes", "x"}, {"zes", "z"}, {"ches", "ch"}, {"shes", "sh"}, {"men", "man"}, {"ies", "y"}};

}  // namespace

bool TextCost::is_hyponym(const std::string& word) const {
  if (hyponyms_.contains(word)) return true;
  if (const auto e = exceptions_.find(word); e != exceptions_.end())
    for (const std::string& base : e->second)
      if (hyponyms_.contains(base)) return true;
  for (const auto& [suffix, replacement] : kNounRules) {
    const std::string_view s(suffix);
    if (word.size() > s.size() && word.ends_with(s) &&
        hyponyms_.contains(word.substr(0, word.size() - s.size()) + replacement))
      return true;
  }
  return false;
}

TextCost TextCost::parse(const std::string& spec, const std::string& wordnet_root) {
  TextCost cost;
  cost.spec_ = spec;
  const size_t colon = spec.find(':');
  const std::string kind = spec.substr(0, colon), arg = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (kind == "letter") {
    if (arg.size() != 1 || !std::isalpha(static_cast<unsigned char>(arg[0])) || static_cast<unsigned char>(arg[0]) >= 0x80)
      throw nk::usage_error("--cost " + spec + ": letter: takes one ASCII letter (letter:e)");
    cost.kind_ = Kind::letter;
    cost.letter_ = arg[0];
  } else if (kind == "cmd") {
    if (arg.empty()) throw nk::usage_error("--cost cmd: needs a program (cmd:PROG, run by /bin/sh)");
    cost.kind_ = Kind::command;
    cost.command_ = arg;
  } else if (kind == "wordnet") {
    cost.kind_ = Kind::wordnet;
    const std::string root = wordnet_root.empty() ? nk::lm::debian_text_root("wordnet") : wordnet_root;
    const std::vector<nk::lm::WordNetEntry> entries = nk::lm::wordnet_entries(root);
    // Children by (pos, offset): the reverse of the hypernym pointers.
    std::unordered_map<uint64_t, std::vector<size_t>> children;
    const auto key = [](char pos, uint64_t offset) { return (static_cast<uint64_t>(pos) << 56) | offset; };
    int64_t start = -1;
    for (size_t i = 0; i < entries.size(); ++i) {
      for (const uint64_t h : entries[i].hypernyms) children[key(entries[i].pos, h)].push_back(i);
      if (entries[i].name == arg) start = static_cast<int64_t>(i);
    }
    if (start < 0)
      throw nk::usage_error("--cost " + spec + ": no synset '" + arg + "' in WordNet (" + root +
                            "); names are NLTK's, e.g. animal.n.01");
    std::vector<size_t> stack{static_cast<size_t>(start)};
    std::vector<char> seen(entries.size(), 0);
    seen[static_cast<size_t>(start)] = 1;
    while (!stack.empty()) {
      const size_t s = stack.back();
      stack.pop_back();
      const auto c = children.find(key(entries[s].pos, entries[s].offset));
      if (c == children.end()) continue;
      for (const size_t child : c->second) {
        if (seen[child]) continue;
        seen[child] = 1;
        stack.push_back(child);
        for (const std::string& lemma : entries[child].lemmas) {
          if (lemma.find(' ') != std::string::npos) continue;  // a text's words are single words
          const std::vector<std::string> w = words_of(lemma);
          if (w.size() == 1 && w[0].size() == lemma.size()) cost.hyponyms_.insert(w[0]);
        }
      }
    }
    if (cost.hyponyms_.empty()) throw nk::usage_error("--cost " + spec + ": '" + arg + "' has no single-word hyponyms");
    // noun.exc (irregular plurals: "mice mouse"), when the folder has it.
    std::ifstream exc(root + "/noun.exc");
    std::string line;
    while (std::getline(exc, line)) {
      std::istringstream fields(line);
      std::string inflected, base;
      if (!(fields >> inflected)) continue;
      while (fields >> base) cost.exceptions_[inflected].push_back(base);
    }
  } else {
    throw nk::usage_error("--cost " + spec + ": expected letter:L, wordnet:SYNSET or cmd:PROG");
  }
  return cost;
}

std::vector<double> TextCost::operator()(const std::vector<std::string>& texts) const {
  std::vector<double> d(texts.size());
  if (kind_ == Kind::letter) {
    for (size_t i = 0; i < texts.size(); ++i) d[i] = letter_share(texts[i], letter_);
  } else if (kind_ == Kind::wordnet) {
    for (size_t i = 0; i < texts.size(); ++i) {
      const std::vector<std::string> words = words_of(texts[i]);
      int64_t hits = 0;
      for (const std::string& w : words) hits += is_hyponym(w);
      d[i] = words.empty() ? 1.0 : 1.0 - static_cast<double>(hits) / static_cast<double>(words.size());
    }
  } else {
    std::string request;
    for (const std::string& t : texts) {
      for (const char c : t) request.push_back(c == '\n' || c == '\r' ? ' ' : c);
      request.push_back('\n');
    }
    const std::string reply = nk::run_command(command_, request, "--cost cmd:" + command_,
                                              "on " + std::to_string(texts.size()) + " strings");
    std::istringstream lines(reply);
    std::string line;
    size_t n = 0;
    while (std::getline(lines, line)) {
      if (n == texts.size())
        throw nk::Error(nk::Exit::input, "--cost cmd:" + command_ + ": more than " + std::to_string(texts.size()) +
                                             " lines of output for " + std::to_string(texts.size()) + " strings");
      char* end = nullptr;
      const double x = std::strtod(line.c_str(), &end);
      while (end && (*end == ' ' || *end == '\t')) ++end;
      if (line.empty() || !end || *end != '\0' || !std::isfinite(x))
        throw nk::Error(nk::Exit::input, "--cost cmd:" + command_ + ": output line " + std::to_string(n + 1) + " is '" +
                                             line + "', not a finite number");
      d[n++] = x;
    }
    if (n != texts.size())
      throw nk::Error(nk::Exit::input, "--cost cmd:" + command_ + ": " + std::to_string(n) + " lines of output for " +
                                           std::to_string(texts.size()) + " strings (one cost per line expected)");
  }
  return d;
}

}  // namespace ald
