// qa.cpp - the sequences of a QA set's rows.
#include "shred-unlearn/qa.hpp"

namespace shred {

std::vector<Sequence> qa_sequences(const nk::lm::Tokenizer& tok, const QaSet& set, const std::vector<int64_t>& rows,
                                   int64_t context, const std::string& file, const std::string& group) {
  std::vector<Sequence> out;
  out.reserve(rows.size());
  for (int64_t r : rows)
    out.push_back(qa_sequence(tok, set.question[static_cast<size_t>(r)], set.answer[static_cast<size_t>(r)], context,
                              file, group + "/answer", r));
  return out;
}

}  // namespace shred
