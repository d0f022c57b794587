// grad.cpp - grad(): dx, dk (and dbias) of <dy, conv(x)> for every method.
//
// dx[t] = sum_s k[s] dy[t+s] and dk[s] = sum_t dy[t] x[t-s] within each
// document are correlations, so they reuse the forward plan: dx is the
// inverse of conj(K) DY, dk the inverse of sum over items of conj(X) DY.
// Both are exact in the plan's windows: the admission rule that keeps the
// forward pass from wrapping (taps - 1 <= fft_size - length) keeps these from
// wrapping too.
#include "rubiconv/engine.hpp"
#include "rubiconv/engine_detail.hpp"

namespace rubiconv {

namespace {

/// Direct gradients of whole documents; parallel over channels so dk needs no locks.
template <class Acc, class Real>
void direct_grad(const Problem<Real>& p, const std::vector<Item>& items, const Real* dy, Real* dx,
                 std::vector<double>& dk, int64_t reach) {
  if (items.empty()) return;
  const int64_t h = p.channels, lk = p.filter_length;
#pragma omp parallel
  {
    const int64_t threads = omp_get_num_threads(), me = omp_get_thread_num();
    const int64_t c0 = h * me / threads, c1 = h * (me + 1) / threads;
    std::vector<Acc> acc(static_cast<size_t>(h));
    for (const Item& item : items) {
      const int64_t base = item.row * p.length * h;
      for (int64_t t = item.doc_begin; t < item.doc_end; ++t) {
        const int64_t ahead = std::min(lk - 1, item.doc_end - 1 - t);
        for (int64_t c = c0; c < c1; ++c) {
          Acc sum = 0;
          for (int64_t s = 0; s <= ahead; ++s) sum += static_cast<Acc>(p.k[c * lk + s]) * dy[base + (t + s) * h + c];
          if (p.bias) sum += static_cast<Acc>(p.bias[c]) * dy[base + t * h + c];
          dx[base + t * h + c] = static_cast<Real>(sum);
          const int64_t behind = std::min(lk - 1, t - item.doc_begin);
          const double g = dy[base + t * h + c];
          double* dk_c = dk.data() + c * reach;
          for (int64_t s = 0; s <= behind; ++s) dk_c[s] += g * static_cast<double>(p.x[base + (t - s) * h + c]);
        }
      }
    }
  }
}

/// spectra[i,c,f] = conj(filter[c,f]) * spectra[i,c,f]
template <class Real>
void multiply_conjugate(std::complex<Real>* spectra, const std::complex<Real>* filter, int64_t items, int64_t block,
                        int64_t bins) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t i = 0; i < items; ++i)
    for (int64_t c = 0; c < block; ++c) {
      std::complex<Real>* row = spectra + (i * block + c) * bins;
      const std::complex<Real>* k = filter + c * bins;
      for (int64_t f = 0; f < bins; ++f) row[f] = std::conj(k[f]) * row[f];
    }
}

/// One bucket, fused like apply: each task (an item and a block of channels)
/// transforms its x and dy windows once; conj(X) DY is summed per thread over
/// the bucket (or, when that sum would be too large, inverted per task), and
/// conj(K) DY gives dx.
template <class Real>
void grad_bucket(const Problem<Real>& p, const Plan& plan, const Bucket& bucket, const Real* dy, Real* dx,
                 std::vector<double>& dk_sum, int64_t reach, nk::AlignedVector<std::complex<Real>>& filter) {
  using Complex = std::complex<Real>;
  const int64_t n = bucket.fft_size, bins = nk::fft::bins(n), h = p.channels;
  detail::filter_spectrum(p, bucket, filter);
  const int64_t block = std::clamp<int64_t>(plan.task_bytes / (n * static_cast<int64_t>(sizeof(Real)) * 6), 1, h);
  const int64_t blocks = (h + block - 1) / block, per_call = detail::rows_per_call(n);
  // Summing conj(X) DY per thread saves an inverse per task, worth it while
  // the sums stay small and the bucket has several tasks per thread.
  const bool per_thread_sum = h * bins * static_cast<int64_t>(sizeof(Complex)) <= (int64_t{4} << 20) &&
                              static_cast<int64_t>(bucket.items.size()) >= 4 * omp_get_max_threads();
  auto forward = [&](const Real* rows, Complex* spectra, int64_t count) {
    for (int64_t r = 0; r < count; r += per_call) nk::fft::forward(rows + r * n, spectra + r * bins, n, std::min(per_call, count - r));
  };
  auto inverse = [&](Complex* spectra, Real* rows, int64_t count) {
    for (int64_t r = 0; r < count; r += per_call) nk::fft::inverse_destroying(spectra + r * bins, rows + r * n, n, std::min(per_call, count - r));
  };
  auto add_taps = [&](const Real* rows, int64_t h0, int64_t count) {
#pragma omp critical(rubiconv_dk)
    for (int64_t c = 0; c < count; ++c) {
      double* target = dk_sum.data() + (h0 + c) * reach;
      for (int64_t s = 0; s < bucket.taps; ++s) target[s] += rows[c * n + s];
    }
  };
  auto dx_from = [&](Complex* spectra, Real* rows, const Item& item, int64_t h0, int64_t h1) {
    multiply_conjugate(spectra, filter.data() + h0 * bins, 1, h1 - h0, bins);
    inverse(spectra, rows, h1 - h0);
    detail::scatter_item(rows, item, h0, h1, n, item.out_begin, item.out_end, p.length, h, dx, p.bias ? dy : nullptr, p.bias);
  };
  const auto tasks = static_cast<int64_t>(bucket.items.size()) * blocks;
  const auto lookahead_tasks = static_cast<int64_t>(bucket.anticausal.size()) * blocks;
#pragma omp parallel
  {
    nk::AlignedVector<Real> rows_x(static_cast<size_t>(block * n)), rows_dy(static_cast<size_t>(block * n));
    nk::AlignedVector<Complex> spectra_x(static_cast<size_t>(block * bins)), spectra_dy(static_cast<size_t>(block * bins));
    nk::AlignedVector<Complex> sum(per_thread_sum ? static_cast<size_t>(h * bins) : 0, Complex(0));
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; ++task) {
      const Item& item = bucket.items[static_cast<size_t>(task / blocks)];
      const int64_t h0 = (task % blocks) * block, h1 = std::min(h, h0 + block), count = h1 - h0;
      detail::gather_item(p.x, p.length, h, item, h0, h1, n, 0, n, item.doc_begin, item.doc_end, rows_x.data());
      detail::gather_item(dy, p.length, h, item, h0, h1, n, 0, n, item.out_begin, item.out_end, rows_dy.data());
      forward(rows_x.data(), spectra_x.data(), count);
      forward(rows_dy.data(), spectra_dy.data(), count);
      if (per_thread_sum) {
        for (int64_t c = 0; c < count; ++c) {
          Complex* out = sum.data() + (h0 + c) * bins;
          const Complex* a = spectra_x.data() + c * bins;
          const Complex* b = spectra_dy.data() + c * bins;
          for (int64_t f = 0; f < bins; ++f) out[f] += std::conj(a[f]) * b[f];
        }
      } else {
        for (int64_t i = 0; i < count * bins; ++i) spectra_x[static_cast<size_t>(i)] = std::conj(spectra_x[static_cast<size_t>(i)]) * spectra_dy[static_cast<size_t>(i)];
        inverse(spectra_x.data(), rows_x.data(), count);
        add_taps(rows_x.data(), h0, count);
      }
      if (!bucket.tiled) dx_from(spectra_dy.data(), rows_dy.data(), item, h0, h1);
    }
    // dx of overlap-save tiles needs windows that look ahead of their outputs.
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < lookahead_tasks; ++task) {
      const Item& item = bucket.anticausal[static_cast<size_t>(task / blocks)];
      const int64_t h0 = (task % blocks) * block, h1 = std::min(h, h0 + block);
      detail::gather_item(dy, p.length, h, item, h0, h1, n, 0, n, item.doc_begin, item.doc_end, rows_dy.data());
      forward(rows_dy.data(), spectra_dy.data(), h1 - h0);
      dx_from(spectra_dy.data(), rows_dy.data(), item, h0, h1);
    }
    if (per_thread_sum) {
      for (int64_t h0 = 0; h0 < h; h0 += block) {
        const int64_t count = std::min(block, h - h0);
        inverse(sum.data() + h0 * bins, rows_x.data(), count);
        add_taps(rows_x.data(), h0, count);
      }
    }
  }
}

}  // namespace

template <class Real>
void grad(const Problem<Real>& p, const Plan& plan, const Real* dy, Real* dx, Real* dk, Real* dbias) {
  const int64_t h = p.channels, lk = p.filter_length;
  // Taps beyond the longest document get no gradient: sum only the reachable ones.
  int64_t reach = 0;
  for (const Bucket& bucket : plan.buckets) reach = std::max(reach, bucket.taps);
  for (const Item& item : plan.direct) reach = std::max(reach, std::min(lk, item.doc_end - item.doc_begin));
  std::vector<double> dk_sum(static_cast<size_t>(h * reach), 0.0);
  if (plan.method == Method::direct) {
    direct_grad<double>(p, plan.direct, dy, dx, dk_sum, reach);
  } else {
    direct_grad<Real>(p, plan.direct, dy, dx, dk_sum, reach);
  }
  nk::AlignedVector<std::complex<Real>> filter;
  for (const Bucket& bucket : plan.buckets) grad_bucket(p, plan, bucket, dy, dx, dk_sum, reach, filter);
  for (int64_t c = 0; c < h; ++c) {
    for (int64_t s = 0; s < lk; ++s) dk[c * lk + s] = s < reach ? static_cast<Real>(dk_sum[static_cast<size_t>(c * reach + s)]) : Real(0);
  }
  if (p.bias && dbias) {
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < h; ++c) {
      double sum = 0;
      for (int64_t position = 0; position < p.batch * p.length; ++position) {
        sum += static_cast<double>(dy[position * h + c]) * p.x[position * h + c];
      }
      dbias[c] = static_cast<Real>(sum);
    }
  }
}

template void grad<float>(const Problem<float>&, const Plan&, const float*, float*, float*, float*);
template void grad<double>(const Problem<double>&, const Plan&, const double*, double*, double*, double*);

}  // namespace rubiconv
