// snapmla-decode.cpp - the number formats on every code and tie, the row
// layouts' bytes, and paged decode attention against float64 references:
// BF16 exactly, split-K and both instruction-set copies agreeing, the
// pre-posed scores equal to the plain ones, ragged lengths and partial pages.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <span>

#include "nk/kernels/attention.hpp"
#include "nk/kernels/lowp.hpp"
#include "nk/rng.hpp"
#include "snapmla-decode/format.hpp"
#include "snapmla-decode/io.hpp"
#include "snapmla-decode/kernel.hpp"
#include "snapmla-decode/model_cache.hpp"
#include "snapmla-decode/snapmla.hpp"
#include "test_support.hpp"

using namespace snapmla;
using nk::kernels::from_bf16;
using nk::kernels::from_e4m3;
using nk::kernels::to_bf16;
using nk::kernels::to_e4m3;

namespace {

float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// IEEE half bits -> float, written out (no F16C), for the decode trick's check.
float half_to_float(uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const float v = e == 0 ? std::ldexp(static_cast<float>(m), -24) : std::ldexp(static_cast<float>(1024 + m), e - 25);
  return (h & 0x8000) ? -v : v;
}

/// A random float cache: B rows of ragged lengths, deepseek-like ranges.
Cache make_cache(int64_t B, int64_t N, int64_t dc, int64_t dr, const std::vector<int32_t>& lengths, uint64_t seed) {
  Cache c;
  c.batch = B, c.tokens = N, c.dc = dc, c.dr = dr, c.lengths = lengths;
  nk::Rng r(seed);
  c.ckv.resize(static_cast<size_t>(B * N * dc));
  c.kpe.resize(static_cast<size_t>(B * N * dr));
  for (float& v : c.ckv) v = static_cast<float>(0.01 * r.normal());
  for (size_t i = 0; i < c.kpe.size(); ++i) c.kpe[i] = static_cast<float>((i % dr == 0 ? 300.0 : 1.0) * r.normal());
  return c;
}

std::vector<float> make_queries(int64_t B, int64_t H, int64_t dk, uint64_t seed) {
  nk::Rng r(seed);
  std::vector<float> q(static_cast<size_t>(B * H * dk));
  for (float& v : q) v = static_cast<float>(3.0 * r.normal());
  return q;
}

/// float64 attention of one (row, head) over decoded values, as the layout's
/// kernel should compute it: scores scale s_q s_t (qc.c + qr.kr), V = c s_t.
void reference(Layout layout, const Paged& p, const float* q, int64_t b, float scale, bool q_fp32,
               std::vector<double>& out, double& lse) {
  const int64_t dc = p.dc, dr = p.dr, n = p.lengths[static_cast<size_t>(b)];
  std::vector<float> qc(static_cast<size_t>(dc)), qr(static_cast<size_t>(dr)), c(static_cast<size_t>(dc)),
      kr(static_cast<size_t>(dr));
  const float sq = prepare_query(layout, q, dc, dr, q_fp32, qc.data(), qr.data());
  std::vector<double> logits(static_cast<size_t>(n));
  std::vector<float> values(static_cast<size_t>(n * dc));
  for (int64_t t = 0; t < n; ++t) {
    const int64_t page = p.block_table[static_cast<size_t>(b * p.max_pages + t / kPageTokens)];
    const float st = decode_row(layout, p.pages.data() + (page * kPageTokens + t % kPageTokens) * p.row_bytes, dc, dr,
                                c.data(), kr.data());
    double s = 0;
    for (int64_t i = 0; i < dc; ++i) s += static_cast<double>(qc[static_cast<size_t>(i)]) * c[static_cast<size_t>(i)];
    for (int64_t i = 0; i < dr; ++i) s += static_cast<double>(qr[static_cast<size_t>(i)]) * kr[static_cast<size_t>(i)];
    logits[static_cast<size_t>(t)] = static_cast<double>(scale) * sq * st * s;
    for (int64_t i = 0; i < dc; ++i) values[static_cast<size_t>(t * dc + i)] = c[static_cast<size_t>(i)] * st;
  }
  out.assign(static_cast<size_t>(dc), 0.0);
  lse = nk::kernels::softmax_combine(logits.data(), n, values.data(), dc, nullptr, out.data());
}

double max_rel(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i])),
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  return worst / scale;
}

}  // namespace

TEST_SUITE("snapmla-decode") {
  TEST_CASE("E4M3: every code round-trips, the grid is the issue's, ties go to the even code, saturation") {
    CHECK(from_e4m3(0x7e) == 448.0f);
    CHECK(from_e4m3(0x01) == std::ldexp(1.0f, -9));
    CHECK(from_e4m3(0x08) == std::ldexp(1.0f, -6));
    CHECK(std::isnan(from_e4m3(0x7f)));
    CHECK(std::isnan(from_e4m3(0xff)));
    for (int code = 0; code < 256; ++code) {
      if ((code & 0x7f) == 0x7f) continue;
      const float v = from_e4m3(static_cast<uint8_t>(code));
      CHECK(to_e4m3(v) == code);  // -0 -> 0x80 included
      // The F16C trick: these half bits are the value times 2^-8.
      CHECK(half_to_float(nk::kernels::e4m3_as_half_bits(static_cast<uint8_t>(code))) == std::ldexp(v, -8));
    }
    // Midpoints between neighbours round to the even code; just off them, to the nearer.
    for (int code = 0; code < 0x7e; ++code) {
      const float a = from_e4m3(static_cast<uint8_t>(code)), b = from_e4m3(static_cast<uint8_t>(code + 1));
      const float mid = (a + b) / 2;  // exact: both have few mantissa bits
      CHECK(to_e4m3(mid) == ((code & 1) ? code + 1 : code));
      CHECK(to_e4m3(std::nextafter(mid, 0.0f)) == code);
      CHECK(to_e4m3(std::nextafter(mid, 1e9f)) == code + 1);
      CHECK(to_e4m3(-mid) == (0x80 | ((code & 1) ? code + 1 : code)));
    }
    CHECK(to_e4m3(464.0f) == 0x7e);
    CHECK(to_e4m3(1e30f) == 0x7e);
    CHECK(to_e4m3(-std::numeric_limits<float>::infinity()) == 0xfe);
    CHECK(to_e4m3(std::ldexp(1.0f, -11)) == 0x00);  // a quarter of the subnormal step 2^-9: zero
    CHECK(to_e4m3(std::ldexp(1.0f, -10)) == 0x00);  // half a step: the tie goes to the even code 0
    CHECK(to_e4m3(std::ldexp(3.0f, -10)) == 0x02);  // 1.5 steps: to 2
    CHECK(to_e4m3(std::ldexp(3.0f, -11)) == 0x01);  // 0.75 of a step: to 1
    CHECK((to_e4m3(std::numeric_limits<float>::quiet_NaN()) & 0x7f) == 0x7f);
  }

  TEST_CASE("the AVX2 copy's E4M3 decode and rounding equal the scalar conversions") {
    std::vector<uint8_t> codes;
    for (int c = 0; c < 256; ++c)
      if ((c & 0x7f) != 0x7f) codes.push_back(static_cast<uint8_t>(c));
    while (codes.size() % 8) codes.push_back(0);
    std::vector<float> got(codes.size());
    if (!detail::decode_e4m3_avx2(codes.data(), got.data(), static_cast<int64_t>(codes.size()))) {
      MESSAGE("no AVX2 copy on this CPU: skipped");
      return;
    }
    for (size_t i = 0; i < codes.size(); ++i) CHECK(got[i] == std::ldexp(from_e4m3(codes[i]), -8));
    // Every non-negative value, midpoint and midpoint neighbour up to 448, and random values.
    std::vector<float> x;
    for (int c = 0; c < 0x7e; ++c) {
      const float a = from_e4m3(static_cast<uint8_t>(c)), b = from_e4m3(static_cast<uint8_t>(c + 1)), mid = (a + b) / 2;
      x.insert(x.end(), {a, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)});
    }
    x.push_back(448.0f);
    nk::Rng r(9);
    for (int i = 0; i < 100000; ++i) x.push_back(static_cast<float>(448.0 * std::pow(r.uniform(), 8.0)));
    while (x.size() % 8) x.push_back(0.0f);
    std::vector<float> y(x.size());
    REQUIRE(detail::round_e4m3_avx2(x.data(), y.data(), static_cast<int64_t>(x.size())));
    int64_t differ = 0;
    for (size_t i = 0; i < x.size(); ++i) differ += y[i] != from_e4m3(to_e4m3(x[i]));
    CHECK(differ == 0);
  }

  TEST_CASE("BF16: nearest, ties to even, NaN kept") {
    CHECK(to_bf16(1.0f) == 0x3f80);
    CHECK(to_bf16(bits_float(0x3f808000u)) == 0x3f80);  // tie, even stays
    CHECK(to_bf16(bits_float(0x3f818000u)) == 0x3f82);  // tie, odd rounds up
    CHECK(to_bf16(bits_float(0x3f808001u)) == 0x3f81);
    CHECK(to_bf16(-0.0f) == 0x8000);
    CHECK(std::isnan(from_bf16(to_bf16(std::numeric_limits<float>::quiet_NaN()))));
    nk::Rng r(3);
    for (int i = 0; i < 10000; ++i) {
      const uint32_t u = static_cast<uint32_t>(r()) & 0x7f7fffffu;  // finite
      const float x = bits_float(u), lo = from_bf16(static_cast<uint16_t>(u >> 16)),
                  hi = from_bf16(static_cast<uint16_t>((u >> 16) + 1));
      const float got = from_bf16(to_bf16(x));
      CHECK((got == lo || got == hi));
      CHECK(std::fabs(got - x) <= std::fabs((got == lo ? hi : lo) - x));
    }
  }

  TEST_CASE("row layouts: the issue's byte counts and offsets") {
    CHECK(row_bytes(Layout::bf16, 512, 64) == 1152);
    CHECK(row_bytes(Layout::flashmla656, 512, 64) == 656);
    CHECK(row_bytes(Layout::snapmla644, 512, 64) == 644);
    CHECK(row_bytes(Layout::fp8_naive, 512, 64) == 580);
    nk::Rng r(5);
    std::vector<float> c(512), kr(64);
    for (float& v : c) v = static_cast<float>(0.01 * r.normal());
    for (float& v : kr) v = static_cast<float>(100 * r.normal());
    std::vector<uint8_t> row(644);
    encode_row(Layout::snapmla644, c.data(), kr.data(), 512, 64, row.data());
    float amax = 0;
    for (float v : c) amax = std::max(amax, std::fabs(v));
    float s;
    std::memcpy(&s, row.data() + 512, 4);
    CHECK(s == amax / 448.0f);
    CHECK(from_e4m3(row[7]) == from_e4m3(to_e4m3(c[7] / s)));
    CHECK(from_bf16(static_cast<uint16_t>(row[516 + 6] | (row[517 + 6] << 8))) == from_bf16(to_bf16(kr[3] / s)));
    // A zero row has s = 1.
    std::vector<float> zero(512, 0.0f), zr(64, 0.0f);
    encode_row(Layout::snapmla644, zero.data(), zr.data(), 512, 64, row.data());
    std::memcpy(&s, row.data() + 512, 4);
    CHECK(s == 1.0f);
  }

  TEST_CASE("attend: each layout equals float64 attention over its decoded values; splits and copies agree") {
    // 1 and 2 heads take the AVX-512 BF16 copy where the CPU has one, 5 the AVX2 copy.
    for (const int64_t H : {int64_t{1}, int64_t{2}, int64_t{5}}) {
      CAPTURE(H);
      const int64_t B = 3, N = 300, dc = 64, dr = 16;
      const std::vector<int32_t> lengths{300, 129, 64};  // partial last pages, a single full page
      const Cache cache = make_cache(B, N, dc, dr, lengths, 11);
      const std::vector<float> q = make_queries(B, H, dc + dr, 12);
      const float scale = 0.05f;
      for (Layout layout : all_layouts()) {
        if (layout == Layout::flashmla656) continue;  // d_c 64 is no multiple of 128: below
        const Paged p = paginate(cache, layout);
        for (Pv pv : {Pv::fp32, Pv::fp8}) {
          if (pv == Pv::fp8 && !token_scaled(layout)) continue;
          CAPTURE(layout_name(layout));
          CAPTURE(pv_name(pv));
          AttendOptions o;
          o.pv = pv;
          o.softmax_scale = scale;
          o.splits = 1;
          std::vector<float> out1(static_cast<size_t>(B * H * dc)), lse1(static_cast<size_t>(B * H));
          attend(p.view(), q.data(), H, 0, B, o, out1.data(), lse1.data());
          o.splits = 7;
          std::vector<float> out7(out1.size()), lse7(lse1.size());
          attend(p.view(), q.data(), H, 0, B, o, out7.data(), lse7.data());
          CHECK(max_rel(out7, out1) < 1e-6 * (pv == Pv::fp8 ? 100 : 1));
          CHECK(max_rel(lse7, lse1) < 1e-6);
          o.portable = true;
          std::vector<float> outg(out1.size()), lseg(lse1.size());
          attend(p.view(), q.data(), H, 0, B, o, outg.data(), lseg.data());
          CHECK(max_rel(outg, out7) < 1e-5 * (pv == Pv::fp8 ? 100 : 1));
          if (pv == Pv::fp8) continue;  // P' quantized: checked against fp32 below
          for (int64_t b = 0; b < B; ++b)
            for (int64_t h = 0; h < H; ++h) {
              std::vector<double> ref;
              double lse = 0;
              reference(layout, p, q.data() + (b * H + h) * (dc + dr), b, scale, false, ref, lse);
              double err = 0, norm = 0;
              for (int64_t d = 0; d < dc; ++d) {
                err = std::max(
                    err, std::fabs(out1[static_cast<size_t>((b * H + h) * dc + d)] - ref[static_cast<size_t>(d)]));
                norm = std::max(norm, std::fabs(ref[static_cast<size_t>(d)]));
              }
              CHECK(err / norm < 1e-5);
              CHECK(std::fabs(lse1[static_cast<size_t>(b * H + h)] - lse) < 1e-4 * std::max(1.0, std::fabs(lse)));
            }
        }
      }
    }
  }

  TEST_CASE("attend: FP8 PV stays near FP32 PV; pre-posed scores equal plain ones; flashmla656 at d_c 128") {
    const int64_t B = 2, N = 200, dc = 128, dr = 16, H = 3;
    const Cache cache = make_cache(B, N, dc, dr, {200, 77}, 21);
    const std::vector<float> q = make_queries(B, H, dc + dr, 22);
    const Paged p = paginate(cache, Layout::snapmla644);
    AttendOptions o;
    o.softmax_scale = 0.05f;
    std::vector<float> a(static_cast<size_t>(B * H * dc)), la(static_cast<size_t>(B * H)), b(a.size()), lb(la.size());
    o.pv = Pv::fp32;
    attend(p.view(), q.data(), H, 0, B, o, a.data(), la.data());
    o.pv = Pv::fp8;
    attend(p.view(), q.data(), H, 0, B, o, b.data(), lb.data());
    CHECK(max_rel(b, a) < 0.08);    // one E4M3 rounding of P' per element: <= 2^-4 relative
    CHECK(max_rel(b, a) > 1e-7);    // and it does round
    CHECK(max_rel(lb, la) == 0.0);  // the normaliser is unquantized P
    o.pv = Pv::fp32;
    o.pre_posed = false;
    attend(p.view(), q.data(), H, 0, B, o, b.data(), lb.data());
    CHECK(max_rel(b, a) < 1e-5);
    CHECK(max_rel(lb, la) < 1e-6);
    // flashmla656: the reference over its BF16-dequantized tiles.
    const Paged f = paginate(cache, Layout::flashmla656);
    o.pre_posed = true;
    attend(f.view(), q.data(), H, 0, B, o, a.data(), la.data());
    for (int64_t r = 0; r < B; ++r)
      for (int64_t h = 0; h < H; ++h) {
        std::vector<double> ref;
        double lse = 0;
        reference(Layout::flashmla656, f, q.data() + (r * H + h) * (dc + dr), r, 0.05f, false, ref, lse);
        for (int64_t d = 0; d < dc; ++d)
          CHECK(std::fabs(a[static_cast<size_t>((r * H + h) * dc + d)] - ref[static_cast<size_t>(d)]) < 1e-5 * 0.05);
      }
  }

  TEST_CASE("quantization error: snapmla644 keeps content that one scale over [c, k_R] loses") {
    const int64_t B = 1, N = 512, dc = 128, dr = 16, H = 4;
    const Cache cache = make_cache(B, N, dc, dr, {512}, 31);
    const std::vector<float> q = make_queries(B, H, dc + dr, 32);
    auto error_of = [&](Layout layout) {
      const Paged p = paginate(cache, layout);
      AttendOptions o;
      o.softmax_scale = 0.05f;
      o.pv = token_scaled(layout) ? Pv::fp8 : Pv::fp32;
      std::vector<float> out(static_cast<size_t>(B * H * dc)), lse(static_cast<size_t>(B * H));
      attend(p.view(), q.data(), H, 0, B, o, out.data(), lse.data());
      // against float64 attention over the float cache
      std::vector<float> keys(static_cast<size_t>(N * (dc + dr)));
      for (int64_t t = 0; t < N; ++t) {
        std::copy_n(cache.ckv.data() + t * dc, dc, keys.data() + t * (dc + dr));
        std::copy_n(cache.kpe.data() + t * dr, dr, keys.data() + t * (dc + dr) + dc);
      }
      double err = 0, norm = 0;
      std::vector<double> logits(static_cast<size_t>(N)), ref(static_cast<size_t>(dc));
      for (int64_t h = 0; h < H; ++h) {
        nk::kernels::attention_row(q.data() + h * (dc + dr), keys.data(), cache.ckv.data(), dc + dr, dc, 0.05, nullptr,
                                   N, logits.data(), ref.data());
        for (int64_t d = 0; d < dc; ++d) {
          const double e = out[static_cast<size_t>(h * dc + d)] - ref[static_cast<size_t>(d)];
          err += e * e, norm += ref[static_cast<size_t>(d)] * ref[static_cast<size_t>(d)];
        }
      }
      return std::sqrt(err / norm);
    };
    const double bf16 = error_of(Layout::bf16), snap = error_of(Layout::snapmla644),
                 naive = error_of(Layout::fp8_naive);
    MESSAGE("relative L2 error: bf16 " << bf16 << ", snapmla644 " << snap << ", fp8-naive " << naive);
    CHECK(bf16 < snap);
    CHECK(snap < 0.5 * naive);
  }

  TEST_CASE(
      "model cache: rows appended all at once or one by one give the same bits (per-token scales); dense agrees") {
    nk::lm::Config c;
    c.attention = nk::lm::AttentionKind::mla;
    c.n_layers = 1, c.n_heads = 3, c.n_kv_heads = 3, c.head_dim = 24, c.rope_dim = 16, c.kv_rank = 128, c.max_seq = 200;
    const int64_t H = 3, dc = 128, dr = 16, T = 150;  // three pages, the last partial
    nk::Rng rng(41);
    std::vector<float> ckv(static_cast<size_t>(T * dc)), kpe(static_cast<size_t>(T * dr)),
        q(static_cast<size_t>(T * H * (dc + dr)));
    for (int64_t t = 0; t < T; ++t) {
      const double row_scale = std::exp(rng.normal());  // rows of very different ranges
      for (int64_t e = 0; e < dc; ++e)
        ckv[static_cast<size_t>(t * dc + e)] = static_cast<float>(row_scale * rng.normal());
      for (int64_t e = 0; e < dr; ++e) kpe[static_cast<size_t>(t * dr + e)] = static_cast<float>(3 * rng.normal());
    }
    for (float& x : q) x = static_cast<float>(0.3 * rng.normal());
    const auto call_for = [&](int64_t begin, int64_t n, const nk::lm::TokenBatch& batch) {
      nk::lm::MlaCall call;
      call.layer = 0, call.batch = &batch, call.ckv = ckv.data() + begin * dc, call.kpe = kpe.data() + begin * dr;
      call.q = q.data() + begin * H * (dc + dr), call.heads = H, call.kv_rank = dc, call.rope_dim = dr,
      call.scale = 0.2;
      return call;
    };
    const std::vector<int32_t> slots{0};
    const auto run = [&](nk::lm::MlaBackend& cache, int64_t chunk) {
      std::vector<float> latent(static_cast<size_t>(T * H * dc));
      std::vector<int32_t> tokens(static_cast<size_t>(chunk), 0);
      for (int64_t begin = 0; begin < T; begin += chunk) {
        const int64_t n = std::min(chunk, T - begin);
        const std::vector<int64_t> offsets{0, n};
        const nk::lm::TokenBatch batch{
            std::span<const int32_t>(tokens.data(), static_cast<size_t>(n)), offsets, {}, slots};
        cache.attend(call_for(begin, n, batch), latent.data() + begin * H * dc);
      }
      return latent;
    };
    nk::lm::DenseMlaCache dense(c, 1);
    const std::vector<float> ref = run(dense, T);
    for (const Layout layout : all_layouts()) {
      const std::string name = layout_name(layout);
      CAPTURE(name);
      for (const Pv pv : {Pv::fp32, Pv::fp8}) {
        if (pv == Pv::fp8 && !token_scaled(layout)) continue;  // FP8 PV folds a token's scale: 644 and fp8-naive
        LayoutMlaCache forced(c, layout, pv, false, 1, 2), stepwise(c, layout, pv, false, 1, 2);
        const std::vector<float> a = run(forced, T), b = run(stepwise, 1);
        CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
        CHECK(forced.length(0) == T);
        double err = 0, norm = 0;
        for (size_t i = 0; i < a.size(); ++i) err += (a[i] - ref[i]) * (a[i] - ref[i]), norm += ref[i] * ref[i];
        MESSAGE(name << " pv " << std::string(pv_name(pv)) << ": relative L2 error against dense float "
                     << std::sqrt(err / norm));
        CHECK(std::sqrt(err / norm) < (layout == Layout::bf16 ? 0.01 : 0.1));
      }
    }
    CHECK(nk::test::exit_code([&] { LayoutMlaCache bad(nk::lm::Config{}, Layout::bf16, Pv::fp32, false, 1, 1); }) == 2);
  }

  TEST_CASE("CUDA decode (FP8 and BF16 mma.sync) equals the CPU kernel: ragged pages, padding heads, splits") {
    if (!nk::test::cuda_or_skip()) return;
    struct Case {
      int64_t dc, dr, heads, splits;
    };
    for (const Case k : {Case{128, 16, 1, 1}, Case{128, 16, 20, 3}, Case{512, 64, 16, 0}, Case{512, 64, 128, 2},
                         Case{256, 32, 5, 7}}) {
      const int64_t B = 3, N = 300;
      const Cache cache = make_cache(B, N, k.dc, k.dr, {300, 64, 129}, static_cast<uint64_t>(k.dc + k.heads));
      const std::vector<float> q = make_queries(B, k.heads, k.dc + k.dr, 7);
      for (const Layout layout : {Layout::bf16, Layout::snapmla644}) {
        const Paged p = paginate(cache, layout);
        AttendOptions o;
        o.softmax_scale = 0.07f;
        o.pv = layout == Layout::bf16 ? Pv::fp32 : Pv::fp8;
        o.splits = k.splits;
        o.threads = 2;
        REQUIRE(cuda_supports(layout, o.pv, o, k.dc, k.dr));
        std::vector<float> cpu(static_cast<size_t>(B * k.heads * k.dc)), gpu(cpu.size()),
            lc(static_cast<size_t>(B * k.heads)), lg(lc.size());
        attend(p.view(), q.data(), k.heads, 0, B, o, cpu.data(), lc.data());
        attend_cuda(p.view(), q.data(), k.heads, 0, B, o, gpu.data(), lg.data());
        double err = 0, norm = 0, lse_err = 0;
        for (size_t i = 0; i < cpu.size(); ++i) err += (gpu[i] - cpu[i]) * (gpu[i] - cpu[i]), norm += cpu[i] * cpu[i];
        for (size_t i = 0; i < lc.size(); ++i) lse_err = std::max(lse_err, std::fabs(double(lg[i]) - lc[i]));
        INFO("layout " << std::string(layout_name(layout)) << " d_c " << k.dc << " H " << k.heads << " splits "
                       << k.splits);
        MESSAGE("relative L2 " << std::sqrt(err / norm) << ", lse " << lse_err);
        CHECK(std::sqrt(err / norm) < 1e-3);
        CHECK(lse_err < 1e-3);
      }
    }
  }
}
