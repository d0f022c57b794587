// text.cpp - Debian's English text as named documents: fortunes, WordNet 3.0
// synsets, GCIDE entries (a dictzip inflated once, sliced by its index), and
// plain text files. The formats and the choices made are documented in text.hpp.
#include "nk/lm/text.hpp"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "nk/error.hpp"

namespace nk::lm {

namespace {

namespace fs = std::filesystem;

struct Source {
  std::string_view name, root, package;
};
constexpr Source kSources[] = {
    {"fortunes", "/usr/share/games/fortunes", "fortunes"},
    {"wordnet", "/usr/share/wordnet", "wordnet-base"},
    {"gcide", "/usr/share/dictd", "dict-gcide"},
};

const Source& source_named(std::string_view name) {
  for (const Source& source : kSources) {
    if (source.name == name) return source;
  }
  throw usage_error("unknown text source '" + std::string(name) + "' (known: fortunes, wordnet, gcide)");
}

std::string install_hint(const Source& source) {
  return "install the Debian package " + std::string(source.package);
}

void require_folder(const std::string& folder, const Source& source) {
  std::error_code error;
  if (!fs::is_directory(folder, error)) throw io_error(folder, "no such folder (" + install_hint(source) + ")");
}

std::string read_stream(std::istream& in, const std::string& path) {
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw io_error(path, "read failed");
  return std::move(text).str();
}

/// The whole file; exit 4 with 'hint' appended when it cannot be opened.
std::string read_whole(const std::string& path, const std::string& hint = "") {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw io_error(path, "cannot open for reading" + (hint.empty() ? "" : " (" + hint + ")"));
  return read_stream(in, path);
}

/// Calls f(line, number) for each line without its '\n'; numbers start at 1.
template <class F>
void for_each_line(std::string_view text, F&& f) {
  size_t begin = 0;
  for (int64_t number = 1; begin < text.size(); ++number) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    f(text.substr(begin, end - begin), number);
    begin = end + 1;
  }
}

std::string_view trim(std::string_view s, std::string_view blanks = " \t\r\n") {
  const size_t begin = s.find_first_not_of(blanks);
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(blanks) - begin + 1);
}

bool is_blank(std::string_view s) {
  return trim(s, " \t\r\n\v\f").empty();
}

std::vector<std::string_view> split(std::string_view s, char separator) {
  std::vector<std::string_view> fields;
  size_t begin = 0;
  while (begin <= s.size()) {
    size_t end = s.find(separator, begin);
    if (end == std::string_view::npos) end = s.size();
    if (separator != ' ' || end > begin) fields.push_back(s.substr(begin, end - begin));
    begin = end + 1;
  }
  return fields;
}

template <class T>
std::optional<T> parse_number(std::string_view s, int base = 10) {
  T value{};
  const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), value, base);
  if (error != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return value;
}

std::string at_line(int64_t number) {
  return "line " + std::to_string(number) + ": ";
}

// ---- fortunes ----------------------------------------------------------------------

/// Resolves nroff overstriking ("_\bA" underlines, "A\bA" bolds): the byte
/// before each backspace is dropped, the one after it kept.
std::string resolve_overstrikes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c != '\b') {
      out += c;
    } else if (!out.empty()) {
      out.pop_back();
    }
  }
  return out;
}

std::vector<Document> read_fortunes(const std::string& root, const Source& source) {
  require_folder(root, source);
  std::vector<std::string> files;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(root, error)) {
    const std::string file = entry.path().filename().string();
    std::error_code type_error;
    if (file.find('.') == std::string::npos && entry.is_regular_file(type_error)) files.push_back(file);
  }
  if (error) throw io_error(root, "cannot list the folder: " + error.message());
  std::sort(files.begin(), files.end());

  std::vector<Document> documents;
  for (const std::string& file : files) {
    const std::string text = read_whole(root + "/" + file);
    int64_t index = 0;
    std::string fortune;
    const auto finish = [&] {
      std::string resolved = resolve_overstrikes(fortune);
      while (!resolved.empty() && resolved.back() == '\n') resolved.pop_back();
      if (!is_blank(resolved))
        documents.push_back({"fortunes:" + file + ":" + std::to_string(index++), std::move(resolved)});
      fortune.clear();
    };
    for_each_line(text, [&](std::string_view line, int64_t) {
      if (line == "%") {
        finish();
      } else {
        fortune.append(line).push_back('\n');
      }
    });
    finish();
  }
  return documents;
}

// ---- WordNet -----------------------------------------------------------------------

struct PosFile {
  const char* suffix;  ///< data.<suffix>, index.<suffix>
  std::string_view ss_types;
  const char* word;
};
constexpr PosFile kPosFiles[] = {
    {"noun", "n", "noun"}, {"verb", "v", "verb"}, {"adj", "as", "adjective"}, {"adv", "r", "adverb"}};

/// lemma -> its synset offsets in the order of index.<pos> (sense 1 first);
/// the keys view 'text', which must outlive the map.
using SenseIndex = std::unordered_map<std::string_view, std::vector<uint64_t>>;

SenseIndex read_sense_index(const std::string& path, std::string_view text) {
  SenseIndex senses;
  for_each_line(text, [&](std::string_view line, int64_t number) {
    if (line.starts_with("  ") || is_blank(line)) return;  // the license header
    const std::vector<std::string_view> fields = split(line, ' ');
    const auto synset_count = fields.size() >= 4 ? parse_number<uint64_t>(fields[2]) : std::nullopt;
    const auto pointer_count = fields.size() >= 4 ? parse_number<uint64_t>(fields[3]) : std::nullopt;
    if (!synset_count || !pointer_count || fields.size() != 6 + *synset_count + *pointer_count) {
      throw input_error(path, "",
                        at_line(number) + "expected 'lemma pos synset_cnt p_cnt [ptr...] sense_cnt " +
                            "tagsense_cnt synset_offset...' with synset_cnt offsets");
    }
    std::vector<uint64_t> offsets;
    for (size_t i = fields.size() - *synset_count; i < fields.size(); ++i) {
      const auto offset = parse_number<uint64_t>(fields[i]);
      if (!offset) throw input_error(path, "", at_line(number) + "synset offset '" + std::string(fields[i]) + "'");
      offsets.push_back(*offset);
    }
    senses[fields[0]] = std::move(offsets);
  });
  return senses;
}

/// NLTK's Synset._definition/_examples, quote-aware: parts split at ';'
/// outside double quotes; a part in quotes is an example (an attribution
/// after the closing quote, "- Shakespeare", dropped), so is an unquoted part
/// ending in '"' after an example (WordNet misses a few opening quotes); the
/// other parts, joined by "; ", are the definition.
void split_gloss(std::string_view gloss, std::string& definition, std::vector<std::string>& examples) {
  std::vector<std::string_view> parts;
  bool quoted = false;
  size_t begin = 0;
  for (size_t i = 0; i < gloss.size(); ++i) {
    if (gloss[i] == '"') quoted = !quoted;
    if (gloss[i] == ';' && !quoted) {
      parts.push_back(trim(gloss.substr(begin, i - begin)));
      begin = i + 1;
    }
  }
  parts.push_back(trim(gloss.substr(begin)));
  for (const std::string_view part : parts) {
    if (part.empty()) continue;
    if (part.front() == '"') {
      const size_t close = part.rfind('"');
      examples.emplace_back(trim(close > 0 ? part.substr(1, close - 1) : part.substr(1)));
    } else if (!examples.empty() && part.back() == '"') {
      examples.emplace_back(trim(part.substr(0, part.size() - 1)));
    } else {
      if (!definition.empty()) definition += "; ";
      definition += part;
    }
  }
}

struct Synset {
  WordNetEntry entry;
  std::string gloss;  ///< as stored: definition and quoted examples
  const char* pos_word;
};

void read_synsets(const std::string& root, const PosFile& pos, const Source& source, std::vector<Synset>& out) {
  const std::string index_path = root + "/index." + pos.suffix;
  const std::string data_path = root + "/data." + pos.suffix;
  const std::string index_text = read_whole(index_path, install_hint(source));
  const SenseIndex senses = read_sense_index(index_path, index_text);
  const std::string data = read_whole(data_path, install_hint(source));
  for_each_line(data, [&](std::string_view line, int64_t number) {
    if (line.starts_with("  ") || is_blank(line)) return;  // the license header
    const auto fail = [&](const std::string& what) { return input_error(data_path, "", at_line(number) + what); };
    const size_t bar = line.find('|');
    if (bar == std::string_view::npos) throw fail("no '|' before the gloss");
    const std::vector<std::string_view> fields = split(line.substr(0, bar), ' ');
    if (fields.size() < 6) throw fail("expected 'synset_offset lex_filenum ss_type w_cnt word lex_id ... p_cnt'");
    const auto offset = parse_number<uint64_t>(fields[0]);
    if (!offset) throw fail("synset offset '" + std::string(fields[0]) + "'");
    if (fields[2].size() != 1 || pos.ss_types.find(fields[2][0]) == std::string_view::npos) {
      throw fail("ss_type '" + std::string(fields[2]) + "' does not belong in data." + pos.suffix);
    }
    const char ss_type = fields[2][0];
    const auto word_count = parse_number<uint64_t>(fields[3], 16);
    if (!word_count || *word_count == 0 || fields.size() < 5 + 2 * *word_count) {
      throw fail("w_cnt '" + std::string(fields[3]) + "' (hexadecimal) does not match the words that follow");
    }
    const auto pointer_count = parse_number<uint64_t>(fields[4 + 2 * *word_count]);
    if (!pointer_count || fields.size() < 5 + 2 * *word_count + 4 * *pointer_count) {
      throw fail("p_cnt does not match the pointers that follow");
    }

    Synset synset;
    synset.pos_word = pos.word;
    synset.gloss = std::string(trim(line.substr(bar + 1)));
    synset.entry.pos = ss_type == 's' ? 'a' : ss_type;
    std::string first_lemma;
    for (uint64_t w = 0; w < *word_count; ++w) {
      std::string_view word = fields[4 + 2 * w];
      const size_t marker = word.find('(');  // adjective markers: "galore(ip)"
      if (marker != std::string_view::npos && marker > 0 && word.back() == ')') word = word.substr(0, marker);
      std::string lemma(word);
      if (w == 0) first_lemma = lemma;
      std::replace(lemma.begin(), lemma.end(), '_', ' ');
      synset.entry.lemmas.push_back(std::move(lemma));
    }
    std::transform(first_lemma.begin(), first_lemma.end(), first_lemma.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const auto sense = senses.find(first_lemma);
    const auto position = sense == senses.end()
                              ? -1
                              : std::find(sense->second.begin(), sense->second.end(), *offset) - sense->second.begin();
    if (position < 0 || position == static_cast<std::ptrdiff_t>(sense->second.size())) {
      throw fail("lemma '" + first_lemma + "' is not listed with synset " + std::string(fields[0]) + " in index." +
                 pos.suffix);
    }
    char number_text[16];
    std::snprintf(number_text, sizeof number_text, "%02d", static_cast<int>(position + 1));
    synset.entry.name = first_lemma + "." + ss_type + "." + number_text;
    split_gloss(synset.gloss, synset.entry.gloss, synset.entry.examples);
    synset.entry.offset = *offset;
    const size_t pointers = 5 + 2 * *word_count;  // symbol offset pos source/target, p_cnt times
    for (uint64_t p = 0; p < *pointer_count; ++p) {
      const std::string_view symbol = fields[pointers + 4 * p];
      if (symbol != "@" && symbol != "@i") continue;
      const auto target = parse_number<uint64_t>(fields[pointers + 4 * p + 1]);
      if (!target) throw fail("pointer offset '" + std::string(fields[pointers + 4 * p + 1]) + "'");
      const std::string_view target_pos = fields[pointers + 4 * p + 2];
      if (target_pos.size() == 1 && pos.ss_types.find(target_pos[0]) != std::string_view::npos)
        synset.entry.hypernyms.push_back(*target);
    }
    out.push_back(std::move(synset));
  });
}

std::vector<Synset> read_wordnet(const std::string& root) {
  const Source& source = source_named("wordnet");
  require_folder(root, source);
  std::vector<Synset> synsets;
  for (const PosFile& pos : kPosFiles) read_synsets(root, pos, source, synsets);
  return synsets;
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (const std::string& part : parts) {
    if (!out.empty()) out += separator;
    out += part;
  }
  return out;
}

// ---- GCIDE -------------------------------------------------------------------------

/// gzread over the whole dictzip (a gzip file with random-access chunks).
std::string inflate_whole(const std::string& path, const Source& source) {
  const std::unique_ptr<gzFile_s, int (*)(gzFile)> file(gzopen(path.c_str(), "rb"), gzclose);
  if (!file) throw io_error(path, "cannot open for reading (" + install_hint(source) + ")");
  gzbuffer(file.get(), 1 << 18);
  std::string out;
  constexpr size_t kChunk = size_t{1} << 22;
  for (;;) {
    const size_t used = out.size();
    out.resize(used + kChunk);
    const int got = gzread(file.get(), out.data() + used, static_cast<unsigned>(kChunk));
    out.resize(used + static_cast<size_t>(std::max(got, 0)));
    int status = Z_OK;
    const char* message = gzerror(file.get(), &status);
    if (got < 0 || (status != Z_OK && status != Z_STREAM_END)) {
      throw status == Z_ERRNO ? io_error(path, "read failed")
                              : input_error(path, "", std::string("not a readable gzip/dictzip file: ") + message);
    }
    if (got == 0) return out;
  }
}

/// dictd's base64 numbers: big-endian digits of "A-Za-z0-9+/".
std::optional<uint64_t> decode_base64(std::string_view digits) {
  if (digits.empty() || digits.size() > 10) return std::nullopt;  // 60 bits at most
  uint64_t value = 0;
  for (const char c : digits) {
    int digit = -1;
    if (c >= 'A' && c <= 'Z') digit = c - 'A';
    if (c >= 'a' && c <= 'z') digit = c - 'a' + 26;
    if (c >= '0' && c <= '9') digit = c - '0' + 52;
    if (c == '+') digit = 62;
    if (c == '/') digit = 63;
    if (digit < 0) return std::nullopt;
    value = value * 64 + static_cast<uint64_t>(digit);
  }
  return value;
}

/// dictd's own entries (database name, info, URL), not dictionary text.
bool is_dictd_metadata(std::string_view headword) {
  return headword.starts_with("00-database") || headword.starts_with("00database");
}

std::vector<Document> read_gcide(const std::string& root, const Source& source) {
  require_folder(root, source);
  const std::string index_path = root + "/gcide.index";
  const std::string index = read_whole(index_path, install_hint(source));
  const std::string data = inflate_whole(root + "/gcide.dict.dz", source);

  struct Entry {
    uint64_t offset, length;
    std::string headword;
    bool text_starts_with_headword;
  };
  std::vector<Entry> entries;
  std::map<std::pair<uint64_t, uint64_t>, size_t> entry_of_range;
  std::set<std::pair<uint64_t, uint64_t>> metadata_ranges;
  for_each_line(index, [&](std::string_view line, int64_t number) {
    if (line.empty()) return;
    const std::vector<std::string_view> fields = split(line, '\t');
    const auto offset = fields.size() == 3 ? decode_base64(fields[1]) : std::nullopt;
    const auto length = fields.size() == 3 ? decode_base64(fields[2]) : std::nullopt;
    if (!offset || !length) {
      throw input_error(index_path, "", at_line(number) + "expected 'headword<TAB>offset<TAB>length' in base64");
    }
    if (*offset > data.size() || *length > data.size() - *offset) {
      throw input_error(index_path, "",
                        at_line(number) + "entry '" + std::string(fields[0]) +
                            "' ends past the inflated gcide.dict.dz (" + std::to_string(data.size()) + " bytes)");
    }
    const std::pair range(*offset, *length);
    if (is_dictd_metadata(fields[0])) {
      metadata_ranges.insert(range);
      return;
    }
    const bool starts = std::string_view(data).substr(*offset, *length).starts_with(fields[0]);
    const auto [known, added] = entry_of_range.emplace(range, entries.size());
    if (added) {
      entries.push_back({*offset, *length, std::string(fields[0]), starts});
    } else if (starts && !entries[known->second].text_starts_with_headword) {
      entries[known->second].headword = fields[0];
      entries[known->second].text_starts_with_headword = true;
    }
  });

  std::vector<Document> documents;
  std::unordered_map<std::string, int64_t> uses;
  for (const Entry& entry : entries) {
    if (metadata_ranges.contains({entry.offset, entry.length})) continue;
    const std::string_view text = trim(std::string_view(data).substr(entry.offset, entry.length), "\n");
    if (is_blank(text)) continue;
    std::string name = "gcide:" + entry.headword;
    if (const int64_t use = ++uses[entry.headword]; use > 1) name += ":" + std::to_string(use);
    documents.push_back({std::move(name), std::string(text)});
  }
  return documents;
}

}  // namespace

std::string debian_text_root(std::string_view source) {
  return std::string(source_named(source).root);
}

std::string debian_text_package(std::string_view source) {
  return std::string(source_named(source).package);
}

std::vector<Document> debian_text(std::string_view source_name, const std::string& root) {
  const Source& source = source_named(source_name);
  const std::string folder = root.empty() ? std::string(source.root) : root;
  if (source.name == "fortunes") return read_fortunes(folder, source);
  if (source.name == "gcide") return read_gcide(folder, source);
  std::vector<Document> documents;
  for (Synset& synset : read_wordnet(folder)) {
    documents.push_back({"wordnet:" + synset.entry.name,
                         join(synset.entry.lemmas, ", ") + " (" + synset.pos_word + "): " + synset.gloss});
  }
  return documents;
}

std::vector<WordNetEntry> wordnet_entries(const std::string& root) {
  std::vector<WordNetEntry> entries;
  for (Synset& synset : read_wordnet(root.empty() ? debian_text_root("wordnet") : root)) {
    entries.push_back(std::move(synset.entry));
  }
  return entries;
}

std::vector<Document> text_file(const std::string& path, bool paragraphs) {
  const std::string text = path == "-" ? read_stream(std::cin, path) : read_whole(path);
  std::vector<Document> documents;
  const auto add = [&](std::string_view body) {
    body = trim(body, "\n");
    if (!is_blank(body)) documents.push_back({path + ":" + std::to_string(documents.size()), std::string(body)});
  };
  if (!paragraphs) {
    add(text);
    return documents;
  }
  size_t begin = 0;
  for_each_line(text, [&](std::string_view line, int64_t) {
    const size_t line_begin = static_cast<size_t>(line.data() - text.data());
    if (is_blank(line)) {
      add(std::string_view(text).substr(begin, line_begin - begin));
      begin = line_begin + line.size() + 1;
    }
  });
  if (begin < text.size()) add(std::string_view(text).substr(begin));
  return documents;
}

}  // namespace nk::lm
