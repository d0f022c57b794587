// engine_detail.hpp - pieces of the engine shared by apply (engine.cpp) and grad (grad.cpp).
#pragma once
#include <omp.h>

#include <algorithm>
#include <complex>
#include <vector>

#include "rubiconv/engine.hpp"
#include "nk/aligned.hpp"
#include "nk/kernels/fft.hpp"

namespace rubiconv::detail {

/// Copies positions [q_begin, q_end) of channels [h_begin, h_end) of one
/// item's window into rows[channel][position] (row stride fft_size); positions
/// outside [lo, hi) of the row become zero. Serial: callers parallelise.
template <class Real>
void gather_item(const Real* source, int64_t length, int64_t channels, const Item& item, int64_t h_begin,
                 int64_t h_end, int64_t fft_size, int64_t q_begin, int64_t q_end, int64_t lo, int64_t hi, Real* rows) {
  const int64_t block = h_end - h_begin;
  // Buffer positions [copy_begin, copy_end) hold data, the rest is zero padding.
  const int64_t copy_begin = std::clamp(lo - item.window_begin, q_begin, q_end);
  const int64_t copy_end = std::clamp(hi - item.window_begin, copy_begin, q_end);
  for (int64_t c = 0; c < block; ++c) {
    Real* row = rows + c * fft_size;
    std::fill(row + q_begin, row + copy_begin, Real(0));
    std::fill(row + copy_end, row + q_end, Real(0));
  }
  // Transpose [position][channel] -> [channel][position] in tiles that stay in L1.
  constexpr int64_t kTile = 16;
  const Real* in = source + (item.row * length + item.window_begin) * channels + h_begin;
  for (int64_t q0 = copy_begin; q0 < copy_end; q0 += kTile) {
    const int64_t q1 = std::min(copy_end, q0 + kTile);
    for (int64_t c = 0; c < block; ++c) {
      Real* row = rows + c * fft_size;
      for (int64_t q = q0; q < q1; ++q) row[q] = in[q * channels + c];
    }
  }
}

/// Writes outputs [t_begin, t_end) of channels [h_begin, h_end) of one item
/// from rows[channel][position] into target [B,L,H], adding
/// scale[h] * addend[b,t,h] when addend is given. Serial.
template <class Real>
void scatter_item(const Real* rows, const Item& item, int64_t h_begin, int64_t h_end, int64_t fft_size,
                  int64_t t_begin, int64_t t_end, int64_t length, int64_t channels, Real* target, const Real* addend,
                  const Real* scale) {
  const int64_t block = h_end - h_begin;
  for (int64_t t = t_begin; t < t_end; ++t) {
    const int64_t q = t - item.window_begin;
    const int64_t offset = (item.row * length + t) * channels + h_begin;
    Real* out = target + offset;
    for (int64_t c = 0; c < block; ++c) out[c] = rows[c * fft_size + q];
    if (addend) {
      for (int64_t c = 0; c < block; ++c) out[c] += scale[h_begin + c] * addend[offset + c];
    }
  }
}

/// Rows per FFT call: a fixed group per size keeps the number of distinct
/// FFTW plans (one per size and batch count) small, whatever the chunk's row
/// count; about 32K points a call, one row for long transforms.
inline int64_t rows_per_call(int64_t fft_size) { return std::clamp<int64_t>(32768 / fft_size, 1, 8); }

/// The bucket's filter spectrum: rfft of k[h, 0:taps] zero-padded to
/// fft_size, [H, bins], written into 'spectrum' (reused across buckets so
/// that large buckets do not fault in fresh pages every time).
template <class Real>
void filter_spectrum(const Problem<Real>& problem, const Bucket& bucket, nk::AlignedVector<std::complex<Real>>& spectrum) {
  const int64_t n = bucket.fft_size, h = problem.channels, bins = nk::fft::bins(n);
  if (spectrum.size() < static_cast<size_t>(h * bins)) spectrum.resize(static_cast<size_t>(h * bins));
#pragma omp parallel
  {
    nk::AlignedVector<Real> row(static_cast<size_t>(n), Real(0));
#pragma omp for schedule(static)
    for (int64_t c = 0; c < h; ++c) {
      const Real* taps = problem.k + c * problem.filter_length;
      std::copy(taps, taps + bucket.taps, row.begin());
      std::fill(row.begin() + bucket.taps, row.end(), Real(0));
      nk::fft::forward(row.data(), spectrum.data() + c * bins, n, 1);
    }
  }
}

}  // namespace rubiconv::detail
