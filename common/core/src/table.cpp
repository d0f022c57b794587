// table.cpp - aligned or tab-separated tables.
#include "nk/table.hpp"

#include <unistd.h>

#include <algorithm>

namespace nk {

namespace {

std::string tsv_safe(const std::string& text) {
  std::string out = text;
  std::replace_if(out.begin(), out.end(), [](char c) { return c == '\t' || c == '\n' || c == '\r'; }, ' ');
  return out;
}

}  // namespace

Table::Table(FILE* to, std::vector<std::string> header, std::vector<int> widths, Layout layout)
    : to_(to), header_(std::move(header)), widths_(std::move(widths)),
      aligned_(layout == Layout::aligned || (layout == Layout::automatic && isatty(fileno(to)))) {
  widths_.resize(header_.size(), 0);
  left_.assign(header_.size(), false);
  if (!left_.empty()) left_[0] = true;
  for (size_t c = 0; c < header_.size(); ++c) widths_[c] = std::max(widths_[c], static_cast<int>(header_[c].size()));
}

Table& Table::left(std::vector<size_t> columns) {
  for (size_t c : columns)
    if (c < left_.size()) left_[c] = true;
  return *this;
}

void Table::line(const std::vector<std::string>& cells) {
  std::string out;
  for (size_t c = 0; c < cells.size(); ++c) {
    if (c) out.append(aligned_ ? "  " : "\t");
    if (!aligned_) {
      out.append(tsv_safe(cells[c]));
      continue;
    }
    const int width = c < widths_.size() ? widths_[c] : 0;
    const size_t pad = static_cast<size_t>(std::max(0, width - static_cast<int>(cells[c].size())));
    if (c < left_.size() && left_[c]) {
      out.append(cells[c]);
      if (c + 1 < cells.size()) out.append(pad, ' ');
    } else {
      out.append(pad, ' ');
      out.append(cells[c]);
    }
  }
  out.push_back('\n');
  std::fputs(out.c_str(), to_);
}

void Table::header() {
  if (header_done_) return;
  header_done_ = true;
  line(header_);
}

void Table::row(const std::vector<std::string>& cells) {
  header();
  line(cells);
}

void Table::print(FILE* to, const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                  Layout layout, std::vector<size_t> left) {
  std::vector<int> widths(header.size(), 0);
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size() && c < widths.size(); ++c) widths[c] = std::max(widths[c], static_cast<int>(r[c].size()));
  Table table(to, header, widths, layout);
  table.left(std::move(left)).header();
  for (const auto& r : rows) table.line(r);
  std::fflush(to);
}

std::string cell(double value, const char* format) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

std::string cell(long long value) { return std::to_string(value); }

}  // namespace nk
