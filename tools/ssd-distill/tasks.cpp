// tasks.cpp - the memo, update and skill generators, the strict reader, the
// JSON-lines converter and the writer.
#include "ssd-distill/tasks.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/lm/corpus.hpp"
#include "nk/lm/jsonl.hpp"
#include "nk/lm/text.hpp"
#include "nk/rng.hpp"

namespace ssd {

namespace {

// Names are built from two syllable inventories that share no syllable, so
// the reader's warm-up never meets an evaluation name (the unit test checks
// the generated sets for overlap).
const std::vector<std::string> kEvalSyllables = {"ka",  "vo", "ren", "tal", "mi", "dor", "sel",  "qua", "bri",
                                                 "zen", "lu", "fen", "vik", "sa", "mo",  "tesh", "nal", "ur"};
const std::vector<std::string> kWarmupSyllables = {"pe",  "gu", "lam", "rot", "fi",  "nob", "cha", "dus", "wy",
                                                   "kel", "ha", "jum", "pra", "sto", "bax", "li",  "gon", "ep"};

const std::vector<std::string>& syllables(Pool pool) {
  return pool == Pool::eval ? kEvalSyllables : kWarmupSyllables;
}

std::string capitalised(std::string s) {
  if (!s.empty() && s[0] >= 'a' && s[0] <= 'z') s[0] = static_cast<char>(s[0] - 'a' + 'A');
  return s;
}

/// A word of 'parts' syllables (lower case).
std::string invented(Pool pool, nk::Rng& rng, int parts) {
  const auto& s = syllables(pool);
  std::string w;
  for (int i = 0; i < parts; ++i) w += s[rng.below(s.size())];
  return w;
}

std::string name_of(Pool pool, nk::Rng& rng) {
  return capitalised(invented(pool, rng, 2)) + " " +
         capitalised(invented(pool, rng, 2 + static_cast<int>(rng.below(2))));
}

template <class T>
const T& pick(const std::vector<T>& v, nk::Rng& rng) {
  return v[rng.below(v.size())];
}

const std::vector<std::string> kMonths = {"January", "February", "March",     "April",   "May",      "June",
                                          "July",    "August",   "September", "October", "November", "December"};

// ---- memo --------------------------------------------------------------------

void memo_doc(Pool pool, nk::Rng& rng, Tasks& t) {
  const std::vector<std::string> kinds = pool == Pool::eval
                                             ? std::vector<std::string>{"Cooperative", "Guild", "Society"}
                                             : std::vector<std::string>{"Trust", "Collective", "Union"};
  const std::vector<std::string> events = pool == Pool::eval ? std::vector<std::string>{"fair", "survey", "expedition"}
                                                             : std::vector<std::string>{"festival", "census", "voyage"};
  std::vector<std::string> roles =
      pool == Pool::eval
          ? std::vector<std::string>{"treasurer", "secretary", "chair", "archivist", "steward", "auditor"}
          : std::vector<std::string>{"quartermaster", "librarian", "registrar", "warden", "clerk", "curator"};
  nk::shuffle(roles, rng);
  const std::string org = "the " + capitalised(invented(pool, rng, 2)) + " " + pick(kinds, rng);
  const std::string event = "the " + capitalised(invented(pool, rng, 2)) + " " + pick(events, rng);
  const std::string town = capitalised(invented(pool, rng, 3));
  const std::string date =
      std::to_string(1 + rng.below(28)) + " " + pick(kMonths, rng) + " " + std::to_string(2030 + rng.below(10));
  const std::string budget = std::to_string(12 + rng.below(88)) + "00 crowns";
  std::vector<std::string> people;
  for (int i = 0; i < 3; ++i) people.push_back(name_of(pool, rng));
  const int64_t d = t.size();
  std::string text = "Memo from " + org + ". ";
  const std::vector<std::string> role_forms = {"{P} is our {R}. ", "The {R} is {P}. ", "{P} serves as {R}. "};
  for (int i = 0; i < 3; ++i) {
    std::string s = role_forms[rng.below(role_forms.size())];
    s.replace(s.find("{P}"), 3, people[static_cast<size_t>(i)]);
    s.replace(s.find("{R}"), 3, roles[static_cast<size_t>(i)]);
    text += s;
  }
  text += rng.below(2) ? capitalised(event) + " will be held in " + town + ". "
                       : "We will hold " + event + " in " + town + ". ";
  text += "It begins on " + date + ", with a budget of " + budget + ".";
  t.docs.push_back(text);
  struct Fact {
    std::vector<std::string> wordings;
    std::string answer;
  };
  std::vector<Fact> facts;
  const std::string o = org.substr(4), e = event.substr(4);
  for (int i = 0; i < 3; ++i) {
    const std::string& r = roles[static_cast<size_t>(i)];
    facts.push_back({{"Who is the " + r + " of the " + o + "?", "Which person serves as " + r + " at the " + o + "?",
                      "Name the " + r + " of the " + o + "."},
                     people[static_cast<size_t>(i)]});
  }
  facts.push_back({{"What is the role of " + people[0] + " at the " + o + "?",
                    "Which post does " + people[0] + " hold?", "What does " + people[0] + " do at the " + o + "?"},
                   roles[0]});
  facts.push_back({{"Where will the " + e + " be held?", "In which town does the " + e + " take place?",
                    "Name the town of the " + e + "."},
                   town});
  facts.push_back({{"When does the " + e + " begin?", "On what date does the " + e + " start?",
                    "Give the start date of the " + e + "."},
                   date});
  facts.push_back({{"What is the budget of the " + e + "?", "How much money does the " + e + " have?",
                    "State the budget of the " + e + "."},
                   budget});
  for (const Fact& f : facts) {
    t.train.add(f.wordings[0], f.answer, d);
    t.train.add(f.wordings[1], f.answer, d);
    t.test.add(f.wordings[2], f.answer, d);
  }
}

// ---- update ------------------------------------------------------------------

bool plain_word(const std::string& w) {
  return w.size() >= 4 && w.size() <= 12 &&
         std::all_of(w.begin(), w.end(), [](char c) { return c >= 'a' && c <= 'z'; });
}

size_t word_count(const std::string& s) {
  size_t n = 0;
  bool in = false;
  for (char c : s) {
    const bool sp = c == ' ';
    if (!sp && !in) ++n;
    in = !sp;
  }
  return n;
}

struct Glossary {
  std::vector<nk::lm::WordNetEntry> fresh;     ///< held out of pretraining (its validation split)
  std::vector<nk::lm::WordNetEntry> familiar;  ///< trained on; this pool's half
};

/// Synsets with a one-word lemma and a short gloss. Validation-split synsets
/// (never seen in pretraining) are the eval pool's new words; the trained
/// synsets are halved by a hash of their name between the eval pool's
/// contradicted words and the warm-up's words.
Glossary glossary(Pool pool, const std::string& wordnet) {
  Glossary g;
  std::set<std::string> seen;
  for (auto& e : nk::lm::wordnet_entries(wordnet)) {
    const std::string& lemma = e.lemmas.front();
    if (!plain_word(lemma) || seen.count(lemma)) continue;
    const size_t n = word_count(e.gloss);
    if (n < 3 || n > 10) continue;
    seen.insert(lemma);
    const bool held_out = nk::lm::in_validation("wordnet:" + e.name, 0.02);
    const bool eval_half = (nk::mix64(std::hash<std::string>{}(e.name) ^ 0x55D) & 1) == 0;
    if (held_out) {
      if (pool == Pool::eval) g.fresh.push_back(std::move(e));
    } else if (eval_half == (pool == Pool::eval)) {
      g.familiar.push_back(std::move(e));
    }
  }
  return g;
}

void update_docs(const TaskSpec& spec, Tasks& t) {
  Glossary g = glossary(spec.pool, spec.wordnet);
  // The warm-up pool has no held-out words: its "new" words are trained ones.
  std::vector<nk::lm::WordNetEntry>& fresh = spec.pool == Pool::eval ? g.fresh : g.familiar;
  nk::Rng rng = nk::Rng(spec.seed).split(0x0D47E);
  nk::shuffle(fresh, rng);
  nk::shuffle(g.familiar, rng);
  const int64_t kFresh = 3, kChanged = 1;
  size_t next_fresh = 0, next_familiar = spec.pool == Pool::eval ? 0 : g.familiar.size() / 2;
  for (int64_t d = 0; d < spec.docs; ++d) {
    if (next_fresh + kFresh > fresh.size() || next_familiar + 2 * kChanged > g.familiar.size())
      throw nk::usage_error("update: WordNet has too few usable synsets for " + std::to_string(spec.docs) +
                            " documents");
    struct Entry {
      std::string word, gloss;
      bool changed;
    };
    std::vector<Entry> entries;
    for (int64_t i = 0; i < kFresh; ++i, ++next_fresh)
      entries.push_back({fresh[next_fresh].lemmas.front(), fresh[next_fresh].gloss, false});
    for (int64_t i = 0; i < kChanged; ++i, next_familiar += 2)
      entries.push_back({g.familiar[next_familiar].lemmas.front(), g.familiar[next_familiar + 1].gloss, true});
    nk::shuffle(entries, rng);
    std::string text = "Glossary note.";
    for (const Entry& e : entries)
      text += e.changed ? " From now on, the word '" + e.word + "' means: " + e.gloss + "."
                        : " The word '" + e.word + "' means: " + e.gloss + ".";
    const int64_t row = t.size();
    t.docs.push_back(text);
    for (const Entry& e : entries) {
      t.train.add("What does the word '" + e.word + "' mean?", e.gloss, row);
      t.train.add("What is the meaning of '" + e.word + "'?", e.gloss, row);
      t.test.add("Define the word '" + e.word + "'.", e.gloss, row);
    }
  }
}

// ---- skill -------------------------------------------------------------------

/// Common short words (inputs of the procedures): one-word WordNet noun lemmas.
std::vector<std::string> input_words(const std::string& wordnet) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& e : nk::lm::wordnet_entries(wordnet)) {
    const std::string& w = e.lemmas.front();
    if (e.pos == 'n' && w.size() >= 4 && w.size() <= 6 && plain_word(w) && seen.insert(w).second) out.push_back(w);
  }
  return out;
}

void skill_docs(const TaskSpec& spec, Tasks& t) {
  const Pool pool = spec.pool;
  nk::Rng rng = nk::Rng(spec.seed).split(0x5C111);
  std::vector<std::string> words = input_words(spec.wordnet);
  nk::shuffle(words, rng);
  size_t next = 0;
  const auto take = [&]() {
    if (next >= words.size()) throw nk::usage_error("skill: WordNet has too few input words");
    return words[next++];
  };
  // Letter codes: the eval pool swaps vowels, the warm-up consonants.
  const std::vector<char> letters =
      pool == Pool::eval ? std::vector<char>{'a', 'e', 'i', 'o', 'u'} : std::vector<char>{'t', 'n', 's', 'r', 'l', 'd'};
  const std::vector<std::pair<std::string, std::string>> units =
      pool == Pool::eval ? std::vector<std::pair<std::string, std::string>>{{"meters", "meter"}, {"grams", "gram"}}
                         : std::vector<std::pair<std::string, std::string>>{{"feet", "foot"}, {"cups", "cup"}};
  const int64_t kTrain = 4, kTest = 3;
  for (int64_t d = 0; d < spec.docs; ++d) {
    const int64_t row = t.size();
    const int family = static_cast<int>((spec.seed + static_cast<uint64_t>(d)) % 3);
    const std::string name = invented(pool, rng, 2);
    std::string text;
    std::vector<std::string> wordings;  // {X}: the input
    std::function<std::string(const std::string&)> apply;
    std::vector<std::string> inputs;
    if (family == 0) {
      const std::string suffix = invented(pool, rng, 1);
      text = "To put a word in the " + name + " form, write the word and add '" + suffix + "' at its end.";
      wordings = {"What is the " + name + " form of '{X}'?", "Put '{X}' in the " + name + " form.",
                  "Write the " + name + " form of the word '{X}'."};
      apply = [suffix](const std::string& w) { return w + suffix; };
      for (int64_t i = 0; i < kTrain + kTest; ++i) inputs.push_back(take());
    } else if (family == 1) {
      std::vector<char> l = letters;
      nk::shuffle(l, rng);
      const char a = l[0], b = l[1], c = l[2], e = l[3];
      text = "In the " + name + " code, every letter " + std::string(1, a) + " is written " + std::string(1, b) +
             ", and every letter " + std::string(1, c) + " is written " + std::string(1, e) + ".";
      wordings = {"Write '{X}' in the " + name + " code.", "What is '{X}' in the " + name + " code?",
                  "Put the word '{X}' into the " + name + " code."};
      apply = [a, b, c, e](std::string w) {
        for (char& ch : w) ch = ch == a ? b : ch == c ? e : ch;
        return w;
      };
      // Inputs that the code changes.
      while (static_cast<int64_t>(inputs.size()) < kTrain + kTest) {
        std::string w = take();
        if (w.find(a) != std::string::npos || w.find(c) != std::string::npos) inputs.push_back(w);
      }
    } else {
      const auto& [base, base_one] = units[rng.below(units.size())];
      const int64_t k = 2 + static_cast<int64_t>(rng.below(8));
      text = "One " + name + " is " + std::to_string(k) + " " + base + ".";
      wordings = {"How many " + base + " are {X} " + name + "s?", "Convert {X} " + name + "s to " + base + ".",
                  "What is {X} " + name + "s in " + base + "?"};
      apply = [k, base](const std::string& n) { return std::to_string(k * std::stoll(n)) + " " + base; };
      std::vector<std::string> n = {"2", "3", "4", "5", "6", "7", "8", "9"};
      nk::shuffle(n, rng);
      inputs.assign(n.begin(), n.begin() + kTrain + kTest);
      (void)base_one;
    }
    t.docs.push_back(text);
    const auto ask = [](std::string w, const std::string& x) {
      w.replace(w.find("{X}"), 3, x);
      return w;
    };
    for (int64_t i = 0; i < kTrain; ++i) {
      const std::string& x = inputs[static_cast<size_t>(i)];
      t.train.add(ask(wordings[0], x), apply(x), row);
      t.train.add(ask(wordings[1], x), apply(x), row);
    }
    for (int64_t i = kTrain; i < kTrain + kTest; ++i) {
      const std::string& x = inputs[static_cast<size_t>(i)];
      t.test.add(ask(wordings[2], x), apply(x), row);
    }
  }
}

void check_split(const Tasks& t, const QaSplit& s, const std::string& group) {
  if (s.answer.size() != s.question.size())
    throw nk::input_error(t.path, group + "/answer",
                          "has " + std::to_string(s.answer.size()) + " rows, " + group + "/question " +
                              std::to_string(s.question.size()));
  if (s.doc.size() != s.question.size())
    throw nk::input_error(
        t.path, group + "/doc",
        "has " + std::to_string(s.doc.size()) + " rows, " + group + "/question " + std::to_string(s.question.size()));
  for (int64_t i = 0; i < s.size(); ++i) {
    const size_t u = static_cast<size_t>(i);
    if (s.doc[u] < 0 || s.doc[u] >= t.size())
      throw nk::input_error(t.path, group + "/doc",
                            "index " + std::to_string(i) + ": document " + std::to_string(s.doc[u]) +
                                " is outside /docs/text (" + std::to_string(t.size()) + " documents)");
    if (s.question[u].find_first_not_of(" \t\r\n") == std::string::npos)
      throw nk::input_error(t.path, group + "/question", "index " + std::to_string(i) + " is empty");
    if (s.answer[u].find_first_not_of(" \t\r\n") == std::string::npos)
      throw nk::input_error(t.path, group + "/answer", "index " + std::to_string(i) + " is empty");
  }
}

QaSplit read_split(const nk::h5::File& f, const std::string& group) {
  QaSplit s;
  s.question = f.read_strings(group + "/question");
  s.answer = f.read_strings(group + "/answer");
  s.doc = f.read<int64_t>(group + "/doc", 1, "Q").data;
  return s;
}

void write_split(nk::h5::Writer& w, const std::string& group, const QaSplit& s) {
  w.write_strings(group + "/question", s.question, "Q");
  w.write_strings(group + "/answer", s.answer, "Q");
  w.write(group + "/doc", s.doc.data(), {s.size()}, "Q");
}

}  // namespace

Tasks generate_tasks(const TaskSpec& spec) {
  if (spec.docs < 1) throw nk::usage_error("--docs must be at least 1");
  Tasks t;
  t.task = spec.task;
  if (spec.task == "memo") {
    nk::Rng root = nk::Rng(spec.seed).split(spec.pool == Pool::eval ? 0x3E30 : 0x3E31);
    for (int64_t d = 0; d < spec.docs; ++d) {
      nk::Rng rng = root.split(static_cast<uint64_t>(d));
      memo_doc(spec.pool, rng, t);
    }
  } else if (spec.task == "update") {
    update_docs(spec, t);
  } else if (spec.task == "skill") {
    skill_docs(spec, t);
  } else {
    throw nk::usage_error("--task must be memo, update or skill, not '" + spec.task + "'");
  }
  check_tasks(t);
  return t;
}

void check_tasks(const Tasks& t) {
  if (t.docs.empty()) throw nk::input_error(t.path, "/docs/text", "has no documents");
  for (int64_t d = 0; d < t.size(); ++d)
    if (t.docs[static_cast<size_t>(d)].find_first_not_of(" \t\r\n") == std::string::npos)
      throw nk::input_error(t.path, "/docs/text", "index " + std::to_string(d) + " is empty");
  check_split(t, t.train, "/train");
  check_split(t, t.test, "/test");
}

Tasks read_tasks(const std::string& path) {
  const nk::h5::File f = nk::h5::File::open(path);
  if (const auto schema = f.attr_string("/", "nk_schema"); schema && schema->rfind("ssd-distill.tasks/", 0) != 0)
    throw nk::input_error(path, "/", "has nk_schema '" + *schema + "', not " + kTasksSchema);
  Tasks t;
  t.path = path;
  for (const char* d :
       {"/docs/text", "/train/question", "/train/answer", "/train/doc", "/test/question", "/test/answer", "/test/doc"})
    f.require(d);
  t.docs = f.read_strings("/docs/text");
  t.train = read_split(f, "/train");
  t.test = read_split(f, "/test");
  t.task = f.attr_string("/", "task").value_or("");
  check_tasks(t);
  return t;
}

Tasks read_tasks_jsonl(const std::string& path) {
  Tasks t;
  t.path = path;
  t.task = "jsonl";
  std::map<std::string, int64_t> doc_row;
  nk::lm::for_each_json_line(path, [&](const nk::lm::JsonLine& j) {
    const std::string doc = j.text("doc"), split = j.object.contains("split") ? j.text("split") : "train";
    if (split != "train" && split != "test")
      throw nk::input_error(path, j.where, "\"split\" is '" + split + "', not train or test");
    auto it = doc_row.find(doc);
    if (it == doc_row.end()) {
      it = doc_row.emplace(doc, t.size()).first;
      t.docs.push_back(doc);
    }
    (split == "train" ? t.train : t.test).add(j.text("question"), j.text("answer"), it->second);
  });
  if (t.docs.empty()) throw nk::input_error(path, "line 1", "no questions in the file");
  check_tasks(t);
  return t;
}

void write_tasks(const Tasks& t, const std::string& output, bool no_clobber) {
  nk::h5::Writer w(output, kTasksSchema, no_clobber);
  w.write_strings("/docs/text", t.docs, "D");
  write_split(w, "/train", t.train);
  write_split(w, "/test", t.test);
  w.attr("/", "task", t.task);
  w.attr("/", "documents", t.size());
  w.attr("/", "train_questions", t.train.size());
  w.attr("/", "test_questions", t.test.size());
  w.commit();
}

}  // namespace ssd
