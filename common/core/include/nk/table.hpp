// table.hpp - the one way a verb prints a table on stdout or stderr: aligned
// columns on a terminal, tab-separated values (one header line) otherwise, so
// that `| cut -f2`, awk and spreadsheets read what a person reads.
#pragma once
#include <cstdio>
#include <string>
#include <vector>

namespace nk {

class Table {
 public:
  enum class Layout { automatic, aligned, tsv };
  /// 'widths' are the least widths of the columns when aligned (rows stream
  /// out as they come, before all cells are known); the header's own widths
  /// count too. automatic: aligned when 'to' is a terminal.
  Table(FILE* to, std::vector<std::string> header, std::vector<int> widths = {}, Layout layout = Layout::automatic);
  /// Aligned: these columns (text, not numbers) are left-aligned too.
  Table& left(std::vector<size_t> columns);
  /// Prints the header line (once, before the first row if not called).
  void header();
  /// Prints one row. Aligned: the first column left, the others right (numbers),
  /// two spaces apart; a cell wider than its column widens the line, not the
  /// column. TSV: tabs and newlines in cells become spaces.
  void row(const std::vector<std::string>& cells);
  bool aligned() const { return aligned_; }

  /// A whole table at once: the columns as wide as their widest cell.
  static void print(FILE* to, const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                    Layout layout = Layout::automatic, std::vector<size_t> left = {});

 private:
  void line(const std::vector<std::string>& cells);
  FILE* to_;
  std::vector<std::string> header_;
  std::vector<int> widths_;
  std::vector<bool> left_;
  bool aligned_;
  bool header_done_ = false;
};

/// printf-style formatting of one number for a cell ("%.4f", "%.3g", ...).
std::string cell(double value, const char* format);
std::string cell(long long value);

}  // namespace nk
