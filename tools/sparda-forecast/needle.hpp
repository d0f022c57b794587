// needle.hpp - the needle task: facts "The secret number of <word> is
// <value>." hidden in GCIDE dictionary text, asked about later, so that some
// attention heads must reach far back for the answer. Keys are WordNet noun
// lemmas (one word, 4 to 12 letters), split into training and evaluation
// keys by a hash of the lemma (one in eight is an evaluation key); values
// are 4-digit numbers; the filler is consecutive GCIDE entries from a random
// start, each on one line.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sparda {

struct NeedleSource {
  std::vector<std::string> train_keys, eval_keys, filler;
  /// Reads WordNet and GCIDE (exit 4 naming the Debian package when missing).
  static NeedleSource load();
};

struct NeedleDoc {
  std::string text;
  /// Byte spans [begin, end) of each answer value the text gives after its
  /// question (the digits only).
  std::vector<std::pair<int64_t, int64_t>> answers;
};

/// Document 'index' of a seeded set: about 'chars' bytes of filler, 'facts'
/// facts at depths 0..60% and each one's question (with its answer) at a
/// depth at least 20% further (the last fact's question ends the text when
/// facts = 1: the classic needle in a haystack). Evaluation documents draw
/// their keys from the evaluation keys, training documents from the
/// others. Deterministic in (seed, index); no blank line inside.
NeedleDoc needle_doc(const NeedleSource& source, bool evaluation, int64_t chars, int64_t facts, uint64_t seed,
                     int64_t index);

}  // namespace sparda
