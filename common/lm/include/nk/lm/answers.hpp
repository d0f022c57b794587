// answers.hpp - scoring a model's short answers against gold answers, as QA
// benchmarks do (SQuAD's normalisation without its article and punctuation
// lists): lower-cased words, every character that is not an ASCII letter or
// digit a separator.
#pragma once
#include <string>
#include <vector>

namespace nk::lm {

/// The words of a text: lower-cased ASCII letters and digits; every other
/// byte separates words.
std::vector<std::string> answer_words(const std::string& text);

/// The F1 of the two word multisets (0 when either is empty, 1 when both are).
double word_f1(const std::string& prediction, const std::string& gold);

/// Equal word lists.
bool exact_match(const std::string& prediction, const std::string& gold);

}  // namespace nk::lm
