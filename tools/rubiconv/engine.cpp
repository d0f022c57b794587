// engine.cpp - apply(): the forward convolution of every method.
#include "rubiconv/engine.hpp"

#include "rubiconv/engine_detail.hpp"
#include "nk/kernels/spectral.hpp"

namespace rubiconv {


namespace {

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

/// Channels per task so that a task's rows and spectra stay in a core's cache.
int64_t channels_per_task(int64_t fft_size, int64_t channels, size_t real_size, int64_t budget_bytes) {
  const int64_t per_channel = fft_size * static_cast<int64_t>(real_size) * 3;  // rows + spectra
  return std::clamp<int64_t>(budget_bytes / per_channel, 1, channels);
}

/// One bucket, fused: each task (an item and a block of channels) is gathered,
/// transformed, multiplied, transformed back and scattered by one thread while
/// its buffers are still in cache.
template <class Real>
void apply_bucket(const Problem<Real>& p, const Plan& plan, const Bucket& bucket, Real* y,
                  nk::AlignedVector<std::complex<Real>>& filter) {
  using Complex = std::complex<Real>;
  const int64_t n = bucket.fft_size, bins = nk::fft::bins(n), h = p.channels;
  detail::filter_spectrum(p, bucket, filter);
  const int64_t block = channels_per_task(n, h, sizeof(Real), plan.task_bytes);
  const int64_t blocks = (h + block - 1) / block;
  const auto tasks = static_cast<int64_t>(bucket.items.size()) * blocks;
  const int64_t per_call = detail::rows_per_call(n);
#pragma omp parallel
  {
    nk::AlignedVector<Real> rows(static_cast<size_t>(block * n));
    nk::AlignedVector<Complex> spectra(static_cast<size_t>(block * bins));
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; ++task) {
      const Item& item = bucket.items[static_cast<size_t>(task / blocks)];
      const int64_t h0 = (task % blocks) * block, h1 = std::min(h, h0 + block), count = h1 - h0;
      detail::gather_item(p.x, p.length, h, item, h0, h1, n, 0, n, item.doc_begin, item.doc_end, rows.data());
      for (int64_t r = 0; r < count; r += per_call) {
        nk::fft::forward(rows.data() + r * n, spectra.data() + r * bins, n, std::min(per_call, count - r));
      }
      nk::kernels::spectral_multiply_cpu_serial(spectra.data(), filter.data() + h0 * bins, spectra.data(), 1, count,
                                                bins);
      for (int64_t r = 0; r < count; r += per_call) {
        nk::fft::inverse_destroying(spectra.data() + r * bins, rows.data() + r * n, n, std::min(per_call, count - r));
      }
      detail::scatter_item(rows.data(), item, h0, h1, n, item.out_begin, item.out_end, p.length, h, y,
                           p.bias ? p.x : nullptr, p.bias);
    }
  }
}

}  // namespace

template <class Real>
void apply(const Problem<Real>& p, const Plan& plan, Real* y) {
  if (plan.method == Method::direct) {
    direct_apply<double>(p, plan.direct, y);
    return;
  }
  direct_apply<Real>(p, plan.direct, y);
  nk::AlignedVector<std::complex<Real>> filter;
  for (const Bucket& bucket : plan.buckets) apply_bucket(p, plan, bucket, y, filter);
}

template void apply<float>(const Problem<float>&, const Plan&, float*);
template void apply<double>(const Problem<double>&, const Plan&, double*);

}  // namespace rubiconv
