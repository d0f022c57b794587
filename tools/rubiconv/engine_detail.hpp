// engine_detail.hpp - pieces of the engine shared by apply (engine.cpp) and grad (grad.cpp).
#pragma once
#include <omp.h>

#include <algorithm>
#include <complex>
#include <vector>

#include "engine.hpp"
#include "nk/aligned.hpp"
#include "nk/fft.hpp"

namespace rubiconv::detail {

/// A group of items of one bucket and a block of channels, processed together.
struct Chunk {
  size_t first = 0, count = 0;   ///< items [first, first + count) of the bucket's list
  int64_t h_begin = 0, h_end = 0;
  int64_t rows() const { return static_cast<int64_t>(count) * (h_end - h_begin); }
};

/// Splits a bucket's items into chunks whose real buffer fits plan.chunk_bytes;
/// an item larger than that is split by channels (never below one channel per thread).
std::vector<Chunk> make_chunks(const std::vector<Item>& items, int64_t fft_size, int64_t channels,
                               size_t real_size, const Plan& plan);

/// Largest chunk buffer (in rows) any bucket of the plan uses.
int64_t max_chunk_rows(const Plan& plan, int64_t channels, size_t real_size);

/// Copies inputs of one chunk into rows [item][channel][position] of 'rows';
/// positions outside [valid_begin(item), valid_end(item)) become zero.
template <class Real, class Valid>
void gather(const Real* source, int64_t length, int64_t channels, const std::vector<Item>& items, const Chunk& chunk,
            int64_t fft_size, Real* rows, Valid valid) {
  const int64_t block = chunk.h_end - chunk.h_begin;
  constexpr int64_t kPositions = 512;
  const int64_t pieces = (fft_size + kPositions - 1) / kPositions;
  const int64_t tasks = static_cast<int64_t>(chunk.count) * pieces;
#pragma omp parallel for schedule(static)
  for (int64_t task = 0; task < tasks; ++task) {
    const Item& item = items[chunk.first + static_cast<size_t>(task / pieces)];
    const auto [lo, hi] = valid(item);
    Real* item_rows = rows + (task / pieces) * block * fft_size;
    const int64_t q_begin = (task % pieces) * kPositions, q_end = std::min(fft_size, q_begin + kPositions);
    // Buffer positions [copy_begin, copy_end) hold data, the rest of the piece is zero padding.
    const int64_t copy_begin = std::clamp(lo - item.window_begin, q_begin, q_end);
    const int64_t copy_end = std::clamp(hi - item.window_begin, copy_begin, q_end);
    for (int64_t c = 0; c < block; ++c) {
      Real* row = item_rows + c * fft_size;
      std::fill(row + q_begin, row + copy_begin, Real(0));
      std::fill(row + copy_end, row + q_end, Real(0));
    }
    // Transpose [position][channel] -> [channel][position] in tiles that stay in L1.
    constexpr int64_t kTile = 16;
    const Real* in = source + (item.row * length + item.window_begin) * channels + chunk.h_begin;
    for (int64_t q0 = copy_begin; q0 < copy_end; q0 += kTile) {
      const int64_t q1 = std::min(copy_end, q0 + kTile);
      for (int64_t c = 0; c < block; ++c) {
        Real* row = item_rows + c * fft_size;
        for (int64_t q = q0; q < q1; ++q) row[q] = in[q * channels + c];
      }
    }
  }
}

/// Writes outputs [out_begin, out_end) of each item from 'rows' into target
/// [B,L,H], adding scale[h] * addend[b,t,h] when addend is given.
template <class Real>
void scatter(const Real* rows, const std::vector<Item>& items, const Chunk& chunk, int64_t fft_size, int64_t length,
             int64_t channels, Real* target, const Real* addend, const Real* scale) {
  const int64_t block = chunk.h_end - chunk.h_begin;
  constexpr int64_t kPositions = 256;
  std::vector<int64_t> task_item, task_start;
  for (size_t i = 0; i < chunk.count; ++i) {
    const Item& item = items[chunk.first + i];
    for (int64_t t = item.out_begin; t < item.out_end; t += kPositions) {
      task_item.push_back(static_cast<int64_t>(i));
      task_start.push_back(t);
    }
  }
  const auto tasks = static_cast<int64_t>(task_item.size());
#pragma omp parallel for schedule(static)
  for (int64_t task = 0; task < tasks; ++task) {
    const Item& item = items[chunk.first + static_cast<size_t>(task_item[task])];
    const Real* item_rows = rows + task_item[task] * block * fft_size;
    const int64_t t_end = std::min(item.out_end, task_start[task] + kPositions);
    for (int64_t t = task_start[task]; t < t_end; ++t) {
      const int64_t q = t - item.window_begin;
      const int64_t offset = (item.row * length + t) * channels + chunk.h_begin;
      Real* out = target + offset;
      for (int64_t c = 0; c < block; ++c) out[c] = item_rows[c * fft_size + q];
      if (addend) {
        for (int64_t c = 0; c < block; ++c) out[c] += scale[chunk.h_begin + c] * addend[offset + c];
      }
    }
  }
}

/// Rows per FFT call: a fixed group per size keeps the number of distinct
/// FFTW plans (one per size and batch count) small, whatever the chunk's row
/// count; about 32K points a call, one row for long transforms.
inline int64_t rows_per_call(int64_t fft_size) { return std::clamp<int64_t>(32768 / fft_size, 1, 8); }

/// Batched forward transforms of 'count' rows, groups of rows spread over the threads.
template <class Real>
void parallel_forward(const Real* rows, std::complex<Real>* spectra, int64_t fft_size, int64_t count) {
  const int64_t per_call = rows_per_call(fft_size);
  const int64_t bins = nk::fft::bins(fft_size), groups = (count + per_call - 1) / per_call;
#pragma omp parallel for schedule(static)
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t begin = g * per_call, rows_here = std::min(per_call, count - begin);
    nk::fft::forward(rows + begin * fft_size, spectra + begin * bins, fft_size, rows_here);
  }
}

/// Inverse transforms; the spectra are overwritten.
template <class Real>
void parallel_inverse(std::complex<Real>* spectra, Real* rows, int64_t fft_size, int64_t count) {
  const int64_t per_call = rows_per_call(fft_size);
  const int64_t bins = nk::fft::bins(fft_size), groups = (count + per_call - 1) / per_call;
#pragma omp parallel for schedule(static)
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t begin = g * per_call, rows_here = std::min(per_call, count - begin);
    nk::fft::inverse_destroying(spectra + begin * bins, rows + begin * fft_size, fft_size, rows_here);
  }
}

/// The bucket's filter spectrum: rfft of k[h, 0:taps] zero-padded to fft_size, [H, bins].
template <class Real>
nk::AlignedVector<std::complex<Real>> filter_spectrum(const Problem<Real>& problem, const Bucket& bucket) {
  const int64_t n = bucket.fft_size, h = problem.channels;
  nk::AlignedVector<Real> padded(static_cast<size_t>(h * n), Real(0));
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < h; ++c) {
    std::copy(problem.k + c * problem.filter_length, problem.k + c * problem.filter_length + bucket.taps,
              padded.begin() + c * n);
  }
  nk::AlignedVector<std::complex<Real>> spectrum(static_cast<size_t>(h * nk::fft::bins(n)));
  parallel_forward(padded.data(), spectrum.data(), n, h);
  return spectrum;
}

}  // namespace rubiconv::detail
