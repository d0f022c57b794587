// answers.cpp - answer normalisation, exact match and word F1.
#include "nk/lm/answers.hpp"

#include <algorithm>
#include <cctype>
#include <map>

namespace nk::lm {

std::vector<std::string> answer_words(const std::string& text) {
  std::vector<std::string> out;
  std::string w;
  for (char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c < 128 && std::isalnum(c)) {
      w += static_cast<char>(std::tolower(c));
    } else if (!w.empty()) {
      out.push_back(w);
      w.clear();
    }
  }
  if (!w.empty()) out.push_back(w);
  return out;
}

double word_f1(const std::string& prediction, const std::string& gold) {
  const std::vector<std::string> p = answer_words(prediction), g = answer_words(gold);
  if (p.empty() && g.empty()) return 1.0;
  if (p.empty() || g.empty()) return 0.0;
  std::map<std::string, int64_t> count;
  for (const std::string& w : g) ++count[w];
  int64_t common = 0;
  for (const std::string& w : p) {
    auto it = count.find(w);
    if (it != count.end() && it->second > 0) {
      --it->second;
      ++common;
    }
  }
  if (common == 0) return 0.0;
  const double precision = static_cast<double>(common) / static_cast<double>(p.size());
  const double recall = static_cast<double>(common) / static_cast<double>(g.size());
  return 2 * precision * recall / (precision + recall);
}

bool exact_match(const std::string& prediction, const std::string& gold) {
  return answer_words(prediction) == answer_words(gold);
}

}  // namespace nk::lm
