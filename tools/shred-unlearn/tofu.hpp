// tofu.hpp - a TOFU-shaped forget benchmark (shred-unlearn.tofu/1): fictitious
// authors, question-answer pairs about them with paraphrased and perturbed
// answers, real WordNet facts ("world"), author biographies and the splits.
//
//   /authors/name [A]                                     strings
//   /qa/question, /qa/answer, /qa/paraphrased_answer [Q]  strings
//   /qa/perturbed_answer [Q,5]                            strings
//   /qa/author [Q]                                        int64 (row of /authors/name)
//   /world/{question, answer, paraphrased_answer} [W], /world/perturbed_answer [W,5]
//   /bios/text [A]                                        strings (one per author)
//   /splits/forget01, forget05, forget10, holdout [n]     int64 rows of /qa
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace shred {

inline constexpr const char* kTofuSchema = "shred-unlearn.tofu/1";
inline constexpr int64_t kPerturbed = 5;

struct QaSet {
  std::vector<std::string> question, answer, paraphrased;
  std::vector<std::string> perturbed;  ///< [n, 5] row-major
  std::vector<int64_t> author;         ///< /qa only; -1 for world facts
  int64_t size() const { return static_cast<int64_t>(question.size()); }
};

struct Tofu {
  std::string path;
  std::vector<std::string> authors, bios;
  QaSet qa, world;
  std::map<std::string, std::vector<int64_t>> splits;  ///< name -> rows of /qa

  /// Rows of /qa of a split, in file order; exit 3 naming the file when the
  /// split is missing.
  const std::vector<int64_t>& split(const std::string& name) const;
  /// Rows in neither 'split' nor holdout (the retain set), in /qa order.
  std::vector<int64_t> retain_rows(const std::string& split) const;
  /// The authors whose rows a set of /qa rows covers, ascending.
  std::vector<int64_t> authors_of(const std::vector<int64_t>& rows) const;
};

struct TofuSpec {
  int64_t authors = 200, questions = 20, world = 100;
  uint64_t seed = 0;
  std::string wordnet;  ///< WordNet's dict folder ("" = the Debian default)
};

/// Generates a mini-TOFU: names built from syllables (absent from the
/// pretraining corpus), facts drawn per author, one question template per fact
/// (the first 'questions' of them), splits of whole authors in a seeded order:
/// forget10 the first 10% (>= 1 author), forget05 its first 5%, forget01 its
/// first 1%, holdout the next 10% (>= 1); world facts from WordNet glosses of
/// synsets the pretraining corpus kept (not in its validation split).
Tofu generate_tofu(const TofuSpec& spec);

/// Reads and checks the layout (nk_schema optional: a user's own file). Exit
/// 3 naming file and dataset for a missing dataset, mismatched lengths, an
/// empty question or answer, split rows out of range or repeated, a split
/// that cuts an author, forget splits overlapping holdout.
Tofu read_tofu(const std::string& path);

/// JSON lines (see the man page): {"author", "question", "answer",
/// "paraphrased_answer"?, "perturbed_answer"? [5], "split"?: "forget"|"holdout"|"retain"}
/// per QA row, {"author", "bio"} per biography, {"world": true, ...} per world
/// fact. The rows marked forget become every forget split.
Tofu read_tofu_jsonl(const std::string& path);

/// WordNet facts as QA: "What does the word "X" mean?", the gloss as the
/// answer, "It means <gloss>." as the paraphrase and five other nouns'
/// glosses in that form as the perturbed answers; questions in 'exclude'
/// are left out (fine-tuning's replay keeps clear of /world).
QaSet wordnet_qa(const std::string& wordnet, int64_t count, uint64_t seed, const std::set<std::string>& exclude);

void write_tofu(const Tofu& tofu, const std::string& output, bool no_clobber);

}  // namespace shred
