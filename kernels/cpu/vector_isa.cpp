// vector_isa.cpp - Gaussian blocks, the direct convolution and SiLU, compiled once
// per instruction set (vector_avx2.cpp and vector_avx512.cpp include this
// file under other namespaces); vector.cpp picks one per process.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "vector_isa.hpp"

#ifndef NK_VECTOR_NAMESPACE
#define NK_VECTOR_NAMESPACE vector_generic
#define NK_VECTOR_ISA "generic"
#endif

namespace nk::kernels::NK_VECTOR_NAMESPACE {

namespace {

// log(u) for u in (0, 1], branch-free: u = m 2^e with m in [sqrt(1/2),
// sqrt(2)), log m = 2 atanh(t), t = (m-1)/(m+1), |t| < 0.172, series to t^9.
inline float log_unit(float u) {
  uint32_t bits;
  std::memcpy(&bits, &u, sizeof bits);
  int32_t e = static_cast<int32_t>(bits >> 23) - 127;
  const uint32_t mantissa = (bits & 0x7fffffu) | 0x3f800000u;  // m in [1, 2)
  float m;
  std::memcpy(&m, &mantissa, sizeof m);
  const bool high = m > 1.41421356f;
  m = high ? m * 0.5f : m;
  e = high ? e + 1 : e;
  const float t = (m - 1.0f) / (m + 1.0f), t2 = t * t;
  const float series = t * (2.0f + t2 * (2.0f / 3 + t2 * (2.0f / 5 + t2 * (2.0f / 7 + t2 * (2.0f / 9)))));
  return series + static_cast<float>(e) * 0.69314718056f;
}

// cos and sin of 2 pi v for v in [0, 1): quadrant q = round(4v), the rest
// a in [-pi/4, pi/4] by Taylor series to a^8 and a^7.
inline void cos_sin_turn(float v, float& c, float& s) {
  const int quadrant = static_cast<int>(v * 4.0f + 0.5f);  // v >= 0: rounds half up
  const float a = (v - static_cast<float>(quadrant) * 0.25f) * 6.28318530717958647692f, a2 = a * a;
  const float ca = 1.0f + a2 * (-0.5f + a2 * (1.0f / 24 + a2 * (-1.0f / 720 + a2 * (1.0f / 40320))));
  const float sa = a * (1.0f + a2 * (-1.0f / 6 + a2 * (1.0f / 120 + a2 * (-1.0f / 5040))));
  const int q = quadrant & 3;
  c = q == 0 ? ca : q == 1 ? -sa : q == 2 ? -ca : sa;
  s = q == 0 ? sa : q == 1 ? ca : q == 2 ? -sa : -ca;
}

// exp(x) for x in float range, branch-free so that loops over it vectorise
// (the clamps become min/max only without trapping math: CMakeLists.txt):
// x = k ln 2 + r with |r| <= ln 2 / 2 (ln 2 split in two for an exact
// product), e^r by Cephes' degree-6 polynomial, times 2^k built in the
// exponent bits; x clamped to [-87, 88] (no denormals or infinities).
inline float exp_clamped(float x) {
  x = std::min(std::max(x, -87.0f), 88.0f);
  const int32_t ki = static_cast<int32_t>(x * 1.44269504088896341f + 200.5f) - 200;  // floor (the sum is positive)
  const float k = static_cast<float>(ki);
  const float r = (x - k * 0.693359375f) - k * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float er = p * r * r + r + 1.0f;
  return er * std::bit_cast<float>((ki + 127) << 23);
}

// Blocks of 4096 values over the threads, each block one simd loop (GCC
// does not vectorise the exp inside a combined 'parallel for simd').
constexpr int64_t kElementBlock = 4096;

void silu(const float* x, float* y, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t start = 0; start < n; start += kElementBlock) {
    const int64_t m = std::min(n - start, kElementBlock);
    const float* __restrict xs = x + start;
    float* __restrict ys = y + start;
#pragma omp simd
    for (int64_t j = 0; j < m; ++j) ys[j] = xs[j] / (1.0f + exp_clamped(-xs[j]));
  }
}

// d silu / dx = s (1 + x (1 - s)), s = sigmoid(x).
void silu_backward(const float* x, const float* dy, float* dx, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t start = 0; start < n; start += kElementBlock) {
    const int64_t m = std::min(n - start, kElementBlock);
    const float* __restrict xs = x + start;
    const float* __restrict gs = dy + start;
    float* __restrict out = dx + start;
#pragma omp simd
    for (int64_t j = 0; j < m; ++j) {
      const float s = 1.0f / (1.0f + exp_clamped(-xs[j]));
      out[j] = gs[j] * s * (1.0f + xs[j] * (1.0f - s));
    }
  }
}

void normal_blocks(Rng& rng, float* out, int64_t n, float scale) {
  constexpr int64_t kBlock = 256;
  alignas(64) uint64_t draws[kBlock];
  alignas(64) float first[kBlock], second[kBlock];
  for (int64_t start = 0; start < n; start += 2 * kBlock) {
    const int64_t pairs = std::min<int64_t>(kBlock, (n - start + 1) / 2);
    for (int64_t j = 0; j < pairs; ++j) draws[j] = rng();
#pragma omp simd
    for (int64_t j = 0; j < pairs; ++j) {
      // u in (0, 1] (never 0: log), v in [0, 1), 24 bits each.
      const float u = (static_cast<float>(static_cast<int32_t>(draws[j] >> 40)) + 1.0f) * 0x1.0p-24f;
      const float v = static_cast<float>(static_cast<int32_t>((draws[j] >> 8) & 0xffffffu)) * 0x1.0p-24f;
      const float radius = scale * std::sqrt(-2.0f * log_unit(u));
      float c, s;
      cos_sin_turn(v, c, s);
      first[j] = radius * c;
      second[j] = radius * s;
    }
    float* o = out + start;
    const int64_t left = n - start, whole = std::min(pairs, left / 2);
    for (int64_t j = 0; j < whole; ++j) {
      o[2 * j] = first[j];
      o[2 * j + 1] = second[j];
    }
    if (whole < pairs) o[2 * whole] = first[whole];  // n odd: the last draw's sine is not used
  }
}

// Any number of output channels: one output pixel at a time.
void direct_any(const ConvShape& s, const float* x, const float* packed, const float* bias, float* y) {
  const int64_t K = s.kernel, S = s.stride, P = s.pad, C = s.channels, H = s.height, W = s.width;
  const int64_t Ho = s.out_height, Wo = s.out_width, O = s.out_channels;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t oy = 0; oy < Ho; ++oy) {
      alignas(64) float acc[kDirectConvMaxOut];
      for (int64_t ox = 0; ox < Wo; ++ox) {
        for (int64_t o = 0; o < O; ++o) acc[o] = bias[o];
        for (int64_t ky = 0; ky < K; ++ky) {
          const int64_t yy = oy * S - P + ky;
          if (yy < 0 || yy >= H) continue;
          for (int64_t kx = 0; kx < K; ++kx) {
            const int64_t xx = ox * S - P + kx;
            if (xx < 0 || xx >= W) continue;
            const float* pixel = x + ((b * H + yy) * W + xx) * C;
            const float* w = packed + (ky * K + kx) * C * O;
            for (int64_t c = 0; c < C; ++c) {
              const float v = pixel[c];
              const float* wc = w + c * O;
#pragma omp simd aligned(acc : 64)
              for (int64_t o = 0; o < O; ++o) acc[o] += v * wc[o];
            }
          }
        }
        std::memcpy(y + ((b * Ho + oy) * Wo + ox) * O, acc, sizeof(float) * static_cast<size_t>(O));
      }
    }
  }
}

// O output channels known at compile time: the accumulators of kPixels
// neighbouring output pixels (ox0, ..., ox0 + kPixels - 1 of row oy) stay in
// registers and share each weight load.
constexpr int kPixels = 4;

template <int O>
inline void accumulate(const ConvShape& s, const float* x, const float* packed, const float* bias, int64_t b, int64_t oy,
                       int64_t ox0, float (&acc)[kPixels][O]) {
  const int64_t K = s.kernel, S = s.stride, P = s.pad, C = s.channels, H = s.height, W = s.width, Wo = s.out_width;
  for (int p = 0; p < kPixels; ++p)
    for (int o = 0; o < O; ++o) acc[p][o] = bias[o];
  for (int64_t ky = 0; ky < K; ++ky) {
    const int64_t yy = oy * S - P + ky;
    if (yy < 0 || yy >= H) continue;
    const float* row = x + (b * H + yy) * W * C;
    for (int64_t kx = 0; kx < K; ++kx) {
      const float* pixel[kPixels];
      bool all = true;
      for (int p = 0; p < kPixels; ++p) {
        const int64_t xx = (ox0 + p) * S - P + kx;
        const bool inside = ox0 + p < Wo && xx >= 0 && xx < W;
        pixel[p] = inside ? row + xx * C : nullptr;
        all = all && inside;
      }
      const float* w = packed + (ky * K + kx) * C * O;
      if (all) {
        for (int64_t c = 0; c < C; ++c) {
          const float* wc = w + c * O;
          for (int p = 0; p < kPixels; ++p) {
            const float v = pixel[p][c];
#pragma omp simd
            for (int o = 0; o < O; ++o) acc[p][o] += v * wc[o];
          }
        }
      } else {
        for (int64_t c = 0; c < C; ++c) {
          const float* wc = w + c * O;
          for (int p = 0; p < kPixels; ++p) {
            if (!pixel[p]) continue;
            const float v = pixel[p][c];
#pragma omp simd
            for (int o = 0; o < O; ++o) acc[p][o] += v * wc[o];
          }
        }
      }
    }
  }
}

template <int O>
void direct_fixed(const ConvShape& s, const float* x, const float* packed, const float* bias, float* y,
                  const ConvEpilogue& e) {
  const int64_t Ho = s.out_height, Wo = s.out_width, K = e.pool;
  const float floor = e.relu ? 0.0f : -std::numeric_limits<float>::infinity();
  if (K <= 1) {
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t oy = 0; oy < Ho; ++oy)
        for (int64_t ox0 = 0; ox0 < Wo; ox0 += kPixels) {
          float acc[kPixels][O];
          accumulate<O>(s, x, packed, bias, b, oy, ox0, acc);
          for (int p = 0; p < kPixels && ox0 + p < Wo; ++p) {
            float* out = y + ((b * Ho + oy) * Wo + ox0 + p) * O;
#pragma omp simd
            for (int o = 0; o < O; ++o) out[o] = std::max(acc[p][o], floor);
          }
        }
    return;
  }
  // Max pooling K x K (floor) fused: each pooled row takes the maximum of K
  // convolution rows, kept in the output row itself.
  const int64_t Hp = Ho / K, Wp = Wo / K;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t py = 0; py < Hp; ++py) {
      float* pooled = y + (b * Hp + py) * Wp * O;
      for (int64_t j = 0; j < Wp * O; ++j) pooled[j] = -std::numeric_limits<float>::infinity();
      for (int64_t r = 0; r < K; ++r)
        for (int64_t ox0 = 0; ox0 < Wp * K; ox0 += kPixels) {
          float acc[kPixels][O];
          accumulate<O>(s, x, packed, bias, b, py * K + r, ox0, acc);
          for (int p = 0; p < kPixels && ox0 + p < Wp * K; ++p) {
            float* out = pooled + ((ox0 + p) / K) * O;
#pragma omp simd
            for (int o = 0; o < O; ++o) out[o] = std::max(out[o], acc[p][o]);
          }
        }
      for (int64_t j = 0; j < Wp * O; ++j) pooled[j] = std::max(pooled[j], floor);
    }
}

void direct(const ConvShape& s, const float* x, const float* packed, const float* bias, float* y, const ConvEpilogue& e) {
  switch (s.out_channels) {
    case 4: return direct_fixed<4>(s, x, packed, bias, y, e);
    case 8: return direct_fixed<8>(s, x, packed, bias, y, e);
    case 16: return direct_fixed<16>(s, x, packed, bias, y, e);
    case 32: return direct_fixed<32>(s, x, packed, bias, y, e);
    case 64: return direct_fixed<64>(s, x, packed, bias, y, e);
    // The widths of invariance-audit's shipped U-Net (24, 48, 96) and their halves' sums.
    case 24: return direct_fixed<24>(s, x, packed, bias, y, e);
    case 48: return direct_fixed<48>(s, x, packed, bias, y, e);
    case 96: return direct_fixed<96>(s, x, packed, bias, y, e);
    default: break;
  }
  direct_any(s, x, packed, bias, y);
  const int64_t total = s.batch * s.out_height * s.out_width * s.out_channels;
  if (e.relu) {
#pragma omp parallel for simd schedule(static)
    for (int64_t j = 0; j < total; ++j) y[j] = std::max(y[j], 0.0f);
  }
}

}  // namespace

void softmax_rows_biased(const float* z, int64_t rows, int64_t V, const float* b, double* lse, double* acc) {
  std::vector<float> e(static_cast<size_t>(V));
  float* __restrict es = e.data();
  const float* __restrict bs = b;
  for (int64_t r = 0; r < rows; ++r) {
    const float* __restrict zs = z + r * V;
    float top = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : top)
    for (int64_t v = 0; v < V; ++v) top = std::max(top, zs[v] + bs[v]);
    double sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t v = 0; v < V; ++v) {
      es[v] = exp_clamped(zs[v] + bs[v] - top);
      sum += static_cast<double>(es[v]);
    }
    lse[r] = static_cast<double>(top) + std::log(sum);
    if (acc) {
      double* __restrict as = acc;
      const double inv = 1.0 / sum;
#pragma omp simd
      for (int64_t v = 0; v < V; ++v) as[v] += static_cast<double>(es[v]) * inv;
    }
  }
}

const VectorOps ops = {NK_VECTOR_ISA, normal_blocks, direct, silu, silu_backward, softmax_rows_biased};

}  // namespace nk::kernels::NK_VECTOR_NAMESPACE
