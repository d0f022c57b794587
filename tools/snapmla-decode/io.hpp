// io.hpp - reading and checking snapmla-decode's files: the float cache
// (/ckv, /kpe, /q, /lengths, as gen writes it or a capture from a model) and
// the paged cache quant writes (/kv_pages, /block_table, /lengths).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nk/h5.hpp"
#include "snapmla-decode/format.hpp"
#include "snapmla-decode/kernel.hpp"

namespace snapmla {

/// A float cache: ckv [B, N, dc], kpe [B, N, dr], lengths [B] (1..N).
struct Cache {
  int64_t batch = 0, tokens = 0, dc = 0, dr = 0;
  std::vector<float> ckv, kpe;
  std::vector<int32_t> lengths;
};
/// Reads and checks /ckv, /kpe, /lengths (finite values, agreeing shapes,
/// lengths within 1..N); exit 3 naming the file and dataset.
Cache read_cache(const nk::h5::File& file);

/// Queries: q [B, H, dc + dr] and the softmax scale (the root attribute
/// softmax_scale, or 'override' when > 0).
struct Queries {
  int64_t batch = 0, heads = 0, dim = 0;
  std::vector<float> q;
  double softmax_scale = 0;
};
Queries read_queries(const nk::h5::File& file, double override_scale);

/// A paged cache and its layout.
struct Paged {
  Layout layout = Layout::bf16;
  int64_t dc = 0, dr = 0, row_bytes = 0, page_count = 0, max_pages = 0, batch = 0;
  std::vector<uint8_t> pages;
  std::vector<int32_t> block_table, lengths;
  PagedView view() const;
};
/// Reads /kv_pages, /block_table, /lengths and the layout attributes and
/// checks them: row_bytes the layout's, every page a row needs present and
/// inside /kv_pages, no NaN/Inf value or NaN code in a row attention reads,
/// scales finite and positive; exit 3 naming the file, dataset and index.
Paged read_paged(const nk::h5::File& file);

/// Pages of a float cache in 'layout': row b's page p is page p * B + b
/// among the rows that have a page p (appending to every row a token at a
/// time fills pages in this order), so the block table is not the identity.
Paged paginate(const Cache& cache, Layout layout);
void write_paged(const Paged& paged, const std::string& path, bool no_clobber);

}  // namespace snapmla
