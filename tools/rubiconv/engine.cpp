// engine.cpp - apply(): the forward convolution of every method.
#include "engine.hpp"

#include "engine_detail.hpp"
#include "nk/kernels/spectral.hpp"

namespace rubiconv {

namespace detail {

std::vector<Chunk> make_chunks(const std::vector<Item>& items, int64_t fft_size, int64_t channels, size_t real_size,
                               const Plan& plan) {
  std::vector<Chunk> chunks;
  const int64_t threads = omp_get_max_threads();
  const int64_t row_bytes = fft_size * static_cast<int64_t>(real_size);
  const int64_t item_bytes = row_bytes * channels;
  if (item_bytes > plan.chunk_bytes) {
    // One item is too large: split its channels, at least one row per thread.
    const int64_t block = std::min(channels, std::max(threads, plan.chunk_bytes / row_bytes));
    for (size_t i = 0; i < items.size(); ++i)
      for (int64_t h = 0; h < channels; h += block) chunks.push_back({i, 1, h, std::min(channels, h + block)});
    return chunks;
  }
  int64_t per_chunk = std::max<int64_t>(1, plan.chunk_bytes / item_bytes);
  if (plan.max_chunk_items > 0) per_chunk = std::min(per_chunk, plan.max_chunk_items);
  for (size_t i = 0; i < items.size(); i += static_cast<size_t>(per_chunk)) {
    chunks.push_back({i, std::min(items.size() - i, static_cast<size_t>(per_chunk)), 0, channels});
  }
  return chunks;
}

int64_t max_chunk_rows(const Plan& plan, int64_t channels, size_t real_size) {
  int64_t rows = 0;
  for (const Bucket& bucket : plan.buckets) {
    for (const auto* list : {&bucket.items, &bucket.anticausal}) {
      for (const Chunk& chunk : make_chunks(*list, bucket.fft_size, channels, real_size, plan)) {
        rows = std::max(rows, chunk.rows() * bucket.fft_size);
      }
    }
  }
  return rows;
}

}  // namespace detail

int64_t engine_buffer_bytes(const Plan& plan, int64_t channels, int64_t real_size, bool gradients) {
  int64_t largest_spectrum = 0;
  for (const Bucket& b : plan.buckets) largest_spectrum = std::max(largest_spectrum, channels * nk::fft::bins(b.fft_size));
  const int64_t rows = detail::max_chunk_rows(plan, channels, static_cast<size_t>(real_size));
  // real rows + complex rows (about the same bytes) + the bucket's filter spectrum
  const int64_t per_set = rows * real_size * 2 + 2 * real_size * channels;
  return (gradients ? 2 : 1) * per_set + largest_spectrum * 2 * real_size;
}

namespace {

using detail::Chunk;

/// Direct convolution of whole documents, accumulating in Acc; parallel over documents.
template <class Acc, class Real>
void direct_apply(const Problem<Real>& p, const std::vector<Item>& items, Real* y) {
  if (items.empty()) return;
  int64_t longest = 0;
  for (const Item& item : items) longest = std::max(longest, item.doc_end - item.doc_begin);
  const int64_t taps = std::min(longest, p.filter_length), h = p.channels;
  std::vector<Acc> k_by_tap(static_cast<size_t>(taps * h));  // [s][h]: contiguous channels per tap
  for (int64_t c = 0; c < h; ++c)
    for (int64_t s = 0; s < taps; ++s) k_by_tap[static_cast<size_t>(s * h + c)] = p.k[c * p.filter_length + s];
#pragma omp parallel
  {
    std::vector<Acc> acc(static_cast<size_t>(h));
#pragma omp for schedule(dynamic, 1)
    for (size_t i = 0; i < items.size(); ++i) {
      const Item& item = items[i];
      const Real* x_row = p.x + item.row * p.length * h;
      Real* y_row = y + item.row * p.length * h;
      for (int64_t t = item.doc_begin; t < item.doc_end; ++t) {
        std::fill(acc.begin(), acc.end(), Acc(0));
        const int64_t last = std::min(t - item.doc_begin, taps - 1);
        for (int64_t s = 0; s <= last; ++s) {
          const Real* xs = x_row + (t - s) * h;
          const Acc* ks = k_by_tap.data() + s * h;
          for (int64_t c = 0; c < h; ++c) acc[static_cast<size_t>(c)] += ks[c] * static_cast<Acc>(xs[c]);
        }
        for (int64_t c = 0; c < h; ++c) {
          Acc value = acc[static_cast<size_t>(c)];
          if (p.bias) value += static_cast<Acc>(p.bias[c]) * static_cast<Acc>(x_row[t * h + c]);
          y_row[t * h + c] = static_cast<Real>(value);
        }
      }
    }
  }
}

}  // namespace

template <class Real>
void apply(const Problem<Real>& p, const Plan& plan, Real* y) {
  using Complex = std::complex<Real>;
  if (plan.method == Method::direct) {
    direct_apply<double>(p, plan.direct, y);
    return;
  }
  direct_apply<Real>(p, plan.direct, y);
  const int64_t rows_needed = detail::max_chunk_rows(plan, p.channels, sizeof(Real));
  nk::AlignedVector<Real> rows(static_cast<size_t>(rows_needed));
  nk::AlignedVector<Complex> spectra;
  for (const Bucket& bucket : plan.buckets) {
    const int64_t n = bucket.fft_size, bins = nk::fft::bins(n);
    const nk::AlignedVector<Complex> filter = detail::filter_spectrum(p, bucket);
    for (const Chunk& chunk : detail::make_chunks(bucket.items, n, p.channels, sizeof(Real), plan)) {
      const int64_t count = chunk.rows();
      spectra.resize(std::max(spectra.size(), static_cast<size_t>(count * bins)));
      detail::gather(p.x, p.length, p.channels, bucket.items, chunk, n, rows.data(),
                     [](const Item& item) { return std::pair{item.doc_begin, item.doc_end}; });
      detail::parallel_forward(rows.data(), spectra.data(), n, count);
      nk::kernels::spectral_multiply_cpu(spectra.data(), filter.data() + chunk.h_begin * bins, spectra.data(),
                                         static_cast<long>(chunk.count), chunk.h_end - chunk.h_begin, bins);
      detail::parallel_inverse(spectra.data(), rows.data(), n, count);
      detail::scatter(rows.data(), bucket.items, chunk, n, p.length, p.channels, y, p.bias ? p.x : nullptr, p.bias);
    }
  }
}

template void apply<float>(const Problem<float>&, const Plan&, float*);
template void apply<double>(const Problem<double>&, const Plan&, double*);

}  // namespace rubiconv
