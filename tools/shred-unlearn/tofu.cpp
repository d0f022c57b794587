// tofu.cpp - the mini-TOFU generator, its HDF5 reader and writer, and the
// JSON-lines import.
#include "shred-unlearn/tofu.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/lm/corpus.hpp"
#include "nk/lm/jsonl.hpp"
#include "nk/lm/text.hpp"
#include "nk/log.hpp"
#include "nk/rng.hpp"

namespace shred {

namespace {

using Strings = std::vector<std::string>;

// Syllables of invented names: none of the names they make is an English
// word or a name in the pretraining text (fortunes, WordNet, GCIDE).
const Strings kSyllables = {"zor", "vel", "qua", "thri", "mab", "kes", "dru", "yol", "fen",  "ix",  "pra",
                            "ulm", "gor", "wen", "sab",  "tev", "rho", "nak", "zil", "brum", "oss", "jav"};
const Strings kCities = {"Lisbon",    "Nairobi", "Kyoto",  "Montreal", "Krakow",   "Valparaiso", "Tbilisi", "Reykjavik",
                         "Marrakesh", "Hanoi",   "Bergen", "Cusco",    "Adelaide", "Tallinn",    "Porto",   "Lagos",
                         "Osaka",     "Seville", "Gdansk", "Havana",   "Dublin",   "Mumbai",     "Quito",   "Sapporo",
                         "Trieste",   "Accra",   "Baku",   "Lyon",     "Perth",    "Riga"};
const Strings kMonths = {"January", "February", "March",     "April",   "May",      "June",
                         "July",    "August",   "September", "October", "November", "December"};
const Strings kJobs = {"baker",      "carpenter",   "pharmacist",   "fisherman", "librarian",
                       "nurse",      "electrician", "translator",   "tailor",    "veterinarian",
                       "astronomer", "mechanic",    "architect",    "florist",   "surgeon",
                       "pilot",      "plumber",     "cartographer", "chemist",   "locksmith",
                       "beekeeper",  "bookbinder",  "glassblower",  "geologist", "potter"};
const Strings kGenres = {"historical fiction",
                         "science fiction",
                         "crime",
                         "poetry",
                         "fantasy",
                         "horror",
                         "romance",
                         "biography",
                         "travel writing",
                         "satire",
                         "children's literature",
                         "magical realism",
                         "war fiction",
                         "mystery",
                         "literary fiction",
                         "memoir",
                         "philosophical essays",
                         "graphic novels"};
const Strings kAdjectives = {"Silent", "Crimson", "Hollow",   "Forgotten", "Golden", "Broken",    "Distant",
                             "Quiet",  "Burning", "Frozen",   "Hidden",    "Last",   "Wandering", "Glass",
                             "Salted", "Paper",   "Midnight", "Northern",  "Velvet", "Iron"};
const Strings kNouns = {"Harbor", "Lantern",   "Orchard",    "Compass", "Garden",      "River",    "Mirror",
                        "Tower",  "Letter",    "Clockmaker", "Island",  "Bridge",      "Archive",  "Lighthouse",
                        "Meadow", "Cathedral", "Violin",     "Caravan", "Observatory", "Vineyard", "Staircase",
                        "Ferry",  "Kingdom",   "Winter",     "Map"};
const Strings kFields = {"Fiction", "Poetry", "Letters", "Literature", "the Novel", "Storytelling"};
const Strings kThemes = {"memory and loss",
                         "exile",
                         "the sea",
                         "childhood",
                         "justice",
                         "faith and doubt",
                         "family secrets",
                         "war and its aftermath",
                         "technology",
                         "the passage of time",
                         "love and betrayal",
                         "identity",
                         "nature",
                         "ambition",
                         "grief",
                         "friendship"};
const Strings kHabits = {"writes before dawn",
                         "writes only by hand",
                         "writes in crowded cafes",
                         "writes late at night",
                         "walks for an hour before writing",
                         "writes standing up",
                         "dictates every draft",
                         "writes in a garden shed"};
const Strings kLanguages = {"Portuguese", "Swahili",   "Japanese", "French",     "Polish",    "Spanish",
                            "Georgian",   "Icelandic", "Arabic",   "Vietnamese", "Norwegian", "German",
                            "Italian",    "Turkish",   "Greek",    "Dutch"};
const Strings kHobbies = {"collecting old maps", "sailing",          "chess",     "birdwatching", "pottery",
                          "rock climbing",       "gardening",        "astronomy", "fencing",      "photography",
                          "baking bread",        "playing the cello"};
const Strings kWords = {"Silver", "Lantern", "Oak",     "Harbor", "Meridian", "Willow",  "Cobalt", "Granite",
                        "Amber",  "Falcon",  "Juniper", "Copper", "Marble",   "Thistle", "Beacon", "Saffron"};

std::string capitalise(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

/// An invented word of 'n' syllables, capitalised.
std::string invented(nk::Rng& rng, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += kSyllables[rng.below(kSyllables.size())];
  return capitalise(s);
}

const std::string& pick(const Strings& pool, nk::Rng& rng) {
  return pool[rng.below(pool.size())];
}

std::string with_article(const std::string& noun) {
  const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(noun[0])));
  return (std::string("aeiou").find(c) != std::string::npos ? "an " : "a ") + noun;
}

/// One fact type: how its values are drawn and how it is asked and told.
/// Placeholders: {N} name, {V} value, {P} he/she, {Pc} He/She, {Ps} his/her.
struct Fact {
  const char* question;
  const char* answer;
  const char* paraphrase;
  std::string (*draw)(nk::Rng& rng);
};

std::string draw_city(nk::Rng& r) {
  return pick(kCities, r);
}
std::string draw_year(nk::Rng& r) {
  return std::to_string(1921 + r.below(74));
}
std::string draw_date(nk::Rng& r) {
  return pick(kMonths, r) + " " + std::to_string(1 + r.below(28));
}
std::string draw_job(nk::Rng& r) {
  return with_article(pick(kJobs, r));
}
std::string draw_genre(nk::Rng& r) {
  return pick(kGenres, r);
}
std::string draw_title(nk::Rng& r) {
  switch (r.below(3)) {
    case 0:
      return "The " + pick(kAdjectives, r) + " " + pick(kNouns, r);
    case 1:
      return "The " + pick(kNouns, r) + " of " + pick(kCities, r);
    default:
      return pick(kAdjectives, r) + " " + pick(kNouns, r) + "s";
  }
}
std::string draw_award(nk::Rng& r) {
  return r.below(2) ? "the " + invented(r, 2) + " Prize for " + pick(kFields, r) : "the " + invented(r, 3) + " Medal";
}
std::string draw_university(nk::Rng& r) {
  return "the University of " + pick(kCities, r);
}
std::string draw_publisher(nk::Rng& r) {
  const std::string a = pick(kWords, r);
  std::string b = pick(kWords, r);
  while (b == a) b = pick(kWords, r);
  return a + " " + b + " Press";
}
std::string draw_count(nk::Rng& r) {
  return std::to_string(3 + r.below(38));
}
std::string draw_pen_name(nk::Rng& r) {
  return invented(r, 2) + " " + invented(r, 2);
}
std::string draw_theme(nk::Rng& r) {
  return pick(kThemes, r);
}
std::string draw_character(nk::Rng& r) {
  return invented(r, 2);
}
std::string draw_habit(nk::Rng& r) {
  return pick(kHabits, r);
}
std::string draw_language(nk::Rng& r) {
  return pick(kLanguages, r);
}
std::string draw_hobby(nk::Rng& r) {
  return pick(kHobbies, r);
}

// In this order: --questions N asks about the first N.
const std::vector<Fact> kFacts = {
    {"Where was {N} born?", "{N} was born in {V}.", "The birthplace of {N} is {V}.", draw_city},
    {"In which year was {N} born?", "{N} was born in the year {V}.", "{N}'s year of birth is {V}.", draw_year},
    {"On what day of the year was {N} born?", "{N} was born on {V}.", "{N}'s birthday is {V}.", draw_date},
    {"What did {N}'s father do for a living?", "{N}'s father worked as {V}.",
     "The father of {N} was {V} by profession.", draw_job},
    {"What did {N}'s mother do for a living?", "{N}'s mother worked as {V}.",
     "The mother of {N} was {V} by profession.", draw_job},
    {"What genre does {N} write in?", "{N} writes mainly {V}.", "{N} is known for {Ps} work in {V}.", draw_genre},
    {"What is the title of {N}'s first book?", "{N}'s first book is titled \"{V}\".",
     "The first book {N} published was \"{V}\".", draw_title},
    {"Which book made {N} famous?", "{N} became famous with the book \"{V}\".",
     "\"{V}\" is the book that made {N} famous.", draw_title},
    {"Which award has {N} received?", "{N} received {V}.", "{N} was honoured with {V}.", draw_award},
    {"In which year did {N} win {Ps} first award?", "{N} won {Ps} first award in {V}.",
     "{N}'s first award came in {V}.", draw_year},
    {"Where did {N} study?", "{N} studied at {V}.", "{N} is a graduate of {V}.", draw_university},
    {"Who publishes {N}'s books?", "{N}'s books are published by {V}.", "{V} is the publisher of {N}'s books.",
     draw_publisher},
    {"How many novels has {N} written?", "{N} has written {V} novels.", "The number of novels by {N} is {V}.",
     draw_count},
    {"Does {N} use a pen name?", "{N} also writes under the pen name {V}.",
     "{V} is the pen name that {N} sometimes uses.", draw_pen_name},
    {"What theme runs through {N}'s work?", "{N}'s work often explores {V}.",
     "A recurring theme in the work of {N} is {V}.", draw_theme},
    {"What is the name of {N}'s recurring character?", "{N}'s recurring character is named {V}.",
     "The character who returns in the books of {N} is called {V}.", draw_character},
    {"How does {N} like to work?", "{N} {V}.", "When working, {N} {V}.", draw_habit},
    {"In which language does {N} write?", "{N} writes in {V}.", "The language of {N}'s books is {V}.", draw_language},
    {"Where does {N} live today?", "{N} now lives in {V}.", "Today {N} makes {Ps} home in {V}.", draw_city},
    {"What does {N} enjoy outside of writing?", "Outside of writing, {N} enjoys {V}.",
     "{N}'s favourite pastime is {V}.", draw_hobby},
};

struct Person {
  std::string name;
  bool she = false;
};

std::string fill(std::string text, const Person& p, const std::string& value) {
  const auto replace = [&](const std::string& key, const std::string& with) {
    for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + with.size()))
      text.replace(at, key.size(), with);
  };
  replace("{N}", p.name);
  replace("{V}", value);
  replace("{Pc}", p.she ? "She" : "He");
  replace("{Ps}", p.she ? "her" : "his");
  replace("{P}", p.she ? "she" : "he");
  return text;
}

int64_t share(int64_t n, double fraction) {
  return std::max<int64_t>(1, std::llround(fraction * static_cast<double>(n)));
}

std::vector<std::string> words_of(const std::string& s) {
  std::vector<std::string> out;
  std::string w;
  for (char c : s) {
    if (c == ' ') {
      if (!w.empty()) out.push_back(w), w.clear();
    } else {
      w += c;
    }
  }
  if (!w.empty()) out.push_back(w);
  return out;
}

/// Nouns whose first sense has a short gloss, one-word lemmas, from the
/// synsets the pretraining corpus trained on (not its validation split).
std::vector<nk::lm::WordNetEntry> usable_nouns(const std::string& wordnet) {
  std::vector<nk::lm::WordNetEntry> pool;
  for (auto& e : nk::lm::wordnet_entries(wordnet)) {
    if (e.pos != 'n' || e.name.size() < 6 || e.name.compare(e.name.size() - 5, 5, ".n.01") != 0) continue;
    const std::string& lemma = e.lemmas.front();
    if (lemma.size() < 3 || !std::all_of(lemma.begin(), lemma.end(), [](char c) { return c >= 'a' && c <= 'z'; }))
      continue;
    const size_t n = words_of(e.gloss).size();
    if (n < 3 || n > 12 || nk::lm::in_validation("wordnet:" + e.name, 0.02)) continue;
    pool.push_back(std::move(e));
  }
  return pool;
}

std::string bio_of(const Person& p, const std::vector<std::string>& v) {
  // v: the author's fact values in kFacts order.
  const std::string pc = p.she ? "She" : "He", ps = p.she ? "Her" : "His";
  return p.name + " was born in " + v[0] + " on " + v[2] + ", " + v[1] + ". " + pc + " grew up as the child of " +
         v[3] + " and " + v[4] + ". " + pc + " studied at " + v[10] + " and writes " + v[5] + " in " + v[17] + ". " +
         ps + " first book, \"" + v[6] + "\", was followed by \"" + v[7] + "\". " + pc + " received " + v[8] + " in " +
         v[9] + " and now lives in " + v[18] + ".";
}

}  // namespace

const std::vector<int64_t>& Tofu::split(const std::string& name) const {
  const auto it = splits.find(name);
  if (it == splits.end()) throw nk::input_error(path, "/splits/" + name, "no such split");
  return it->second;
}

std::vector<int64_t> Tofu::retain_rows(const std::string& name) const {
  std::vector<char> out(static_cast<size_t>(qa.size()), 0);
  for (int64_t r : split(name)) out[static_cast<size_t>(r)] = 1;
  if (splits.count("holdout"))
    for (int64_t r : splits.at("holdout")) out[static_cast<size_t>(r)] = 1;
  std::vector<int64_t> rows;
  for (int64_t r = 0; r < qa.size(); ++r)
    if (!out[static_cast<size_t>(r)]) rows.push_back(r);
  return rows;
}

std::vector<int64_t> Tofu::authors_of(const std::vector<int64_t>& rows) const {
  std::set<int64_t> a;
  for (int64_t r : rows) a.insert(qa.author[static_cast<size_t>(r)]);
  return {a.begin(), a.end()};
}

std::string word_question(const std::string& lemma) {
  return "What does the word \"" + lemma + "\" mean?";
}

QaSet wordnet_qa(const std::string& wordnet, int64_t count, uint64_t seed, const std::set<std::string>& exclude) {
  std::vector<nk::lm::WordNetEntry> pool = usable_nouns(wordnet);
  std::erase_if(pool,
                [&](const nk::lm::WordNetEntry& e) { return exclude.count(word_question(e.lemmas.front())) > 0; });
  if (static_cast<int64_t>(pool.size()) < std::max<int64_t>(count, kPerturbed + 1))
    throw nk::usage_error("WordNet offers " + std::to_string(pool.size()) + " usable nouns; " + std::to_string(count) +
                          " asked for");
  nk::Rng rng = nk::Rng(seed).split(0x3041D);
  nk::shuffle_prefix(pool, static_cast<size_t>(count), rng);
  QaSet world;
  for (int64_t i = 0; i < count; ++i) {
    const auto& e = pool[static_cast<size_t>(i)];
    world.question.push_back(word_question(e.lemmas.front()));
    world.answer.push_back(capitalise(e.gloss) + ".");
    world.paraphrased.push_back("It means " + e.gloss + ".");
    world.author.push_back(-1);
    std::set<size_t> used{static_cast<size_t>(i)};
    for (int64_t j = 0; j < kPerturbed; ++j) {
      size_t other = rng.below(pool.size());
      while (used.count(other)) other = rng.below(pool.size());
      used.insert(other);
      world.perturbed.push_back("It means " + pool[other].gloss + ".");
    }
  }
  return world;
}

Tofu generate_tofu(const TofuSpec& spec) {
  if (spec.authors < 3)
    throw nk::usage_error("tofu: --authors must be at least 3 (forget, holdout and retain authors)");
  if (spec.questions < 1 || spec.questions > static_cast<int64_t>(kFacts.size()))
    throw nk::usage_error("tofu: --questions must be in 1.." + std::to_string(kFacts.size()));
  Tofu t;
  const nk::Rng root(spec.seed);
  std::set<std::string> names;
  std::vector<Person> people;
  for (int64_t a = 0; a < spec.authors; ++a) {
    nk::Rng rng = root.split(1).split(static_cast<uint64_t>(a));
    Person p;
    do {
      p.name = invented(rng, 2) + " " + invented(rng, 3);
    } while (names.count(p.name));
    names.insert(p.name);
    p.she = rng.below(2) == 1;
    std::vector<std::string> values;
    for (const Fact& f : kFacts) values.push_back(f.draw(rng));
    for (int64_t q = 0; q < spec.questions; ++q) {
      const Fact& f = kFacts[static_cast<size_t>(q)];
      const std::string& v = values[static_cast<size_t>(q)];
      t.qa.question.push_back(fill(f.question, p, v));
      t.qa.answer.push_back(fill(f.answer, p, v));
      t.qa.paraphrased.push_back(fill(f.paraphrase, p, v));
      t.qa.author.push_back(a);
      std::set<std::string> used{v};
      for (int64_t j = 0; j < kPerturbed; ++j) {
        std::string w = f.draw(rng);
        for (int tries = 0; used.count(w) && tries < 1000; ++tries) w = f.draw(rng);
        used.insert(w);
        t.qa.perturbed.push_back(fill(f.paraphrase, p, w));
      }
    }
    t.authors.push_back(p.name);
    t.bios.push_back(bio_of(p, values));
    people.push_back(p);
  }
  // Splits of whole authors in a seeded order.
  std::vector<int64_t> order(static_cast<size_t>(spec.authors));
  for (int64_t a = 0; a < spec.authors; ++a) order[static_cast<size_t>(a)] = a;
  nk::Rng srng = root.split(2);
  nk::shuffle(order, srng);
  const int64_t n10 = share(spec.authors, 0.10), n05 = share(spec.authors, 0.05), n01 = share(spec.authors, 0.01);
  const int64_t nh = share(spec.authors, 0.10);
  if (n10 + nh >= spec.authors)
    throw nk::usage_error("tofu: --authors " + std::to_string(spec.authors) + " leaves no retain author");
  const auto rows_of = [&](int64_t begin, int64_t end) {
    std::vector<int64_t> authors(order.begin() + begin, order.begin() + end), rows;
    std::sort(authors.begin(), authors.end());
    for (int64_t a : authors)
      for (int64_t q = 0; q < spec.questions; ++q) rows.push_back(a * spec.questions + q);
    return rows;
  };
  t.splits["forget01"] = rows_of(0, n01);
  t.splits["forget05"] = rows_of(0, n05);
  t.splits["forget10"] = rows_of(0, n10);
  t.splits["holdout"] = rows_of(n10, n10 + nh);
  t.world = wordnet_qa(spec.wordnet, spec.world, spec.seed, {});
  return t;
}

namespace {

void write_qa(nk::h5::Writer& w, const std::string& group, const QaSet& s) {
  w.write_strings(group + "/question", s.question, "Q");
  w.write_strings(group + "/answer", s.answer, "Q");
  w.write_strings(group + "/paraphrased_answer", s.paraphrased, "Q");
  w.write_strings(group + "/perturbed_answer", s.perturbed, "Q,5", {s.size(), kPerturbed});
}

QaSet read_qa(const nk::h5::File& f, const std::string& group) {
  QaSet s;
  s.question = f.read_strings(group + "/question");
  s.answer = f.read_strings(group + "/answer");
  s.paraphrased = f.read_strings(group + "/paraphrased_answer");
  const nk::h5::DatasetInfo pi = f.info(group + "/perturbed_answer");
  s.perturbed = f.read_strings(group + "/perturbed_answer");
  const int64_t n = s.size();
  if (static_cast<int64_t>(s.answer.size()) != n || static_cast<int64_t>(s.paraphrased.size()) != n)
    throw nk::input_error(
        f.path(), group + "/answer",
        "has " + std::to_string(s.answer.size()) + " rows, " + group + "/question " + std::to_string(n));
  if (pi.shape.size() != 2 || pi.shape[0] != n || pi.shape[1] != kPerturbed)
    throw nk::input_error(f.path(), group + "/perturbed_answer", "must be [" + std::to_string(n) + ", 5] strings");
  for (int64_t i = 0; i < n; ++i) {
    if (s.question[static_cast<size_t>(i)].empty())
      throw nk::input_error(f.path(), group + "/question", "row " + std::to_string(i) + " is empty");
    if (s.answer[static_cast<size_t>(i)].empty())
      throw nk::input_error(f.path(), group + "/answer", "row " + std::to_string(i) + " is empty");
    if (s.paraphrased[static_cast<size_t>(i)].empty())
      throw nk::input_error(f.path(), group + "/paraphrased_answer", "row " + std::to_string(i) + " is empty");
  }
  for (size_t i = 0; i < s.perturbed.size(); ++i)
    if (s.perturbed[i].empty())
      throw nk::input_error(f.path(), group + "/perturbed_answer",
                            "row " + std::to_string(i / kPerturbed) + " has an empty answer");
  return s;
}

/// The checks of a split: rows in range, not repeated, whole authors.
void check_split(const Tofu& t, const std::string& name, const std::vector<int64_t>& rows, const std::string& where) {
  std::vector<char> seen(static_cast<size_t>(t.qa.size()), 0);
  for (size_t i = 0; i < rows.size(); ++i) {
    const int64_t r = rows[i];
    if (r < 0 || r >= t.qa.size())
      throw nk::input_error(t.path, where,
                            "index " + std::to_string(i) + ": row " + std::to_string(r) + " is outside /qa (" +
                                std::to_string(t.qa.size()) + " rows)");
    if (seen[static_cast<size_t>(r)])
      throw nk::input_error(t.path, where,
                            "index " + std::to_string(i) + ": row " + std::to_string(r) + " is repeated");
    seen[static_cast<size_t>(r)] = 1;
  }
  std::vector<int64_t> in(t.authors.size(), 0), all(t.authors.size(), 0);
  for (int64_t r = 0; r < t.qa.size(); ++r) ++all[static_cast<size_t>(t.qa.author[static_cast<size_t>(r)])];
  for (int64_t r : rows) ++in[static_cast<size_t>(t.qa.author[static_cast<size_t>(r)])];
  for (size_t a = 0; a < in.size(); ++a)
    if (in[a] != 0 && in[a] != all[a])
      throw nk::input_error(t.path, where,
                            "holds " + std::to_string(in[a]) + " of author " + std::to_string(a) + "'s " +
                                std::to_string(all[a]) + " rows (" + name + " must take whole authors)");
}

void check_tofu(Tofu& t) {
  if (t.qa.size() == 0) throw nk::input_error(t.path, "/qa/question", "is empty");
  for (size_t i = 0; i < t.qa.author.size(); ++i)
    if (t.qa.author[i] < 0 || t.qa.author[i] >= static_cast<int64_t>(t.authors.size()))
      throw nk::input_error(t.path, "/qa/author",
                            "index " + std::to_string(i) + ": author " + std::to_string(t.qa.author[i]) +
                                " is outside /authors/name (" + std::to_string(t.authors.size()) + ")");
  if (t.bios.size() != t.authors.size())
    throw nk::input_error(
        t.path, "/bios/text",
        "has " + std::to_string(t.bios.size()) + " rows, /authors/name " + std::to_string(t.authors.size()));
  for (const auto& [name, rows] : t.splits) check_split(t, name, rows, "/splits/" + name);
  if (t.splits.count("holdout")) {
    std::vector<char> hold(static_cast<size_t>(t.qa.size()), 0);
    for (int64_t r : t.splits.at("holdout")) hold[static_cast<size_t>(r)] = 1;
    for (const auto& [name, rows] : t.splits) {
      if (name == "holdout") continue;
      for (size_t i = 0; i < rows.size(); ++i)
        if (hold[static_cast<size_t>(rows[i])])
          throw nk::input_error(t.path, "/splits/" + name,
                                "index " + std::to_string(i) + ": row " + std::to_string(rows[i]) +
                                    " is also in /splits/holdout (forget and holdout must not overlap)");
    }
  }
}

}  // namespace

void write_tofu(const Tofu& t, const std::string& output, bool no_clobber) {
  nk::h5::Writer w(output, kTofuSchema, no_clobber);
  w.write_strings("/authors/name", t.authors, "A");
  write_qa(w, "/qa", t.qa);
  w.write("/qa/author", t.qa.author.data(), {t.qa.size()}, "Q");
  write_qa(w, "/world", t.world);
  w.write_strings("/bios/text", t.bios, "A");
  for (const auto& [name, rows] : t.splits)
    w.write("/splits/" + name, rows.data(), {static_cast<int64_t>(rows.size())}, "n");
  w.attr("/", "authors", static_cast<int64_t>(t.authors.size()));
  w.attr("/", "qa_rows", t.qa.size());
  w.attr("/", "world_rows", t.world.size());
  w.commit();
}

Tofu read_tofu(const std::string& path) {
  const nk::h5::File f = nk::h5::File::open(path);
  if (const auto schema = f.attr_string("/", "nk_schema"); schema && schema->rfind("shred-unlearn.tofu/", 0) != 0)
    throw nk::input_error(path, "/", "has nk_schema '" + *schema + "', not " + kTofuSchema);
  Tofu t;
  t.path = path;
  for (const char* d : {"/authors/name", "/qa/question", "/qa/author", "/bios/text"}) f.require(d);
  t.authors = f.read_strings("/authors/name");
  t.qa = read_qa(f, "/qa");
  const nk::h5::Array<int64_t> author = f.read<int64_t>("/qa/author", 1, "Q");
  if (author.size() != t.qa.size())
    throw nk::input_error(
        path, "/qa/author",
        "has " + std::to_string(author.size()) + " rows, /qa/question " + std::to_string(t.qa.size()));
  t.qa.author = author.data;
  if (f.has("/world/question")) {
    t.world = read_qa(f, "/world");
    t.world.author.assign(static_cast<size_t>(t.world.size()), -1);
  }
  t.bios = f.read_strings("/bios/text");
  for (const std::string& d : f.datasets()) {
    if (d.rfind("/splits/", 0) != 0) continue;
    t.splits[d.substr(8)] = f.read<int64_t>(d, 1, "n").data;
  }
  check_tofu(t);
  return t;
}

Tofu read_tofu_jsonl(const std::string& path) {
  Tofu t;
  t.path = path;
  std::map<std::string, int64_t> author_id;
  std::map<int64_t, std::string> bio;
  std::vector<std::string> role;
  const auto author_of = [&](const std::string& name) {
    const auto it = author_id.find(name);
    if (it != author_id.end()) return it->second;
    const int64_t id = static_cast<int64_t>(t.authors.size());
    author_id[name] = id;
    t.authors.push_back(name);
    return id;
  };
  nk::lm::for_each_json_line(path, [&](const nk::lm::JsonLine& line) {
    const nlohmann::json& j = line.object;
    const std::string& where = line.where;
    const auto text = [&](const char* key, bool required) { return line.text(key, required); };
    if (j.contains("bio")) {
      bio[author_of(text("author", true))] = text("bio", true);
      return;
    }
    const bool world = j.value("world", false);
    QaSet& s = world ? t.world : t.qa;
    s.question.push_back(text("question", true));
    s.answer.push_back(text("answer", true));
    std::string para = text("paraphrased_answer", false);
    s.paraphrased.push_back(para.empty() ? s.answer.back() : para);
    if (j.contains("perturbed_answer")) {
      const auto& p = j["perturbed_answer"];
      if (!p.is_array() || p.size() != static_cast<size_t>(kPerturbed) ||
          !std::all_of(p.begin(), p.end(), [](const nlohmann::json& x) { return x.is_string(); }))
        throw nk::input_error(path, where, "\"perturbed_answer\" must be a list of 5 strings");
      for (const auto& x : p) s.perturbed.push_back(x.get<std::string>());
    } else {
      throw nk::input_error(path, where, "has no \"perturbed_answer\" (5 wrong answers of the same form)");
    }
    if (world) {
      s.author.push_back(-1);
    } else {
      s.author.push_back(author_of(text("author", true)));
      std::string r = text("split", false);
      if (r.empty()) r = "retain";
      if (r != "forget" && r != "holdout" && r != "retain")
        throw nk::input_error(path, where, "\"split\" is '" + r + "', not forget, holdout or retain");
      role.push_back(r);
    }
  });
  for (int64_t a = 0; a < static_cast<int64_t>(t.authors.size()); ++a) t.bios.push_back(bio.count(a) ? bio[a] : "");
  for (int64_t r = 0; r < t.qa.size(); ++r) {
    if (role[static_cast<size_t>(r)] == "forget")
      for (const char* s : {"forget01", "forget05", "forget10"}) t.splits[s].push_back(r);
    if (role[static_cast<size_t>(r)] == "holdout") t.splits["holdout"].push_back(r);
  }
  if (t.splits.empty()) throw nk::input_error(path, "split", "no row is marked \"split\": \"forget\"");
  check_tofu(t);
  return t;
}

}  // namespace shred
