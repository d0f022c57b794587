// index_io.hpp - keys and queries in, the index to and from HDF5.
#pragma once
#include <cstdint>
#include <vector>

#include "nk/kernels/louver_codes.hpp"
#include "nk/h5.hpp"

namespace louver {

// The index, its search and Quest live in nk::kernels (nk/kernels/louver_*.hpp),
// shared with nk-lm's decoding through the index; the verbs use them unqualified.
using namespace nk::louver;

struct Index {
  IndexParams params;
  Subspaces subspaces;
  int64_t dims = 0, value_dims = 0;
  std::vector<HeadIndex> heads;
  int64_t keys_per_head() const { return heads.empty() ? 0 : heads[0].size(dims); }
};

/// Vectors of several heads: /keys [N,d] or [H,N,d], /queries [M,d] or [H,M,d].
struct Vectors {
  int64_t heads = 0, count = 0, dims = 0;
  std::vector<float> data;  ///< [heads, count, dims]
  const float* row(int64_t head, int64_t i) const { return data.data() + (head * count + i) * dims; }
};

/// Reads 'dataset' as [H,N,d] (a rank-2 [N,d] is one head); refuses NaN/Inf,
/// N = 0 and d = 0 with exit 3 naming the file and dataset.
Vectors read_vectors(const nk::h5::File& file, const std::string& dataset);

void write_index(nk::h5::Writer& out, const Index& index);
/// Reads an index written by write_index, checking every range (exit 3 if corrupt).
Index read_index(const nk::h5::File& file);

}  // namespace louver
