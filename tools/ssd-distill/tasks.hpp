// tasks.hpp - the knowledge a student must internalise (ssd-distill.tasks/1):
// source documents and the questions about them, training questions and
// held-out test questions.
//
//   /docs/text [D]                          strings
//   /train/question, /train/answer [Q]      strings
//   /train/doc [Q]                          int64 row of /docs/text
//   /test/question, /test/answer, /test/doc the held-out questions
//   attribute task: memo, update, skill (or the user's own name)
//
// Three generators, each in two disjoint pools: Pool::eval makes the tasks a
// run is scored on, Pool::warmup the documents `prepare` teaches the reader
// to answer from (names, words and rules never shared with Pool::eval).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ssd {

inline constexpr const char* kTasksSchema = "ssd-distill.tasks/1";

struct QaSplit {
  std::vector<std::string> question, answer;
  std::vector<int64_t> doc;
  int64_t size() const { return static_cast<int64_t>(question.size()); }
  void add(std::string q, std::string a, int64_t d) {
    question.push_back(std::move(q));
    answer.push_back(std::move(a));
    doc.push_back(d);
  }
};

struct Tasks {
  std::string path, task;
  std::vector<std::string> docs;
  QaSplit train, test;
  int64_t size() const { return static_cast<int64_t>(docs.size()); }
};

enum class Pool { eval, warmup };

struct TaskSpec {
  std::string task = "memo";  ///< memo, update, skill
  int64_t docs = 4;
  uint64_t seed = 0;
  Pool pool = Pool::eval;
  std::string wordnet;  ///< WordNet's dict folder ("" = Debian's)
};

/// memo: a fictional organisation's memo (people in roles, a project's town,
/// start date and budget); 7 facts, three wordings of each question: the
/// first two train, the third is the test question.
/// update: a glossary note; WordNet synsets held out of nk-lm's pretraining
/// (its validation split) with their real glosses, and familiar words given
/// another synset's gloss (facts that contradict pretraining); three wordings.
/// skill: a procedure (a suffix rule, a letter code, a unit conversion)
/// applied to 4 training inputs (two wordings) and 3 new test inputs.
Tasks generate_tasks(const TaskSpec& spec);

/// Reads and checks the layout (nk_schema optional: a user's file from h5py).
/// Exit 3 naming the file and dataset: missing datasets, rows of different
/// lengths, a doc index out of range (with its index), empty documents,
/// questions or answers.
Tasks read_tasks(const std::string& path);
/// JSON lines {"doc", "question", "answer", "split": "train"|"test"}; equal
/// documents become one row of /docs/text.
Tasks read_tasks_jsonl(const std::string& path);
void write_tasks(const Tasks& tasks, const std::string& output, bool no_clobber);
void check_tasks(const Tasks& tasks);

}  // namespace ssd
