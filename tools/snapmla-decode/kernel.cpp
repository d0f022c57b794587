// kernel.cpp - the paged decode driver (kernel.hpp) and the portable copy of
// the page step (kernel_page.inc).
#include "snapmla-decode/kernel.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>

#include "nk/error.hpp"
#include "nk/kernels/isa.hpp"
#include "nk/kernels/lowp.hpp"

namespace snapmla {
namespace detail {
#define NK_SNAPMLA_COPY generic_copy
#include "snapmla-decode/kernel_page.inc"
#undef NK_SNAPMLA_COPY

PageStep page_step_generic() { return &generic_copy::page_step; }
RoundScaled round_e4m3_scaled_generic() { return &generic_copy::round_e4m3_scaled; }
RoundScaled round_bf16_scaled_generic() { return &generic_copy::round_bf16_scaled; }

#ifndef NK_SNAPMLA_HAVE_AVX2_COPY
PageStep page_step_avx2() { return nullptr; }
float code_unit_avx2() { return 1.0f; }
RoundScaled round_e4m3_scaled_avx2() { return nullptr; }
RoundScaled round_bf16_scaled_avx2() { return nullptr; }
bool round_e4m3_avx2(const float*, float*, int64_t) { return false; }
bool decode_e4m3_avx2(const uint8_t*, float*, int64_t) { return false; }
#endif
#ifndef NK_SNAPMLA_HAVE_AVX512_COPY
PageStep page_step_avx512() { return nullptr; }
#endif

}  // namespace detail

namespace {

detail::PageStep chosen_step() {
  static const detail::PageStep step = [] {
    const nk::kernels::Isa isa = nk::kernels::cpu_isa("NK_KERNELS_ISA");
    detail::PageStep avx512 = detail::page_step_avx512(), avx2 = detail::page_step_avx2();
    if (avx512 && avx2 && isa >= nk::kernels::Isa::avx512) return avx512;
    if (avx2 && isa >= nk::kernels::Isa::avx2) return avx2;
    return detail::page_step_generic();
  }();
  return step;
}

}  // namespace

const char* kernel_isa(int64_t heads) {
  const detail::PageStep step = chosen_step();
  if (step == detail::page_step_generic()) return "generic";
  return step == detail::page_step_avx2() || heads > 2 ? "avx2" : "avx512bf16";  // the BF16 step takes 1-2 heads
}

int64_t auto_splits(int64_t rows, int64_t pages_per_row, int threads) {
  // Enough parts that every thread has two, none shorter than 4 pages.
  const int64_t want = (2 * static_cast<int64_t>(threads) + rows - 1) / std::max<int64_t>(rows, 1);
  return std::clamp<int64_t>(std::min(want, pages_per_row / 4), 1, std::max<int64_t>(pages_per_row, 1));
}

void attend(const PagedView& kv, const float* queries, int64_t heads, int64_t row_begin, int64_t row_end,
            const AttendOptions& o, float* out, float* lse) {
  const int64_t dc = kv.dc, dr = kv.dr, rows = row_end - row_begin;
  if (rows <= 0) return;
  const detail::PageStep step = o.pre_posed && !o.portable ? chosen_step() : detail::page_step_generic();
  // Queries in kernel form, per row and head: prepare_query's values (format.hpp), rounded
  // eight at a time by the copy that runs.
  const bool fast = step != detail::page_step_generic();
  const detail::RoundScaled e4m3 = fast ? detail::round_e4m3_scaled_avx2() : detail::round_e4m3_scaled_generic();
  const detail::RoundScaled bf16 = fast ? detail::round_bf16_scaled_avx2() : detail::round_bf16_scaled_generic();
  std::vector<float> qc(static_cast<size_t>(rows * heads * dc)), qr(static_cast<size_t>(rows * heads * dr)),
      factor(static_cast<size_t>(rows * heads));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t i = r * heads + h;
      const float* q = queries + ((row_begin + r) * heads + h) * (dc + dr);
      float* c = qc.data() + i * dc;
      float* k = qr.data() + i * dr;
      float sq = 1.0f;
      switch (kv.layout) {
        case Layout::bf16:
        case Layout::flashmla656:
          bf16(q, 1.0f, c, dc);
          bf16(q + dc, 1.0f, k, dr);
          break;
        case Layout::snapmla644:
          if (o.q_fp32) {
            std::copy(q, q + dc, c), std::copy(q + dc, q + dc + dr, k);
            break;
          }
          sq = e4m3_scale(q, dc);
          e4m3(q, sq, c, dc);
          bf16(q + dc, sq, k, dr);
          break;
        case Layout::fp8_naive:
          sq = e4m3_scale(q, dc + dr);
          e4m3(q, sq, c, dc);
          e4m3(q + dc, sq, k, dr);
          break;
      }
      factor[static_cast<size_t>(i)] = o.softmax_scale * sq;
    }
  // The copy's unit for decoded E4M3 values: the query parts that multiply codes
  // are scaled by its inverse (a power of two: exact).
  const float unit = step == detail::page_step_generic() ? 1.0f : detail::code_unit_avx2();
  if (unit != 1.0f && (kv.layout == Layout::snapmla644 || kv.layout == Layout::fp8_naive)) {
    for (float& v : qc) v /= unit;
    if (kv.layout == Layout::fp8_naive)
      for (float& v : qr) v /= unit;
  }
  // Work items: (row, part), parts of whole pages.
  struct Item {
    int64_t row, page_begin, page_end;
  };
  std::vector<Item> items;
  std::vector<int64_t> first_item(static_cast<size_t>(rows) + 1);
  int64_t widest = 0;
  for (int64_t r = 0; r < rows; ++r) widest = std::max<int64_t>(widest, kv.lengths[row_begin + r]);
  const int64_t parts_wanted = o.splits > 0 ? o.splits : auto_splits(rows, (widest + kPageTokens - 1) / kPageTokens, o.threads);
  for (int64_t r = 0; r < rows; ++r) {
    first_item[static_cast<size_t>(r)] = static_cast<int64_t>(items.size());
    const int64_t pages = (kv.lengths[row_begin + r] + kPageTokens - 1) / kPageTokens;
    const int64_t parts = std::min(parts_wanted, pages);
    for (int64_t s = 0; s < parts; ++s) items.push_back({r, s * pages / parts, (s + 1) * pages / parts});
  }
  first_item[static_cast<size_t>(rows)] = static_cast<int64_t>(items.size());
  const int64_t n_items = static_cast<int64_t>(items.size());
  std::vector<float> m(static_cast<size_t>(n_items * heads), -std::numeric_limits<float>::infinity()),
      l(static_cast<size_t>(n_items * heads), 0.0f), acc(static_cast<size_t>(n_items * heads * dc), 0.0f);
#pragma omp parallel num_threads(o.threads)
  {
    detail::PageScratch scratch;
    scratch.c.resize(static_cast<size_t>(kPageTokens * dc));
    scratch.kr.resize(static_cast<size_t>(kPageTokens * dr));
    scratch.st.resize(kPageTokens);
    scratch.st_chunk.resize(kPageTokens);
    scratch.scores.resize(static_cast<size_t>(heads * kPageTokens));
    scratch.probs.resize(static_cast<size_t>(heads * kPageTokens));
    scratch.sp.resize(static_cast<size_t>(heads));
#pragma omp for schedule(dynamic, 1)
    for (int64_t i = 0; i < n_items; ++i) {
      const Item& it = items[static_cast<size_t>(i)];
      const int64_t b = row_begin + it.row, length = kv.lengths[b];
      const detail::QueryBlock q{qc.data() + it.row * heads * dc, qr.data() + it.row * heads * dr,
                                 factor.data() + it.row * heads, heads, o.q_fp32 && kv.layout == Layout::snapmla644};
      for (int64_t p = it.page_begin; p < it.page_end; ++p) {
        const int64_t page = kv.block_table[b * kv.max_pages + p];
        const int64_t n = std::min<int64_t>(kPageTokens, length - p * kPageTokens);
        if (p + 1 < it.page_end) {  // the next page's first rows on their way (the copies fetch ahead within a page)
          const char* next = reinterpret_cast<const char*>(kv.pages + kv.block_table[b * kv.max_pages + p + 1] * kPageTokens * kv.row_bytes);
          for (int64_t off = 0; off < 16 * kv.row_bytes; off += 64) __builtin_prefetch(next + off);
        }
        step(kv, kv.pages + page * kPageTokens * kv.row_bytes, n, q, o.pv, o.pre_posed, m.data() + i * heads,
             l.data() + i * heads, acc.data() + i * heads * dc, scratch);
      }
    }
  }
  // Merge the parts of each row: by their maxima, in float64.
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t h = 0; h < heads; ++h) {
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t i = first_item[static_cast<size_t>(r)]; i < first_item[static_cast<size_t>(r) + 1]; ++i)
        mx = std::max<double>(mx, m[static_cast<size_t>(i * heads + h)]);
      double total = 0;
      std::vector<double> o_row(static_cast<size_t>(dc), 0.0);
      for (int64_t i = first_item[static_cast<size_t>(r)]; i < first_item[static_cast<size_t>(r) + 1]; ++i) {
        const double w = std::exp(m[static_cast<size_t>(i * heads + h)] - mx);
        total += w * l[static_cast<size_t>(i * heads + h)];
        const float* a = acc.data() + (i * heads + h) * dc;
        for (int64_t d = 0; d < dc; ++d) o_row[static_cast<size_t>(d)] += w * a[d];
      }
      float* dst = out + (r * heads + h) * dc;
      for (int64_t d = 0; d < dc; ++d) dst[d] = static_cast<float>(o_row[static_cast<size_t>(d)] / total);
      lse[r * heads + h] = static_cast<float>(mx + std::log(total));
    }
  }
}

}  // namespace snapmla
