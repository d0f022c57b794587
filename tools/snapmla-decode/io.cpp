// io.cpp - snapmla-decode's files (io.hpp).
#include "snapmla-decode/io.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>

#include <sys/mman.h>

#include "nk/error.hpp"
#include "nk/kernels/lowp.hpp"
#include "snapmla-decode/snapmla.hpp"

namespace snapmla {

namespace {

/// Room for n bytes in v, its 2 MiB-aligned interior marked for transparent
/// huge pages (a decode streams the whole cache: 4 KiB pages would cost a TLB
/// miss every 4 KiB), then n zero bytes. Where the kernel declines, nothing changes.
void assign_huge(std::vector<uint8_t>& v, size_t n) {
  v.clear();
  v.shrink_to_fit();
  v.reserve(n);
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(v.data()) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(v.data()) + n) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
  v.assign(n, 0);
}

}  // namespace

namespace {

std::string num(int64_t v) { return std::to_string(v); }

void check_schema(const nk::h5::File& file, const char* schema) {
  if (file.attr_string("/", "nk_schema")) file.require_schema(schema);
}

/// Shape of a float dataset of the given rank, its memory checked.
std::vector<int64_t> float_shape(const nk::h5::File& file, const std::string& dataset, int rank, const std::string& axes) {
  const nk::h5::DatasetInfo info = file.info(dataset);
  if (static_cast<int>(info.shape.size()) != rank)
    throw nk::input_error(file.path(), dataset, "expected rank " + num(rank) + " [" + axes + "], found " + nk::h5::shape_text(info.shape));
  if (!nk::h5::is_float(info.dtype)) throw nk::input_error(file.path(), dataset, "expected float32 or float64, found " + info.type_text);
  for (int64_t d : info.shape)
    if (d < 1) throw nk::input_error(file.path(), dataset, "is empty: shape " + nk::h5::shape_text(info.shape));
  if (static_cast<double>(info.elements()) * 8.0 > nk::h5::available_memory_bytes())
    throw nk::input_error(file.path(), dataset, nk::h5::shape_text(info.shape) + " is more than the memory available");
  return info.shape;
}

std::vector<float> read_finite(const nk::h5::File& file, const std::string& dataset) {
  nk::h5::Array<float> a = file.read<float>(dataset);
  nk::h5::require_finite(file.path(), dataset, a);
  return std::move(a.data);
}

std::vector<int32_t> read_lengths(const nk::h5::File& file, int64_t batch, int64_t max_length) {
  const nk::h5::DatasetInfo info = file.info("/lengths");
  if (info.shape.size() != 1 || info.shape[0] != batch)
    throw nk::input_error(file.path(), "/lengths", "expected [B] = [" + num(batch) + "], found " + nk::h5::shape_text(info.shape));
  if (!nk::h5::is_integer(info.dtype)) throw nk::input_error(file.path(), "/lengths", "expected integers, found " + info.type_text);
  const nk::h5::Array<int64_t> raw = file.read<int64_t>("/lengths");
  std::vector<int32_t> out(raw.data.size());
  for (size_t b = 0; b < raw.data.size(); ++b) {
    if (raw.data[b] < 1 || raw.data[b] > max_length)
      throw nk::input_error(file.path(), "/lengths", "length " + num(raw.data[b]) + " at index [" + num(static_cast<int64_t>(b)) +
                                                         "] is outside 1.." + num(max_length));
    out[b] = static_cast<int32_t>(raw.data[b]);
  }
  return out;
}

}  // namespace

Cache read_cache(const nk::h5::File& file) {
  check_schema(file, kCacheSchema);
  Cache c;
  const std::vector<int64_t> ks = float_shape(file, "/ckv", 3, "B,N,d_c");
  const std::vector<int64_t> rs = float_shape(file, "/kpe", 3, "B,N,d_R");
  if (rs[0] != ks[0] || rs[1] != ks[1])
    throw nk::input_error(file.path(), "/kpe", "shape " + nk::h5::shape_text(rs) + " disagrees with /ckv " + nk::h5::shape_text(ks) +
                                                   " in B or N");
  c.batch = ks[0];
  c.tokens = ks[1];
  c.dc = ks[2];
  c.dr = rs[2];
  c.lengths = read_lengths(file, c.batch, c.tokens);
  c.ckv = read_finite(file, "/ckv");
  c.kpe = read_finite(file, "/kpe");
  return c;
}

Queries read_queries(const nk::h5::File& file, double override_scale) {
  Queries q;
  const std::vector<int64_t> s = float_shape(file, "/q", 3, "B,H,d_c+d_R");
  q.batch = s[0];
  q.heads = s[1];
  q.dim = s[2];
  if (q.heads > 4096) throw nk::input_error(file.path(), "/q", num(q.heads) + " heads; at most 4096");
  q.q = read_finite(file, "/q");
  if (override_scale > 0) {
    q.softmax_scale = override_scale;
  } else {
    const std::optional<double> a = file.attr_number("/", "softmax_scale");
    if (!a) throw nk::input_error(file.path(), "/", "no softmax_scale attribute (give --softmax-scale)");
    if (!std::isfinite(*a) || *a <= 0) throw nk::input_error(file.path(), "/", "softmax_scale " + std::to_string(*a) + " is not a positive number");
    q.softmax_scale = *a;
  }
  return q;
}

PagedView Paged::view() const {
  PagedView v;
  v.layout = layout;
  v.dc = dc;
  v.dr = dr;
  v.row_bytes = row_bytes;
  v.pages = pages.data();
  v.page_count = page_count;
  v.block_table = block_table.data();
  v.max_pages = max_pages;
  v.lengths = lengths.data();
  v.batch = batch;
  return v;
}

namespace {

/// The first bad value of a row, or an empty string.
std::string bad_value(Layout layout, const uint8_t* row, int64_t dc, int64_t dr) {
  auto bf16_bad = [&](int64_t at, int64_t n) -> int64_t {
    for (int64_t i = 0; i < n; ++i)
      if ((row[at + 2 * i + 1] & 0x7f) == 0x7f && (row[at + 2 * i] & 0x80)) return i;  // exponent all ones
    return -1;
  };
  auto codes_bad = [&](int64_t at, int64_t n) -> int64_t {
    for (int64_t i = 0; i < n; ++i)
      if ((row[at + i] & 0x7f) == 0x7f) return i;
    return -1;
  };
  auto scale_bad = [&](int64_t at) {
    float s;
    std::memcpy(&s, row + at, 4);
    return !(std::isfinite(s) && s > 0);
  };
  int64_t i = -1;
  switch (layout) {
    case Layout::bf16:
      if ((i = bf16_bad(0, dc + dr)) >= 0) return "a NaN or Inf BF16 value at element " + num(i);
      break;
    case Layout::flashmla656:
      if ((i = codes_bad(0, dc)) >= 0) return "a NaN E4M3 code at element " + num(i);
      for (int64_t t = 0; t < dc / kFlashTile; ++t)
        if (scale_bad(dc + 4 * t)) return "tile scale " + num(t) + " is not a positive finite number";
      if ((i = bf16_bad(dc + 4 * (dc / kFlashTile), dr)) >= 0) return "a NaN or Inf BF16 k_R value at element " + num(i);
      break;
    case Layout::snapmla644:
      if ((i = codes_bad(0, dc)) >= 0) return "a NaN E4M3 code at element " + num(i);
      if (scale_bad(dc)) return "the token scale is not a positive finite number";
      if ((i = bf16_bad(dc + 4, dr)) >= 0) return "a NaN or Inf BF16 k_R value at element " + num(i);
      break;
    case Layout::fp8_naive:
      if ((i = codes_bad(0, dc + dr)) >= 0) return "a NaN E4M3 code at element " + num(i);
      if (scale_bad(dc + dr)) return "the token scale is not a positive finite number";
      break;
  }
  return "";
}

}  // namespace

Paged read_paged(const nk::h5::File& file) {
  check_schema(file, kKvSchema);
  Paged p;
  const std::optional<std::string> name = file.attr_string("/", "layout");
  if (!name) throw nk::input_error(file.path(), "/", "no layout attribute (not a file of snapmla-decode quant)");
  bool known = false;
  for (Layout l : all_layouts())
    if (*name == layout_name(l)) p.layout = l, known = true;
  if (!known) throw nk::input_error(file.path(), "/", "unknown layout '" + *name + "'");
  const std::optional<double> dc = file.attr_number("/", "d_c"), dr = file.attr_number("/", "d_r");
  if (!dc || !dr || !(*dc >= 1 && *dc <= 65536) || !(*dr >= 1 && *dr <= 65536) || *dc != std::floor(*dc) || *dr != std::floor(*dr))
    throw nk::input_error(file.path(), "/", "attributes d_c and d_r must be integers in 1..65536");
  p.dc = static_cast<int64_t>(*dc);
  p.dr = static_cast<int64_t>(*dr);
  if (p.layout == Layout::flashmla656 && p.dc % kFlashTile != 0)
    throw nk::input_error(file.path(), "/", "flashmla656 needs d_c a multiple of 128, found " + num(p.dc));
  p.row_bytes = row_bytes(p.layout, p.dc, p.dr);
  const std::optional<double> rb = file.attr_number("/", "row_bytes");
  if (!rb || *rb != static_cast<double>(p.row_bytes))
    throw nk::input_error(file.path(), "/", "row_bytes " + (rb ? std::to_string(static_cast<long long>(*rb)) : std::string("missing")) +
                                                " is not " + name->c_str() + "'s " + num(p.row_bytes) + " at d_c " + num(p.dc) +
                                                ", d_R " + num(p.dr));
  const nk::h5::DatasetInfo pi = file.info("/kv_pages");
  if (pi.shape.size() != 3 || pi.shape[1] != kPageTokens || pi.shape[2] != p.row_bytes || pi.shape[0] < 1)
    throw nk::input_error(file.path(), "/kv_pages", "expected [P,64," + num(p.row_bytes) + "], found " + nk::h5::shape_text(pi.shape));
  if (pi.dtype != nk::h5::DType::u8) throw nk::input_error(file.path(), "/kv_pages", "expected uint8, found " + pi.type_text);
  if (static_cast<double>(pi.elements()) * 1.5 > nk::h5::available_memory_bytes())
    throw nk::input_error(file.path(), "/kv_pages", nk::h5::shape_text(pi.shape) + " is more than the memory available");
  p.page_count = pi.shape[0];
  const nk::h5::DatasetInfo bi = file.info("/block_table");
  if (bi.shape.size() != 2 || bi.shape[0] < 1 || bi.shape[1] < 1)
    throw nk::input_error(file.path(), "/block_table", "expected [B,max_pages], found " + nk::h5::shape_text(bi.shape));
  if (!nk::h5::is_integer(bi.dtype)) throw nk::input_error(file.path(), "/block_table", "expected integers, found " + bi.type_text);
  p.batch = bi.shape[0];
  p.max_pages = bi.shape[1];
  p.lengths = read_lengths(file, p.batch, p.max_pages * kPageTokens);
  const nk::h5::Array<int64_t> table = file.read<int64_t>("/block_table");
  p.block_table.resize(table.data.size());
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t needed = (p.lengths[static_cast<size_t>(b)] + kPageTokens - 1) / kPageTokens;
    for (int64_t j = 0; j < p.max_pages; ++j) {
      const int64_t v = table.data[static_cast<size_t>(b * p.max_pages + j)];
      const bool ok = j < needed ? (v >= 0 && v < p.page_count) : (v >= -1 && v < p.page_count);
      if (!ok)
        throw nk::input_error(file.path(), "/block_table", "entry [" + num(b) + "," + num(j) + "] = " + num(v) + " is not a page of /kv_pages (0.." +
                                                               num(p.page_count - 1) + ")" + (j < needed ? " though row " + num(b) + " needs it" : ""));
      p.block_table[static_cast<size_t>(b * p.max_pages + j)] = static_cast<int32_t>(v);
    }
  }
  const nk::h5::Array<uint8_t> pages = file.read<uint8_t>("/kv_pages");
  assign_huge(p.pages, pages.data.size());
  std::memcpy(p.pages.data(), pages.data.data(), pages.data.size());
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t length = p.lengths[static_cast<size_t>(b)];
    for (int64_t t = 0; t < length; ++t) {
      const int64_t page = p.block_table[static_cast<size_t>(b * p.max_pages + t / kPageTokens)];
      const uint8_t* row = p.pages.data() + (page * kPageTokens + t % kPageTokens) * p.row_bytes;
      const std::string bad = bad_value(p.layout, row, p.dc, p.dr);
      if (!bad.empty())
        throw nk::input_error(file.path(), "/kv_pages", "page " + num(page) + ", row " + num(t % kPageTokens) + " (token " + num(t) +
                                                            " of batch row " + num(b) + "): " + bad);
    }
  }
  return p;
}

Paged paginate(const Cache& cache, Layout layout) {
  if (layout == Layout::flashmla656 && cache.dc % kFlashTile != 0)
    throw nk::usage_error("flashmla656 needs d_c a multiple of 128; the cache has d_c " + num(cache.dc));
  Paged p;
  p.layout = layout;
  p.dc = cache.dc;
  p.dr = cache.dr;
  p.row_bytes = row_bytes(layout, cache.dc, cache.dr);
  p.batch = cache.batch;
  p.lengths = cache.lengths;
  std::vector<int64_t> pages_of(static_cast<size_t>(cache.batch));
  for (int64_t b = 0; b < cache.batch; ++b) {
    pages_of[static_cast<size_t>(b)] = (cache.lengths[static_cast<size_t>(b)] + kPageTokens - 1) / kPageTokens;
    p.max_pages = std::max(p.max_pages, pages_of[static_cast<size_t>(b)]);
  }
  p.block_table.assign(static_cast<size_t>(p.batch * p.max_pages), -1);
  for (int64_t j = 0; j < p.max_pages; ++j)
    for (int64_t b = 0; b < p.batch; ++b)
      if (j < pages_of[static_cast<size_t>(b)]) p.block_table[static_cast<size_t>(b * p.max_pages + j)] = static_cast<int32_t>(p.page_count++);
  assign_huge(p.pages, static_cast<size_t>(p.page_count * kPageTokens * p.row_bytes));
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t t = 0; t < cache.lengths[static_cast<size_t>(b)]; ++t) {
      const int64_t page = p.block_table[static_cast<size_t>(b * p.max_pages + t / kPageTokens)];
      encode_row(layout, cache.ckv.data() + (b * cache.tokens + t) * cache.dc, cache.kpe.data() + (b * cache.tokens + t) * cache.dr,
                 cache.dc, cache.dr, p.pages.data() + (page * kPageTokens + t % kPageTokens) * p.row_bytes);
    }
  return p;
}

void write_paged(const Paged& p, const std::string& path, bool no_clobber) {
  nk::h5::Writer out(path, kKvSchema, no_clobber);
  out.write("/kv_pages", p.pages.data(), {p.page_count, kPageTokens, p.row_bytes}, "P,64,row_bytes");
  out.write("/block_table", p.block_table.data(), {p.batch, p.max_pages}, "B,max_pages");
  out.attr("/block_table", "unused", "-1");
  out.write("/lengths", p.lengths.data(), {p.batch}, "B");
  out.attr("/", "layout", layout_name(p.layout));
  out.attr("/", "row_bytes", p.row_bytes);
  out.attr("/", "d_c", p.dc);
  out.attr("/", "d_r", p.dr);
  out.attr("/", "page_tokens", kPageTokens);
  out.commit();
}

}  // namespace snapmla
