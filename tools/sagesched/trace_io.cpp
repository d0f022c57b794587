// trace_io.cpp - the trace file: reading with every check, and CSV import of
// a real trace (BurstGPT, Azure LLM inference, or columns of our own names).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <numeric>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "sagesched/trace_io.hpp"

namespace sage {

namespace {

constexpr int64_t kMaxLength = int64_t{1} << 24;  // tokens: far above any context window

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// One CSV record (RFC 4180 quoting; a quoted field may hold commas, quotes as "").
bool csv_record(std::istream& in, std::vector<std::string>& cells) {
  cells.clear();
  std::string line;
  if (!std::getline(in, line)) return false;
  std::string cell;
  bool quoted = false;
  for (size_t i = 0;; ++i) {
    if (i == line.size()) {
      if (quoted) {  // a newline inside quotes: the record goes on
        std::string next;
        if (!std::getline(in, next)) break;
        cell += '\n';
        line = next;
        i = static_cast<size_t>(-1);
        continue;
      }
      break;
    }
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cell += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.push_back(cell);
      cell.clear();
    } else if (c != '\r') {
      cell += c;
    }
  }
  cells.push_back(cell);
  return true;
}

/// Seconds since 1970 of "YYYY-MM-DD HH:MM:SS[.frac]" (or with 'T'); NaN otherwise.
double parse_datetime(const std::string& s) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0;
  double sec = 0;
  char sep = 0;
  if (std::sscanf(s.c_str(), "%d-%d-%d%c%d:%d:%lf", &y, &mo, &d, &sep, &h, &mi, &sec) != 7) return NAN;
  if ((sep != ' ' && sep != 'T') || mo < 1 || mo > 12 || d < 1 || d > 31) return NAN;
  // days from civil (proleptic Gregorian)
  y -= mo <= 2;
  const int era = (y >= 0 ? y : y - 399) / 400;
  const int yoe = y - era * 400;
  const int doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const double days = static_cast<double>(era) * 146097.0 + doe - 719468.0;
  return days * 86400.0 + h * 3600.0 + mi * 60.0 + sec;
}

}  // namespace

void validate_trace(const std::string& path, const Trace& t) {
  const size_t n = t.arrival.size();
  if (n == 0) throw nk::input_error(path, "/requests/arrival", "holds no requests");
  auto same = [&](size_t m, const char* name) {
    if (m != n) {
      throw nk::input_error(path, name, "has " + std::to_string(m) + " entries, /requests/arrival has " + std::to_string(n));
    }
  };
  same(t.prompt_tokens.size(), "/requests/prompt_tokens");
  same(t.output_tokens.size(), "/requests/output_tokens");
  same(t.category.size(), "/requests/category");
  if (!t.prompt.empty()) same(t.prompt.size(), "/requests/prompt");
  for (size_t i = 0; i < n; ++i) {
    const std::string at = "index " + std::to_string(i);
    if (!std::isfinite(t.arrival[i])) throw nk::input_error(path, "/requests/arrival", at + " is not finite");
    if (t.arrival[i] < 0) throw nk::input_error(path, "/requests/arrival", at + " is negative");
    if (i > 0 && t.arrival[i] < t.arrival[i - 1]) {
      throw nk::input_error(path, "/requests/arrival", "not sorted at " + at + " (" + std::to_string(t.arrival[i]) + " < " +
                                                           std::to_string(t.arrival[i - 1]) + ")");
    }
    if (t.prompt_tokens[i] < 1 || t.prompt_tokens[i] > kMaxLength) {
      throw nk::input_error(path, "/requests/prompt_tokens",
                            at + " is " + std::to_string(t.prompt_tokens[i]) + " (expected 1 to 2^24)");
    }
    if (t.output_tokens[i] < 1 || t.output_tokens[i] > kMaxLength) {
      throw nk::input_error(path, "/requests/output_tokens",
                            at + " is " + std::to_string(t.output_tokens[i]) + " (expected 1 to 2^24)");
    }
    if (t.category[i] < 0) throw nk::input_error(path, "/requests/category", at + " is negative");
  }
}

Trace read_trace(const std::string& path) {
  const nk::h5::File in = nk::h5::File::open(path);
  if (in.attr_string("/", "nk_schema")) in.require_schema("sagesched.trace/");
  Trace t;
  in.require("/requests/arrival");
  t.arrival = in.read<double>("/requests/arrival", 1, "N").data;
  t.prompt_tokens = in.read<int64_t>("/requests/prompt_tokens", 1, "N").data;
  t.output_tokens = in.read<int64_t>("/requests/output_tokens", 1, "N").data;
  if (in.has("/requests/category")) {
    for (int64_t c : in.read<int64_t>("/requests/category", 1, "N").data) {
      if (c < 0 || c > 1000000) throw nk::input_error(path, "/requests/category", "entry " + std::to_string(c) + " is not in 0..10^6");
      t.category.push_back(static_cast<int32_t>(c));
    }
  } else {
    t.category.assign(t.arrival.size(), 0);
  }
  if (in.has("/requests/prompt")) t.prompt = in.read_strings("/requests/prompt");
  if (in.has("/categories/name")) t.category_names = in.read_strings("/categories/name");
  t.load = in.attr_number("/", "load").value_or(NAN);
  validate_trace(path, t);
  return t;
}

void write_trace(nk::h5::Writer& out, const Trace& t) {
  const auto n = static_cast<int64_t>(t.size());
  out.write("/requests/arrival", t.arrival.data(), {n}, "N", "s");
  out.write("/requests/prompt_tokens", t.prompt_tokens.data(), {n}, "N", "tokens");
  out.write("/requests/output_tokens", t.output_tokens.data(), {n}, "N", "tokens");
  out.write("/requests/category", t.category.data(), {n}, "N");
  if (!t.prompt.empty()) out.write_strings("/requests/prompt", t.prompt, "N");
  if (!t.category_names.empty()) out.write_strings("/categories/name", t.category_names, "C");
}

Trace trace_from_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw nk::io_error(path, "cannot be read");
  std::vector<std::string> header, cells;
  if (!csv_record(in, header)) throw nk::input_error(path, "", "empty CSV: expected a header line");
  auto column = [&](std::initializer_list<const char*> names) {
    for (size_t c = 0; c < header.size(); ++c) {
      std::string h = lower(header[c]);
      h.erase(0, h.find_first_not_of(" \t"));
      h.erase(h.find_last_not_of(" \t") + 1);
      for (const char* name : names) {
        if (h == name) return static_cast<int>(c);
      }
    }
    return -1;
  };
  const int ca = column({"arrival", "timestamp", "time"});
  const int cp = column({"prompt_tokens", "contexttokens", "request tokens", "input_tokens"});
  const int co = column({"output_tokens", "generatedtokens", "response tokens"});
  const int cc = column({"category"}), ct = column({"prompt"});
  if (ca < 0 || cp < 0 || co < 0) {
    throw nk::input_error(path, "", "header must name arrival (or TIMESTAMP, Timestamp), prompt_tokens (or ContextTokens, "
                                    "Request tokens) and output_tokens (or GeneratedTokens, Response tokens)");
  }
  struct Row {
    double arrival;
    int64_t prompt, output;
    int32_t category;
    std::string text;
  };
  std::vector<Row> rows;
  int64_t line = 1, failed = 0;
  while (csv_record(in, cells)) {
    ++line;
    if (cells.size() == 1 && cells[0].find_first_not_of(" \t") == std::string::npos) continue;
    auto cell = [&](int c, const char* what) -> const std::string& {
      if (c >= static_cast<int>(cells.size())) throw nk::input_error(path, "", "line " + std::to_string(line) + ": no " + what + " column");
      return cells[static_cast<size_t>(c)];
    };
    auto integer = [&](int c, const char* what) {
      const std::string& s = cell(c, what);
      try {
        size_t used = 0;
        const double v = std::stod(s, &used);
        if (used != s.size() || v != std::floor(v) || std::fabs(v) > 1e15) throw std::invalid_argument("");
        return static_cast<int64_t>(v);
      } catch (const std::exception&) {
        throw nk::input_error(path, "", "line " + std::to_string(line) + ": " + what + " '" + s + "' is not an integer");
      }
    };
    Row r;
    const std::string& when = cell(ca, "arrival");
    try {
      size_t used = 0;
      r.arrival = std::stod(when, &used);
      if (used != when.size()) r.arrival = parse_datetime(when);
    } catch (const std::exception&) {
      r.arrival = parse_datetime(when);
    }
    if (!std::isfinite(r.arrival)) {
      throw nk::input_error(path, "", "line " + std::to_string(line) + ": arrival '" + when +
                                          "' is neither seconds nor YYYY-MM-DD HH:MM:SS");
    }
    r.prompt = integer(cp, "prompt_tokens");
    r.output = integer(co, "output_tokens");
    r.category = cc >= 0 ? static_cast<int32_t>(integer(cc, "category")) : 0;
    if (ct >= 0) r.text = cell(ct, "prompt");
    if (r.output == 0) {  // BurstGPT's failed requests: nothing was served
      ++failed;
      continue;
    }
    if (r.output < 0 || r.prompt < 1 || r.category < 0) {
      throw nk::input_error(path, "", "line " + std::to_string(line) + ": negative or zero lengths, or a negative category");
    }
    rows.push_back(std::move(r));
  }
  if (failed > 0) spdlog::info("{}: skipped {} row(s) with 0 output tokens (failed requests)", path, failed);
  if (rows.empty()) throw nk::input_error(path, "", "no requests with output tokens");
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.arrival < b.arrival; });
  Trace t;
  const double origin = rows.front().arrival;
  for (Row& r : rows) {
    t.arrival.push_back(r.arrival - origin);
    t.prompt_tokens.push_back(r.prompt);
    t.output_tokens.push_back(r.output);
    t.category.push_back(r.category);
    if (ct >= 0) t.prompt.push_back(std::move(r.text));
  }
  validate_trace(path, t);
  return t;
}

}  // namespace sage
