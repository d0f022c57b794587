// grad.cpp - grad(): dx, dk (and dbias) of <dy, conv(x)> for every method.
//
// dx[t] = sum_s k[s] dy[t+s] and dk[s] = sum_t dy[t] x[t-s] within each
// document are correlations, so they reuse the forward plan: dx is the
// inverse of conj(K) DY, dk the inverse of sum over items of conj(X) DY.
// Both are exact in the plan's windows: the admission rule that keeps the
// forward pass from wrapping (taps - 1 <= fft_size - length) keeps these from
// wrapping too.
#include "engine.hpp"
#include "engine_detail.hpp"

namespace rubiconv {

namespace {

using detail::Chunk;

/// Direct gradients of whole documents; parallel over channels so dk needs no locks.
template <class Acc, class Real>
void direct_grad(const Problem<Real>& p, const std::vector<Item>& items, const Real* dy, Real* dx,
                 std::vector<double>& dk) {
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
          double* dk_c = dk.data() + c * lk;
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

/// sum[c,f] = sum_i conj(a[i,c,f]) * b[i,c,f]
template <class Real>
void correlate_items(const std::complex<Real>* a, const std::complex<Real>* b, std::complex<Real>* sum, int64_t items,
                     int64_t block, int64_t bins) {
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < block; ++c) {
    std::complex<Real>* out = sum + c * bins;
    std::fill(out, out + bins, std::complex<Real>(0));
    for (int64_t i = 0; i < items; ++i) {
      const std::complex<Real>* ra = a + (i * block + c) * bins;
      const std::complex<Real>* rb = b + (i * block + c) * bins;
      for (int64_t f = 0; f < bins; ++f) out[f] += std::conj(ra[f]) * rb[f];
    }
  }
}

}  // namespace

template <class Real>
void grad(const Problem<Real>& p, const Plan& plan, const Real* dy, Real* dx, Real* dk, Real* dbias) {
  using Complex = std::complex<Real>;
  const int64_t h = p.channels, lk = p.filter_length;
  std::vector<double> dk_sum(static_cast<size_t>(h * lk), 0.0);
  if (plan.method == Method::direct) {
    direct_grad<double>(p, plan.direct, dy, dx, dk_sum);
  } else {
    direct_grad<Real>(p, plan.direct, dy, dx, dk_sum);
  }
  const int64_t rows_needed = detail::max_chunk_rows(plan, h, sizeof(Real));
  nk::AlignedVector<Real> rows_x(static_cast<size_t>(rows_needed)), rows_dy(static_cast<size_t>(rows_needed));
  nk::AlignedVector<Complex> spectra_x, spectra_dy, correlation;
  auto whole_doc = [](const Item& item) { return std::pair{item.doc_begin, item.doc_end}; };
  auto outputs = [](const Item& item) { return std::pair{item.out_begin, item.out_end}; };
  for (const Bucket& bucket : plan.buckets) {
    const int64_t n = bucket.fft_size, bins = nk::fft::bins(n);
    const nk::AlignedVector<Complex> filter = detail::filter_spectrum(p, bucket);
    for (const Chunk& chunk : detail::make_chunks(bucket.items, n, h, sizeof(Real), plan)) {
      const int64_t count = chunk.rows(), block = chunk.h_end - chunk.h_begin;
      const size_t needed = static_cast<size_t>(count * bins);
      if (spectra_x.size() < needed) {
        spectra_x.resize(needed);
        spectra_dy.resize(needed);
      }
      correlation.resize(std::max(correlation.size(), static_cast<size_t>(block * bins)));
      detail::gather(p.x, p.length, h, bucket.items, chunk, n, rows_x.data(), whole_doc);
      detail::gather(dy, p.length, h, bucket.items, chunk, n, rows_dy.data(), outputs);
      detail::parallel_forward(rows_x.data(), spectra_x.data(), n, count);
      detail::parallel_forward(rows_dy.data(), spectra_dy.data(), n, count);
      // dk: one inverse per chunk of the items' summed cross-spectra.
      correlate_items(spectra_x.data(), spectra_dy.data(), correlation.data(), static_cast<int64_t>(chunk.count),
                      block, bins);
      detail::parallel_inverse(correlation.data(), rows_x.data(), n, block);
#pragma omp parallel for schedule(static)
      for (int64_t c = 0; c < block; ++c) {
        double* target = dk_sum.data() + (chunk.h_begin + c) * lk;
        const Real* source = rows_x.data() + c * n;
        for (int64_t s = 0; s < bucket.taps; ++s) target[s] += source[s];
      }
      if (bucket.tiled) continue;  // dx of tiles needs look-ahead windows: below
      multiply_conjugate(spectra_dy.data(), filter.data() + chunk.h_begin * bins, static_cast<int64_t>(chunk.count),
                         block, bins);
      detail::parallel_inverse(spectra_dy.data(), rows_dy.data(), n, count);
      detail::scatter(rows_dy.data(), bucket.items, chunk, n, p.length, h, dx, p.bias ? dy : nullptr, p.bias);
    }
    for (const Chunk& chunk : detail::make_chunks(bucket.anticausal, n, h, sizeof(Real), plan)) {
      const int64_t count = chunk.rows(), block = chunk.h_end - chunk.h_begin;
      spectra_dy.resize(std::max(spectra_dy.size(), static_cast<size_t>(count * bins)));
      detail::gather(dy, p.length, h, bucket.anticausal, chunk, n, rows_dy.data(), whole_doc);
      detail::parallel_forward(rows_dy.data(), spectra_dy.data(), n, count);
      multiply_conjugate(spectra_dy.data(), filter.data() + chunk.h_begin * bins, static_cast<int64_t>(chunk.count),
                         block, bins);
      detail::parallel_inverse(spectra_dy.data(), rows_dy.data(), n, count);
      detail::scatter(rows_dy.data(), bucket.anticausal, chunk, n, p.length, h, dx, p.bias ? dy : nullptr, p.bias);
    }
  }
  for (int64_t i = 0; i < h * lk; ++i) dk[i] = static_cast<Real>(dk_sum[static_cast<size_t>(i)]);
  if (p.bias && dbias) {
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
