// import_tables.cpp - IDX (MNIST / Fashion-MNIST) and CSV -> HDF5.
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk-data/nk_data.hpp"

namespace nk::data {

namespace {

/// Reads a whole file ('-': standard input), inflating it when gzip'd (zlib
/// passes raw files through); a gzip stream cut short is refused.
std::vector<unsigned char> read_maybe_gzip(const std::string& path) {
  gzFile file = nullptr;
  if (path == "-") {
    const int fd = ::dup(0);
    file = fd >= 0 ? gzdopen(fd, "rb") : nullptr;
  } else {
    if (::access(path.c_str(), R_OK) != 0) throw io_error(path, std::string("cannot open: ") + std::strerror(errno));
    file = gzopen(path.c_str(), "rb");
  }
  if (!file) throw io_error(path, "cannot open");
  std::vector<unsigned char> bytes;
  unsigned char chunk[1 << 16];
  for (;;) {
    const int got = gzread(file, chunk, sizeof chunk);
    if (got < 0) {
      int code = 0;
      const std::string reason = gzerror(file, &code);
      gzclose(file);
      throw input_error(path, "", "corrupt gzip stream (" + reason + ")");
    }
    if (got == 0) {
      int code = 0;
      const std::string reason = gzerror(file, &code);
      if (code != Z_OK) {
        gzclose(file);
        throw input_error(path, "", "corrupt or truncated gzip stream (" + reason + ")");
      }
      break;
    }
    bytes.insert(bytes.end(), chunk, chunk + got);
    if (bytes.size() > (size_t{1} << 34)) {
      gzclose(file);
      throw input_error(path, "", "more than 16 GiB after decompression");
    }
  }
  gzclose(file);
  return bytes;
}

struct Idx {
  std::vector<int64_t> dims;
  const unsigned char* data = nullptr;
  int64_t count() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
};

/// Parses the IDX header: 0x00 0x00 type rank, then rank big-endian uint32 sizes.
Idx parse_idx(const std::vector<unsigned char>& bytes, const std::string& path, int expected_rank) {
  if (bytes.size() < 4 || bytes[0] != 0 || bytes[1] != 0) {
    throw input_error(path, "", "not an IDX file (bad magic number)");
  }
  if (bytes[2] != 0x08) throw input_error(path, "", "IDX element type is not unsigned byte (0x08)");
  const int rank = bytes[3];
  if (rank != expected_rank) {
    throw input_error(path, "", "IDX rank is " + std::to_string(rank) + ", expected " + std::to_string(expected_rank));
  }
  if (bytes.size() < 4 + 4 * static_cast<size_t>(rank)) throw input_error(path, "", "IDX header is truncated");
  Idx idx;
  for (int axis = 0; axis < rank; ++axis) {
    const unsigned char* p = &bytes[4 + 4 * axis];
    idx.dims.push_back((int64_t{p[0]} << 24) | (int64_t{p[1]} << 16) | (int64_t{p[2]} << 8) | int64_t{p[3]});
  }
  for (int64_t d : idx.dims) {
    if (d == 0) throw input_error(path, "", "IDX dimensions hold a zero: no items to import");
  }
  const size_t header = 4 + 4 * static_cast<size_t>(rank);
  if (bytes.size() - header < static_cast<size_t>(idx.count())) {
    throw input_error(path, "", "IDX data is truncated: header promises " + std::to_string(idx.count()) +
                                    " bytes, file has " + std::to_string(bytes.size() - header));
  }
  if (bytes.size() - header > static_cast<size_t>(idx.count())) {
    throw input_error(path, "", "IDX file has " + std::to_string(bytes.size() - header - static_cast<size_t>(idx.count())) +
                                    " bytes after the " + std::to_string(idx.count()) + " its header promises (not an IDX file of these dimensions)");
  }
  idx.data = bytes.data() + header;
  return idx;
}

}  // namespace

void import_idx(const ImportIdxOptions& options) {
  if (options.images == "-" && options.labels == "-") {
    throw usage_error("import-idx: the images and the labels cannot both come from standard input");
  }
  const std::vector<unsigned char> image_bytes = read_maybe_gzip(options.images);
  const Idx images = parse_idx(image_bytes, options.images, 3);
  const int64_t total = images.dims[0], rows = images.dims[1], cols = images.dims[2];
  if (options.offset < 0 || options.offset > total) {
    throw usage_error("--offset " + std::to_string(options.offset) + " is outside the " + std::to_string(total) +
                      " images of '" + options.images + "'");
  }
  const int64_t count = options.limit < 0 ? total - options.offset : std::min<int64_t>(options.limit, total - options.offset);
  const int64_t pixels = rows * cols;
  std::vector<float> stack(static_cast<size_t>(count * pixels));
  for (int64_t i = 0; i < count * pixels; ++i) stack[static_cast<size_t>(i)] = images.data[options.offset * pixels + i] / 255.0f;

  std::vector<int64_t> labels;
  if (!options.labels.empty()) {
    const std::vector<unsigned char> label_bytes = read_maybe_gzip(options.labels);
    const Idx label_idx = parse_idx(label_bytes, options.labels, 1);
    if (label_idx.dims[0] != total) {
      throw input_error(options.labels, "", std::to_string(label_idx.dims[0]) + " labels for " +
                                                std::to_string(total) + " images in '" + options.images + "'");
    }
    labels.assign(label_idx.data + options.offset, label_idx.data + options.offset + count);
  }
  h5::Writer out(options.output, kImagesSchema, options.no_clobber);
  out.write("/images", stack.data(), {count, rows, cols, 1}, "N,H,W,C");
  out.attr("/images", "range", std::vector<double>{0.0, 1.0});
  out.attr("/images", "source", options.images);
  if (!labels.empty()) {
    out.write("/labels", labels.data(), {count}, "N");
    out.attr("/labels", "source", options.labels);
  }
  out.commit();
  spdlog::info("imported {} image(s) of {}x{}{}", count, rows, cols, labels.empty() ? "" : " with labels");
}

void import_csv(const ImportCsvOptions& options) {
  // A dataset path: '/'-separated names, none empty, '.' or '..'.
  const std::string& name = options.dataset;
  bool valid = name.size() > 1 && name[0] == '/' && name.back() != '/';
  for (size_t at = 1; valid && at < name.size();) {
    const size_t end = std::min(name.find('/', at), name.size());
    const std::string part = name.substr(at, end - at);
    valid = !part.empty() && part != "." && part != "..";
    at = end + 1;
  }
  if (!valid) throw usage_error("--dataset '" + name + "' is not a dataset path (/NAME or /GROUP/NAME)");
  std::ifstream file;
  if (options.input != "-") {
    file.open(options.input);
    if (!file) throw io_error(options.input, std::string("cannot open: ") + std::strerror(errno));
  }
  std::istream& in = options.input == "-" ? std::cin : file;
  std::vector<std::string> columns;
  std::vector<float> values;
  int64_t width = -1, rows = 0;
  std::string line;
  int64_t line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cells;
    std::stringstream split(line);
    std::string cell;
    while (std::getline(split, cell, options.delimiter)) cells.push_back(cell);
    if (!line.empty() && line.back() == options.delimiter) cells.emplace_back();
    std::vector<float> row;
    bool numeric = true;
    for (std::string& text : cells) {
      const size_t first = text.find_first_not_of(" \t"), last = text.find_last_not_of(" \t");
      text = first == std::string::npos ? "" : text.substr(first, last - first + 1);
      float value = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
        numeric = false;
        continue;
      }
      row.push_back(value);
    }
    if (!numeric) {
      if (rows == 0 && columns.empty()) {
        columns = cells;  // a header row of column names
        width = static_cast<int64_t>(cells.size());
        continue;
      }
      throw input_error(options.input, "", "line " + std::to_string(line_number) + " is not numeric");
    }
    if (width < 0) width = static_cast<int64_t>(row.size());
    if (static_cast<int64_t>(row.size()) != width) {
      throw input_error(options.input, "", "line " + std::to_string(line_number) + " has " +
                                               std::to_string(row.size()) + " columns, expected " + std::to_string(width));
    }
    for (size_t c = 0; c < row.size(); ++c) {
      if (!std::isfinite(row[c])) {
        throw input_error(options.input, "", "line " + std::to_string(line_number) + " column " +
                                                 std::to_string(c + 1) + " is not finite");
      }
    }
    values.insert(values.end(), row.begin(), row.end());
    ++rows;
  }
  if (rows == 0) throw input_error(options.input, "", "no numeric rows");
  h5::Writer out(options.output, kVectorsSchema, options.no_clobber);
  out.write(options.dataset, values.data(), {rows, width}, "N,D");
  if (!columns.empty()) {
    std::string joined;
    for (size_t c = 0; c < columns.size(); ++c) joined += (c ? "," : "") + columns[c];
    out.attr(options.dataset, "columns", joined);
  }
  out.commit();
  spdlog::info("imported {} row(s) of {} column(s)", rows, width);
}

}  // namespace nk::data
