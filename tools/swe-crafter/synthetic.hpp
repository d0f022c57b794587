// synthetic.hpp - SWE-smith-style bugs: one mutation of one line inside a
// function of a source file (an operator flipped, an off-by-one comparison,
// a constant changed, two arguments swapped, a statement removed).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace swec {

struct Mutation {
  std::string kind;           ///< operator, off-by-one, constant, swap-arguments, remove-statement
  int64_t line = 0;           ///< 0-based
  std::string before, after;  ///< the line's text (after is "" for a removed statement)
  bool removes = false;
};

/// Every single-line mutation inside function bodies of 'source' (a file in
/// 'language': python or ruby by their def blocks, or a language with braces), in source order. Text in
/// quotes and comments is left alone.
/// With 'repair', also the edits that undo such bugs where the bug's edit
/// has no inverse among them (/ into *: bugs turn * into / only).
std::vector<Mutation> candidate_mutations(const std::string& source, const std::string& language,
                                          bool repair = false);

/// 'source' with the mutation applied (the line replaced or removed).
std::string apply_mutation(const std::string& source, const Mutation& m);

}  // namespace swec
