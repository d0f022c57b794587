// vector.hpp - CPU loops that the compiler vectorises, compiled once per
// instruction set (generic, AVX2 + FMA, AVX-512) and picked at run time like
// the GEMMs (NK_KERNELS_ISA caps the choice): Gaussian noise in blocks, a
// direct NHWC convolution for layers with few taps, SiLU and biased softmax
// rows.
#pragma once
#include <cstdint>

#include "nk/rng.hpp"

namespace nk::kernels {

/// out[0..n) = scale * N(0, 1) draws in float: Box-Muller over blocks of
/// uniforms (two 24-bit uniforms u, v per 64-bit draw of 'rng'), with log and
/// sincos as short polynomials (errors below 1e-6 absolute on the draws), so
/// that the block loop vectorises; consumes ceil(n / 2) draws. The same draws
/// give the same values in every instruction-set copy up to float rounding.
void fill_normal(Rng& rng, float* out, int64_t n, float scale = 1.0f);

/// A convolution's sizes: input [batch, height, width, channels] (NHWC),
/// output [batch, out_height, out_width, out_channels], square kernel,
/// one stride and zero padding.
struct ConvShape {
  int64_t batch, height, width, channels, out_channels, out_height, out_width, kernel, stride, pad;
};

/// Largest taps (channels * kernel^2) and out_channels conv2d_direct takes.
inline constexpr int64_t kDirectConvMaxTaps = 512, kDirectConvMaxOut = 256;

/// What conv2d_direct applies to its outputs before writing them: relu, then
/// (only with relu, for 4, 8, 16, 32 or 64 output channels) max pooling over
/// pool x pool windows with stride pool (floor), so y is the pooled map.
struct ConvEpilogue {
  bool relu = false;
  int64_t pool = 1;
};

/// y = conv(x, w) + bias, directly (no column matrix): 'packed' holds the
/// weights as [kernel, kernel, channels, out_channels], so the innermost loop
/// runs over contiguous output channels; then the epilogue. OpenMP over batch
/// and output rows.
void conv2d_direct(const ConvShape& s, const float* x, const float* packed, const float* bias, float* y,
                   const ConvEpilogue& epilogue = {});

/// y = x sigmoid(x), and dx = dy d(x sigmoid(x))/dx, over n floats (OpenMP);
/// exp by a polynomial with the argument clamped to [-87, 88]: within a few
/// float ulps of std::exp, so of x / (1 + exp(-x)).
void silu(const float* x, float* y, int64_t n);
void silu_backward(const float* x, const float* dy, float* dx, int64_t n);

/// Softmax rows under a shared bias, on the calling thread: for each row r
/// of z [rows, V], s = z_r + b, lse[r] = log sum_v exp(s_v) (max-shifted,
/// the sum in double), and where acc is not null acc[v] += softmax(s)_v.
/// exp as silu's (a few float ulps); the same result for a row wherever it
/// sits in z.
void softmax_rows_biased(const float* z, int64_t rows, int64_t V, const float* b, double* lse, double* acc);

/// Which copy runs ("generic", "avx2", "avx512"), as gemm_isa().
const char* vector_isa();

}  // namespace nk::kernels
