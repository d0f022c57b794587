// packing.cpp - cu_seqlens validation.
#include "rubiconv/packing.hpp"

#include <algorithm>

#include "nk/error.hpp"

namespace rubiconv {

int64_t Packing::documents() const {
  int64_t n = 0;
  for (const auto& row : rows) n += static_cast<int64_t>(row.size());
  return n;
}

int64_t Packing::longest() const {
  int64_t n = 0;
  for (const auto& row : rows)
    for (const Document& d : row) n = std::max(n, d.length());
  return n;
}

namespace {

std::vector<Document> parse_row(const int64_t* entries, int64_t count, int64_t length, const std::string& file,
                                const std::string& where) {
  const std::string dataset = "/cu_seqlens";
  int64_t used = count;
  while (used > 0 && entries[used - 1] == -1) --used;  // -1 padding of ragged rows
  if (used < 2) throw nk::input_error(file, dataset, where + "needs at least 2 entries (0 and L), found " + std::to_string(used));
  if (entries[0] != 0) throw nk::input_error(file, dataset, where + "must start at 0, found " + std::to_string(entries[0]));
  std::vector<Document> row;
  for (int64_t i = 1; i < used; ++i) {
    if (entries[i] < entries[i - 1]) {
      throw nk::input_error(file, dataset, where + "must not decrease (index " + std::to_string(i) + ": " +
                                               std::to_string(entries[i]) + " < " + std::to_string(entries[i - 1]) + ")");
    }
    if (entries[i] > entries[i - 1]) row.push_back({entries[i - 1], entries[i]});
  }
  if (entries[used - 1] != length) {
    throw nk::input_error(file, dataset, where + "must end at L = " + std::to_string(length) + ", found " +
                                             std::to_string(entries[used - 1]));
  }
  return row;
}

}  // namespace

Packing packing_from_cu_seqlens(const std::vector<int64_t>& cu_seqlens, const std::vector<int64_t>& shape,
                                int64_t batch, int64_t length, const std::string& file) {
  Packing packing;
  packing.batch = batch;
  packing.length = length;
  if (shape.size() == 1) {
    const auto row = parse_row(cu_seqlens.data(), shape[0], length, file, "");
    packing.rows.assign(static_cast<size_t>(batch), row);
  } else if (shape.size() == 2) {
    if (shape[0] != batch) {
      throw nk::input_error(file, "/cu_seqlens", "has " + std::to_string(shape[0]) + " rows but /x has B = " +
                                                     std::to_string(batch));
    }
    for (int64_t b = 0; b < batch; ++b) {
      packing.rows.push_back(
          parse_row(cu_seqlens.data() + b * shape[1], shape[1], length, file, "row " + std::to_string(b) + " "));
    }
  } else {
    throw nk::input_error(file, "/cu_seqlens", "expected [D+1] or [B,D+1], found rank " + std::to_string(shape.size()));
  }
  return packing;
}

std::vector<int64_t> cu_seqlens_of(const std::vector<Document>& row) {
  std::vector<int64_t> out{0};
  for (const Document& d : row) out.push_back(d.end);
  return out;
}

}  // namespace rubiconv
