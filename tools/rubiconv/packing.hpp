// packing.hpp - documents packed into sequences: FlashAttention's cu_seqlens.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace rubiconv {

/// Positions [begin, end) of one document in its batch row.
struct Document {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t length() const { return end - begin; }
};

/// Where every document of every batch row starts and ends.
struct Packing {
  int64_t batch = 0;
  int64_t length = 0;                       ///< L, positions per row
  std::vector<std::vector<Document>> rows;  ///< rows[b] tiles [0, L)
  int64_t documents() const;
  int64_t longest() const;
};

/// Builds a Packing from cu_seqlens, either [D+1] shared by every row or
/// [B, D+1] padded with -1 after each row's last entry. Every row must start
/// at 0, never decrease and end at L; violations throw exit 3 naming 'file'
/// and /cu_seqlens with the offending index.
Packing packing_from_cu_seqlens(const std::vector<int64_t>& cu_seqlens, const std::vector<int64_t>& shape,
                                int64_t batch, int64_t length, const std::string& file);

/// One row's cu_seqlens [D+1] from its documents.
std::vector<int64_t> cu_seqlens_of(const std::vector<Document>& row);

}  // namespace rubiconv
