// kernel_avx512.cpp - the page step for CPUs with AVX-512 BF16 (AMD Zen 4,
// Intel Sapphire Rapids), picked at run time by kernel.cpp: the products as
// BF16 dot products with FP32 accumulation (vdpbf16ps: 32 products a
// instruction), the CPU's nearest thing to an MMA. bf16 rows are multiplied
// as they are stored (no decode at all); snapmla644's E4M3 codes are widened
// to BF16 exactly by two 128-entry table lookups (vpermi2b: the high and low
// bytes of the BF16 of each code's value x 2^-8, subnormals included) and a
// byte interleave, 64 codes at a time, into chunks of 16 rows that stay in
// L1 for the scores and are read again (from L2) for PV. The interleave leaves each
// 64-value group in a fixed permuted order: the query is permuted the same
// way for the scores, and PV sums into a page accumulator in that order,
// added to the output in true order at the page's end. PV pairs two tokens per lane (vpermt2w interleaves their rows);
// P' of FP8 PV is E4M3, exact in BF16; an FP32 P (FP32 PV, as bf16 rows
// use) is split into three BF16 parts, P = hi + mid + lo to 2^-24 (what
// FP32 keeps), and multiplied three times. Other layouts,
// the plain scores and widths the blocks do not fit run the included
// AVX2-level step of kernel_page.inc, as do more than 2 heads.
#ifdef NK_SNAPMLA_HAVE_AVX512_COPY
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "nk/kernels/lowp.hpp"
#include "snapmla-decode/kernel.hpp"

namespace snapmla::detail {
#define NK_SNAPMLA_COPY avx512_copy
#include "snapmla-decode/kernel_page.inc"
#undef NK_SNAPMLA_COPY

namespace avx512_copy {

/// Rows a chunk decodes into L1 (16 x 512 BF16 = 16 KB).
constexpr int64_t kBfRows = 16;
/// At most this many heads take the BF16 step (decoding: few heads share a cache row).
constexpr int64_t kBfHeads = 2;

inline __m512bh as_bh(__m512i v) {
  return reinterpret_cast<__m512bh&>(v);
}

/// The BF16 bits of each E4M3 magnitude's value x 2^-8 (codes 0..127; 127,
/// NaN, never reaches the kernel), split into high and low bytes, as four
/// 64-byte lookup tables.
struct E4m3Tables {
  __m512i hi0, hi1, lo0, lo1;
  E4m3Tables() {
    alignas(64) uint8_t hi[128], lo[128];
    for (int m = 0; m < 128; ++m) {
      const uint16_t b = nk::kernels::to_bf16(nk::kernels::from_e4m3(static_cast<uint8_t>(m)) / 256.0f);  // exact
      hi[m] = static_cast<uint8_t>(b >> 8), lo[m] = static_cast<uint8_t>(b & 0xff);
    }
    hi0 = _mm512_load_si512(hi), hi1 = _mm512_load_si512(hi + 64), lo0 = _mm512_load_si512(lo),
    lo1 = _mm512_load_si512(lo + 64);
  }
};

/// 64 E4M3 codes -> 64 BF16 values x 2^-8 in two vectors, in the stored
/// order of group_position().
inline void e4m3x64_bf16(const E4m3Tables& t, const uint8_t* at, uint16_t* out) {
  const __m512i c = _mm512_loadu_si512(at);
  const __m512i hi =
      _mm512_ternarylogic_epi32(_mm512_permutex2var_epi8(t.hi0, c, t.hi1), c, _mm512_set1_epi8(static_cast<char>(0x80)),
                                0xf8);  // hi | (c & 0x80): the sign
  const __m512i lo = _mm512_permutex2var_epi8(t.lo0, c, t.lo1);
  _mm512_storeu_si512(out, _mm512_unpacklo_epi8(lo, hi));
  _mm512_storeu_si512(out + 32, _mm512_unpackhi_epi8(lo, hi));
}

/// The value (0..63) that e4m3x64_bf16 stores at position s of a 64-group:
/// unpacklo takes bytes 0-7 of each 128-bit lane, unpackhi bytes 8-15.
inline int64_t group_position(int64_t s) {
  return s < 32 ? 16 * (s / 8) + s % 8 : 16 * ((s - 32) / 8) + 8 + (s - 32) % 8;
}

/// 32 floats -> BF16 bits (nearest even; exact where the floats are BF16 values).
inline void floats_bf16(const float* x, int64_t n, uint16_t* out) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(x + i));
    _mm512_storeu_si512(out + i, reinterpret_cast<const __m512i&>(b));
  }
  for (; i < n; ++i) out[i] = nk::kernels::to_bf16(x[i]);
}

/// Loads 32 BF16 values, or the first 'valid' of them and zeros.
inline __m512i load_bf16x32(const uint16_t* at, int64_t valid) {
  if (valid >= 32) return _mm512_loadu_si512(at);
  return _mm512_maskz_loadu_epi16(static_cast<__mmask32>((1ull << valid) - 1), at);
}

struct Chunk {
  const uint16_t* c[kBfRows];   // row t's content in BF16 (dc values)
  const uint16_t* kr[kBfRows];  // its RoPE key in BF16 (dr values)
};

/// Points a chunk's rows at BF16 content and RoPE keys: bf16 rows as stored,
/// snapmla644 content widened into 'buffer' ([kBfRows][dc]).
inline void chunk_rows(const PagedView& kv, const uint8_t* rows, int64_t n, uint16_t* buffer, bool content, Chunk& ch,
                       float* st) {
  static const E4m3Tables tables;
  const int64_t dc = kv.dc, rb = kv.row_bytes;
  for (int64_t t = 0; t < n; ++t) {
    const uint8_t* row = rows + t * rb;
    if (kv.layout == Layout::bf16) {
      ch.c[t] = reinterpret_cast<const uint16_t*>(row);
      ch.kr[t] = reinterpret_cast<const uint16_t*>(row + 2 * dc);
      if (st) st[t] = 1.0f;
    } else {  // snapmla644
      uint16_t* out = buffer + t * dc;
      if (content)
        for (int64_t i = 0; i < dc; i += 64) e4m3x64_bf16(tables, row + i, out + i);
      ch.c[t] = out;
      ch.kr[t] = reinterpret_cast<const uint16_t*>(row + dc + 4);
      if (st) std::memcpy(&st[t], row + dc, 4);
    }
  }
}

/// S[h, t0 + t] = qc_h . c_t + qr_h . kr_t for the chunk's rows, in register
/// blocks of HB heads x TB rows.
template <int HB, int TB>
inline void dots_block(const uint16_t* qb, int64_t qstride, int64_t dc, int64_t dr, const Chunk& ch, int64_t h0,
                       int64_t t, float* S, int64_t t0) {
  __m512 acc[HB][TB];
  for (int i = 0; i < HB; ++i)
    for (int j = 0; j < TB; ++j) acc[i][j] = _mm512_setzero_ps();
  for (int64_t k = 0; k < dc; k += 32) {
    __m512i cv[TB];
    for (int j = 0; j < TB; ++j) cv[j] = _mm512_loadu_si512(ch.c[t + j] + k);
    for (int i = 0; i < HB; ++i) {
      const __m512i qv = _mm512_loadu_si512(qb + (h0 + i) * qstride + k);
      for (int j = 0; j < TB; ++j) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], as_bh(qv), as_bh(cv[j]));
    }
  }
  for (int64_t k = 0; k < dr; k += 32) {
    __m512i cv[TB];
    for (int j = 0; j < TB; ++j) cv[j] = load_bf16x32(ch.kr[t + j] + k, dr - k);
    for (int i = 0; i < HB; ++i) {
      const __m512i qv = load_bf16x32(qb + (h0 + i) * qstride + dc + k, dr - k);
      for (int j = 0; j < TB; ++j) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], as_bh(qv), as_bh(cv[j]));
    }
  }
  for (int i = 0; i < HB; ++i)
    for (int j = 0; j < TB; ++j) S[(h0 + i) * kPageTokens + t0 + t + j] = _mm512_reduce_add_ps(acc[i][j]);
}

template <int HB>
inline void dots_heads(const uint16_t* qb, int64_t qstride, int64_t dc, int64_t dr, const Chunk& ch, int64_t n,
                       int64_t h0, float* S, int64_t t0) {
  // Enough independent sums to cover the dot product's latency: 6 rows a block for 1-2 heads.
  constexpr int TB = HB <= 2 ? 6 : 3;
  int64_t t = 0;
  for (; t + TB <= n; t += TB) dots_block<HB, TB>(qb, qstride, dc, dr, ch, h0, t, S, t0);
  for (; t + 2 <= n; t += 2) dots_block<HB, 2>(qb, qstride, dc, dr, ch, h0, t, S, t0);
  if (n - t == 1) dots_block<HB, 1>(qb, qstride, dc, dr, ch, h0, t, S, t0);
}

/// acc[h, :] += sp[h] * sum_t P[h, t0 + t] c_t over the chunk's rows, two
/// tokens a lane. pb[part] holds per head and token pair the BF16 pair
/// (P_t, P_t+1) as 32 bits ([H][32] pairs of the page); NP parts add up to P.
template <int HB, int NP>
inline void pv_heads(const uint32_t* const* pb, const Chunk& ch, int64_t n, int64_t h0, int64_t dc, int64_t t0,
                     const uint16_t* zeros, float* tmp) {
  // WB blocks of 32 columns at once: 2 HB WB independent sums.
  constexpr int WB = HB == 1 ? 4 : HB == 2 ? 2 : 1;
  const __m512i idx_lo = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39, 7, 38, 6,
                                          37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
  const __m512i idx_hi = _mm512_set_epi16(63, 31, 62, 30, 61, 29, 60, 28, 59, 27, 58, 26, 57, 25, 56, 24, 55, 23, 54,
                                          22, 53, 21, 52, 20, 51, 19, 50, 18, 49, 17, 48, 16);
  for (int64_t d0 = 0; d0 < dc; d0 += 32 * WB) {
    const int wb = static_cast<int>(std::min<int64_t>(WB, (dc - d0) / 32));
    __m512 a[HB][WB][2];
    for (int i = 0; i < HB; ++i)
      for (int j = 0; j < WB; ++j) a[i][j][0] = a[i][j][1] = _mm512_setzero_ps();
    for (int64_t t = 0; t < n; t += 2) {
      const uint16_t* ra = ch.c[t];
      const uint16_t* rb = t + 1 < n ? ch.c[t + 1] : zeros;
      const int64_t pair = (t0 + t) / 2;
      __m512i p[HB][NP];
      for (int i = 0; i < HB; ++i)
        for (int part = 0; part < NP; ++part)
          p[i][part] = _mm512_set1_epi32(static_cast<int>(pb[part][(h0 + i) * (kPageTokens / 2) + pair]));
      for (int j = 0; j < WB; ++j) {
        if (j >= wb) break;
        const __m512i va = _mm512_loadu_si512(ra + d0 + 32 * j), vb = _mm512_loadu_si512(rb + d0 + 32 * j);
        const __m512i lo = _mm512_permutex2var_epi16(va, idx_lo, vb), hi = _mm512_permutex2var_epi16(va, idx_hi, vb);
        for (int i = 0; i < HB; ++i)
          for (int part = NP - 1; part >= 0; --part) {  // the small parts first
            a[i][j][0] = _mm512_dpbf16_ps(a[i][j][0], as_bh(p[i][part]), as_bh(lo));
            a[i][j][1] = _mm512_dpbf16_ps(a[i][j][1], as_bh(p[i][part]), as_bh(hi));
          }
      }
    }
    for (int i = 0; i < HB; ++i)
      for (int j = 0; j < wb; ++j) {
        float* out = tmp + (h0 + i) * dc + d0 + 32 * j;
        _mm512_storeu_ps(out, _mm512_add_ps(a[i][j][0], _mm512_loadu_ps(out)));
        _mm512_storeu_ps(out + 16, _mm512_add_ps(a[i][j][1], _mm512_loadu_ps(out + 16)));
      }
  }
}

template <class F>
inline void by_heads(int64_t heads, const F& f) {
  int64_t h0 = 0;
  for (; h0 + 4 <= heads; h0 += 4) f(std::integral_constant<int, 4>{}, h0);
  switch (heads - h0) {
    case 3:
      f(std::integral_constant<int, 3>{}, h0);
      break;
    case 2:
      f(std::integral_constant<int, 2>{}, h0);
      break;
    case 1:
      f(std::integral_constant<int, 1>{}, h0);
      break;
    default:
      break;
  }
}

void page_step_bf16(const PagedView& kv, const uint8_t* rows, int64_t n, const QueryBlock& q, Pv pv, bool pre_posed,
                    float* m, float* l, float* acc, PageScratch& scratch) {
  const int64_t dc = kv.dc, dr = kv.dr, H = q.heads, qstride = dc + dr;
  // BF16 products need BF16 (or E4M3) queries: an FP32 query (--q-fp32) takes the FP32 step. So do
  // more than kBfHeads heads: there the FP32 P of bf16 rows costs three products, and the
  // register-blocked FP32 step was as fast or faster (H 16 and 128, N 16K, 2 threads).
  const bool fits = pre_posed && !q.fp32 && H <= kBfHeads && dc % 32 == 0 && dr % 16 == 0 &&
                    (kv.layout == Layout::bf16 || kv.layout == Layout::snapmla644);
  if (!fits) return page_step(kv, rows, n, q, pv, pre_posed, m, l, acc, scratch);
  // Scratch (grown once per thread): the queries in BF16, a chunk of widened
  // rows, zeros for an odd chunk's last pair, P as BF16 pairs.
  thread_local std::vector<uint16_t> qb, cbuf, zeros;
  thread_local std::vector<float> qperm, tmp;
  thread_local std::vector<int64_t> perm;
  thread_local std::vector<uint32_t> pairs[3];
  qb.resize(static_cast<size_t>(H * qstride));
  cbuf.resize(
      static_cast<size_t>(kPageTokens * dc));  // the page's widened content (64 KB at d_c 512: L2), decoded once
  if (zeros.size() != static_cast<size_t>(dc)) zeros.assign(static_cast<size_t>(dc), 0);  // never written
  for (auto& v : pairs) v.resize(static_cast<size_t>(H * kPageTokens / 2));
  // The stored order of a row's content: as written for snapmla644 (64-groups permuted), as is for bf16.
  const bool permuted = kv.layout == Layout::snapmla644;
  if (permuted && dc % 64 != 0) return page_step(kv, rows, n, q, pv, pre_posed, m, l, acc, scratch);
  // Rebuilt only when the width or the layout's order changes (not per page).
  thread_local int64_t perm_dc = -1;
  thread_local bool perm_permuted = false;
  if (perm_dc != dc || perm_permuted != permuted) {
    perm.resize(static_cast<size_t>(dc));
    for (int64_t s = 0; s < dc; ++s) perm[static_cast<size_t>(s)] = permuted ? (s / 64) * 64 + group_position(s % 64) : s;
    perm_dc = dc, perm_permuted = permuted;
  }
  qperm.resize(static_cast<size_t>(dc));
  for (int64_t h = 0; h < H; ++h) {
    for (int64_t s = 0; s < dc; ++s) qperm[static_cast<size_t>(s)] = q.qc[h * dc + perm[static_cast<size_t>(s)]];
    floats_bf16(qperm.data(), dc, qb.data() + h * qstride);
    floats_bf16(q.qr + h * dr, dr, qb.data() + h * qstride + dc);
  }
  tmp.assign(static_cast<size_t>(H * dc), 0.0f);
  float* st = scratch.st.data();
  float* S = scratch.scores.data();
  float* P = scratch.probs.data();
  Chunk ch;
  for (int64_t t0 = 0; t0 < n; t0 += kBfRows) {
    const int64_t rows_here = std::min<int64_t>(kBfRows, n - t0);
    // The next chunk's bytes on their way while this one computes (the driver fetches a page's first chunk).
    const int64_t ahead = std::min<int64_t>(kBfRows, n - t0 - rows_here) * kv.row_bytes;
    const char* next = reinterpret_cast<const char*>(rows + (t0 + rows_here) * kv.row_bytes);
    for (int64_t b = 0; b < ahead; b += 64) _mm_prefetch(next + b, _MM_HINT_T0);
    chunk_rows(kv, rows + t0 * kv.row_bytes, rows_here, cbuf.data() + t0 * dc, true, ch, st + t0);
    by_heads(H, [&](auto hb, int64_t h0) {
      dots_heads<decltype(hb)::value>(qb.data(), qstride, dc, dr, ch, rows_here, h0, S, t0);
    });
  }
  // Softmax and P' (as the AVX2 step), then P as BF16 pairs.
  float* sp = scratch.sp.data();
  for (int64_t h = 0; h < H; ++h) {
    float* s = S + h * kPageTokens;
    float* p = P + h * kPageTokens;
    const float f = q.factor[h];
    float mx = m[h];
    for (int64_t t = 0; t < n; ++t) mx = std::max(mx, s[t] *= f * st[t]);
    const float corr = std::isinf(m[h]) ? 0.0f : std::exp(m[h] - mx);
    int64_t t = 0;
    const __m256 mv = _mm256_set1_ps(mx);
    __m256 sv = _mm256_setzero_ps();
    for (; t + 8 <= n; t += 8) {
      const __m256 e = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(s + t), mv));
      sv = _mm256_add_ps(sv, e);
      _mm256_storeu_ps(p + t, e);
    }
    float sum = hsum(sv);
    for (; t < n; ++t) sum += (p[t] = std::exp(s[t] - mx));
    l[h] = l[h] * corr + sum;
    m[h] = mx;
    if (corr != 1.0f)
      for (int64_t d = 0; d < dc; ++d) acc[h * dc + d] *= corr;
    for (t = 0; t < n; ++t) p[t] *= st[t];
    sp[h] = 1.0f;
    if (pv == Pv::fp8) {
      float amax = 0;
      for (t = 0; t < n; ++t) amax = std::max(amax, p[t]);
      if (amax > 0) sp[h] = amax / nk::kernels::kE4m3Max;
      const __m256 spv = _mm256_set1_ps(sp[h]), top = _mm256_set1_ps(nk::kernels::kE4m3Max);
      for (t = 0; t + 8 <= n; t += 8)
        _mm256_storeu_ps(p + t, round_e4m3x8(_mm256_min_ps(_mm256_div_ps(_mm256_loadu_ps(p + t), spv), top)));
      for (; t < n; ++t) p[t] = from_e4m3(to_e4m3(p[t] / sp[h]));
    }
    // Pairs (P_t, P_t+1) in BF16; a float P as hi + mid + lo (each part
    // takes the next 8 bits of what the previous ones left: exact sums).
    for (t = 0; t < n; t += 2) {
      float a = p[t], b = t + 1 < n ? p[t + 1] : 0.0f;
      for (int part = 0; part < (pv == Pv::fp32 ? 3 : 1); ++part) {
        const uint16_t ah = to_bf16(a), bh = to_bf16(b);
        pairs[part][static_cast<size_t>(h * (kPageTokens / 2) + t / 2)] =
            static_cast<uint32_t>(ah) | (static_cast<uint32_t>(bh) << 16);
        a -= from_bf16(ah), b -= from_bf16(bh);
      }
    }
  }
  // The codes of snapmla644 arrived times 2^-8: so did the PV sums.
  if (kv.layout == Layout::snapmla644)
    for (int64_t h = 0; h < H; ++h) sp[h] *= 256.0f;
  const uint32_t* parts[3] = {pairs[0].data(), pairs[1].data(), pairs[2].data()};
  for (int64_t t0 = 0; t0 < n; t0 += kBfRows) {
    const int64_t rows_here = std::min<int64_t>(kBfRows, n - t0);
    chunk_rows(kv, rows + t0 * kv.row_bytes, rows_here, cbuf.data() + t0 * dc, false, ch, nullptr);  // decoded above
    by_heads(H, [&](auto hb, int64_t h0) {
      constexpr int HB = decltype(hb)::value;
      if (pv == Pv::fp32)
        pv_heads<HB, 3>(parts, ch, rows_here, h0, dc, t0, zeros.data(), tmp.data());
      else
        pv_heads<HB, 1>(parts, ch, rows_here, h0, dc, t0, zeros.data(), tmp.data());
    });
  }
  // The page's PV sums, in true column order, scaled.
  for (int64_t h = 0; h < H; ++h) {
    const float s = sp[h];
    const float* from = tmp.data() + h * dc;
    float* to = acc + h * dc;
    for (int64_t i = 0; i < dc; ++i) to[perm[static_cast<size_t>(i)]] += s * from[i];
  }
}

}  // namespace avx512_copy

PageStep page_step_avx512() {
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512bf16"))
    return nullptr;
  return &avx512_copy::page_step_bf16;
}

}  // namespace snapmla::detail
#endif
