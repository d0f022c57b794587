// needle.cpp - the needle task's documents (needle.hpp).
#include "sparda-forecast/needle.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "nk/error.hpp"
#include "nk/lm/text.hpp"
#include "nk/rng.hpp"

namespace sparda {

namespace {

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

bool plain_word(const std::string& w) {
  if (w.size() < 4 || w.size() > 12) return false;
  return std::all_of(w.begin(), w.end(), [](unsigned char c) { return c >= 'a' && c <= 'z'; });
}

/// One line: whitespace runs (newlines too) become one space, ends trimmed.
std::string one_line(const std::string& text) {
  std::string out;
  bool space = false;
  for (unsigned char c : text) {
    if (std::isspace(c)) {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(static_cast<char>(c));
  }
  return out;
}

}  // namespace

NeedleSource NeedleSource::load() {
  NeedleSource s;
  std::vector<std::string> words;
  for (const nk::lm::WordNetEntry& e : nk::lm::wordnet_entries())
    if (e.pos == 'n')
      for (const std::string& lemma : e.lemmas)
        if (plain_word(lemma)) words.push_back(lemma);
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  for (const std::string& w : words) (fnv1a(w) % 8 == 0 ? s.eval_keys : s.train_keys).push_back(w);
  for (const nk::lm::Document& d : nk::lm::debian_text("gcide")) {
    std::string line = one_line(d.text);
    if (line.size() >= 16) s.filler.push_back(std::move(line));
  }
  if (s.eval_keys.empty() || s.train_keys.empty() || s.filler.empty())
    throw nk::Error(nk::Exit::io, "needle: WordNet (wordnet-base) or GCIDE (dict-gcide) gave no usable text");
  return s;
}

NeedleDoc needle_doc(const NeedleSource& source, bool evaluation, int64_t chars, int64_t facts, uint64_t seed,
                     int64_t index) {
  nk::Rng rng = nk::Rng(seed).split(static_cast<uint64_t>(index));
  const std::vector<std::string>& keys = evaluation ? source.eval_keys : source.train_keys;
  facts = std::max<int64_t>(1, std::min<int64_t>(facts, static_cast<int64_t>(keys.size())));
  std::vector<std::string> chosen;
  while (static_cast<int64_t>(chosen.size()) < facts) {
    const std::string& k = keys[rng.below(keys.size())];
    if (std::find(chosen.begin(), chosen.end(), k) == chosen.end()) chosen.push_back(k);
  }
  std::vector<int64_t> values;
  for (int64_t i = 0; i < facts; ++i) values.push_back(1000 + static_cast<int64_t>(rng.below(9000)));
  // Filler: consecutive entries from a random start (wrapping round).
  std::vector<const std::string*> lines;
  int64_t bytes = 0;
  for (size_t at = rng.below(source.filler.size()); bytes < chars; at = (at + 1) % source.filler.size()) {
    lines.push_back(&source.filler[at]);
    bytes += static_cast<int64_t>(source.filler[at].size()) + 1;
  }
  // Events: (line index they precede, 0 fact / 1 question, which).
  struct Event {
    int64_t line, kind, which;
  };
  std::vector<Event> events;
  const double n = static_cast<double>(lines.size());
  for (int64_t i = 0; i < facts; ++i) {
    const double a = 0.6 * rng.uniform();
    const double b = facts == 1 ? 1.0 : a + 0.2 + rng.uniform() * (0.8 - a);
    events.push_back({static_cast<int64_t>(std::floor(a * n)), 0, i});
    events.push_back(
        {std::min<int64_t>(static_cast<int64_t>(std::ceil(b * n)), static_cast<int64_t>(lines.size())), 1, i});
  }
  std::stable_sort(events.begin(), events.end(), [](const Event& x, const Event& y) {
    return x.line < y.line || (x.line == y.line && x.kind < y.kind);
  });
  NeedleDoc doc;
  size_t e = 0;
  const auto emit_events = [&](int64_t before) {
    for (; e < events.size() && events[e].line <= before; ++e) {
      const std::string& key = chosen[static_cast<size_t>(events[e].which)];
      const std::string value = std::to_string(values[static_cast<size_t>(events[e].which)]);
      if (!doc.text.empty()) doc.text += '\n';
      if (events[e].kind == 0) {
        doc.text += "The secret number of " + key + " is " + value + ".";
      } else {
        doc.text += "What is the secret number of " + key + "? The secret number of " + key + " is ";
        const int64_t begin = static_cast<int64_t>(doc.text.size());
        doc.text += value;
        doc.answers.push_back({begin, begin + static_cast<int64_t>(value.size())});
        doc.text += ".";
      }
    }
  };
  for (size_t i = 0; i < lines.size(); ++i) {
    emit_events(static_cast<int64_t>(i));
    if (!doc.text.empty()) doc.text += '\n';
    doc.text += *lines[i];
  }
  emit_events(static_cast<int64_t>(lines.size()));
  return doc;
}

}  // namespace sparda
