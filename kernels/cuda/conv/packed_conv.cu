// packed_conv.cu - rubiconv's plans run on the GPU: exact causal convolution
// of packed documents with batched cuFFT. CPU twin: tools/rubiconv/engine.cpp
// (the comparison test is in tests/unit/rubiconv.cpp).
//
// The plan (made on the CPU) lists FFT-size buckets of windows. Per bucket:
// the filter spectrum (taps k[h, 0:taps], zero padded, scaled by 1/N) is one
// batched R2C; the windows are taken in chunks: a tiled transpose gathers
// [position][channel] into rows [window][channel][position] (zeros outside the
// window's document), batched R2C, pointwise product with the filter
// spectrum, batched C2R, and a transposing scatter writes the window's kept
// outputs (plus bias x) back into the packed [B,L,H] layout. Short documents
// are convolved directly, one CTA per document. cuFFT plans share one
// work area; plans and buffers are made before the timed part.
#include <cufft.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "../common.cuh"

namespace nk::cuda {

namespace {

template <class Real>
struct Fft;
template <>
struct Fft<float> {
  using Complex = cufftComplex;
  static constexpr cufftType forward = CUFFT_R2C, inverse = CUFFT_C2R;
  static cufftResult r2c(cufftHandle p, float* in, Complex* out) { return cufftExecR2C(p, in, out); }
  static cufftResult c2r(cufftHandle p, Complex* in, float* out) { return cufftExecC2R(p, in, out); }
};
template <>
struct Fft<double> {
  using Complex = cufftDoubleComplex;
  static constexpr cufftType forward = CUFFT_D2Z, inverse = CUFFT_Z2D;
  static cufftResult r2c(cufftHandle p, double* in, Complex* out) { return cufftExecD2Z(p, in, out); }
  static cufftResult c2r(cufftHandle p, Complex* in, double* out) { return cufftExecZ2D(p, in, out); }
};

/// Window fields, as in nk_conv_bucket.
enum { kRow, kDocBegin, kDocEnd, kWindowBegin, kOutBegin, kOutEnd, kFields };

template <class Real>
__global__ void direct_documents(const Real* __restrict__ x, const Real* __restrict__ k, const Real* __restrict__ bias,
                                 Real* __restrict__ y, const long* __restrict__ windows, long length, int channels,
                                 long filter_length) {
  const long* w = windows + static_cast<long>(blockIdx.x) * kFields;
  const long row = w[kRow], begin = w[kDocBegin], end = w[kDocEnd];
  const long count = (end - begin) * channels;
  for (long e = threadIdx.x; e < count; e += blockDim.x) {
    const long t = begin + e / channels;
    const int c = static_cast<int>(e % channels);
    const long last = min(t - begin, filter_length - 1);
    double acc = 0;
    for (long s = 0; s <= last; ++s) {
      acc += static_cast<double>(k[c * filter_length + s]) * static_cast<double>(x[(row * length + t - s) * channels + c]);
    }
    const long at = (row * length + t) * channels + c;
    if (bias) acc += static_cast<double>(bias[c]) * static_cast<double>(x[at]);
    y[at] = static_cast<Real>(acc);
  }
}

/// rows[h][0:N) = k[h, 0:taps] zero padded.
template <class Real>
__global__ void filter_rows(const Real* __restrict__ k, Real* __restrict__ rows, long n, long taps, long filter_length,
                            int channels) {
  const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i >= n * channels) return;
  const long h = i / n, q = i % n;
  rows[i] = q < taps ? k[h * filter_length + q] : Real(0);
}

/// Transposing gather: rows[(w * H + c) * N + q] = x[row, window_begin + q, c]
/// inside the document, else 0. Block (32, 8); grid (N/32, H/32, windows).
template <class Real>
__global__ void gather_windows(const Real* __restrict__ x, Real* __restrict__ rows, const long* __restrict__ windows,
                               long first, long count, long n, long length, int channels, int lo_field = kDocBegin,
                               int hi_field = kDocEnd) {
  __shared__ Real tile[32][33];
  const long q0 = blockIdx.x * 32L;
  const int c0 = blockIdx.y * 32;
  for (long wi = blockIdx.z; wi < count; wi += gridDim.z) {
    const long* w = windows + (first + wi) * kFields;
    const long row = w[kRow], lo = w[lo_field], hi = w[hi_field], start = w[kWindowBegin];
    for (int j = threadIdx.y; j < 32; j += 8) {
      const long q = q0 + j, pos = start + q;
      const int c = c0 + threadIdx.x;
      Real value = Real(0);
      if (q < n && c < channels && pos >= lo && pos < hi) value = x[(row * length + pos) * channels + c];
      tile[j][threadIdx.x] = value;
    }
    __syncthreads();
    for (int j = threadIdx.y; j < 32; j += 8) {
      const int c = c0 + j;
      const long q = q0 + threadIdx.x;
      if (c < channels && q < n) rows[(wi * channels + c) * n + q] = tile[threadIdx.x][j];
    }
    __syncthreads();
  }
}

/// Transposing scatter of outputs [out_begin, out_end) of each window (+ bias x).
template <class Real>
__global__ void scatter_windows(const Real* __restrict__ rows, Real* __restrict__ y, const Real* __restrict__ x,
                                const Real* __restrict__ bias, const long* __restrict__ windows, long first,
                                long count, long n, long length, int channels) {
  __shared__ Real tile[32][33];
  const long q0 = blockIdx.x * 32L;
  const int c0 = blockIdx.y * 32;
  for (long wi = blockIdx.z; wi < count; wi += gridDim.z) {
    const long* w = windows + (first + wi) * kFields;
    const long row = w[kRow], start = w[kWindowBegin], out_begin = w[kOutBegin], out_end = w[kOutEnd];
    // Skip tiles that hold no kept output (uniform across the block).
    if (start + q0 + 31 < out_begin || start + q0 >= out_end) continue;
    for (int j = threadIdx.y; j < 32; j += 8) {
      const int c = c0 + j;
      const long q = q0 + threadIdx.x;
      tile[j][threadIdx.x] = (c < channels && q < n) ? rows[(wi * channels + c) * n + q] : Real(0);
    }
    __syncthreads();
    for (int j = threadIdx.y; j < 32; j += 8) {
      const long q = q0 + j, t = start + q;
      const int c = c0 + threadIdx.x;
      if (c < channels && q < n && t >= out_begin && t < out_end) {
        const long at = (row * length + t) * channels + c;
        Real value = tile[threadIdx.x][j];
        if (bias) value += bias[c] * x[at];
        y[at] = value;
      }
    }
    __syncthreads();
  }
}

template <class Complex>
__device__ __forceinline__ Complex cmul(Complex a, Complex b) {
  Complex r;
  r.x = a.x * b.x - a.y * b.y;
  r.y = a.x * b.y + a.y * b.x;
  return r;
}

/// spectra[(w * H + c) * bins + f] *= filter[c * bins + f] for every window w.
template <class Complex>
__global__ void multiply_spectra(Complex* __restrict__ spectra, const Complex* __restrict__ filter, long rows,
                                 long bins, int channels) {
  const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i >= rows * bins) return;
  const long r = i / bins, f = i % bins;
  spectra[i] = cmul(spectra[i], filter[(r % channels) * bins + f]);
}

template <class Real>
__global__ void scale_rows(typename Fft<Real>::Complex* data, long count, Real factor) {
  const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i < count) data[i].x *= factor, data[i].y *= factor;
}

// --- gradients ---------------------------------------------------------------

/// Direct gradients of short documents: dx[t] = sum_s k[s] dy[t+s] (+ bias dy),
/// dk[s] += sum_t dy[t] x[t-s] (atomics in double); one CTA per document.
template <class Real>
__global__ void direct_grad_documents(const Real* __restrict__ x, const Real* __restrict__ k,
                                      const Real* __restrict__ bias, const Real* __restrict__ dy, Real* __restrict__ dx,
                                      double* __restrict__ dk, const long* __restrict__ windows, long length,
                                      int channels, long filter_length) {
  const long* w = windows + static_cast<long>(blockIdx.x) * kFields;
  const long row = w[kRow], begin = w[kDocBegin], end = w[kDocEnd];
  const long count = (end - begin) * channels;
  const long base = row * length * channels;
  for (long e = threadIdx.x; e < count; e += blockDim.x) {
    const long t = begin + e / channels;
    const int c = static_cast<int>(e % channels);
    const long ahead = min(filter_length - 1, end - 1 - t);
    double sum = 0;
    for (long s = 0; s <= ahead; ++s) sum += static_cast<double>(k[c * filter_length + s]) * static_cast<double>(dy[base + (t + s) * channels + c]);
    const double g = static_cast<double>(dy[base + t * channels + c]);
    if (bias) sum += static_cast<double>(bias[c]) * g;
    dx[base + t * channels + c] = static_cast<Real>(sum);
    const long behind = min(filter_length - 1, t - begin);
    for (long s = 0; s <= behind; ++s) atomicAdd(dk + c * filter_length + s, g * static_cast<double>(x[base + (t - s) * channels + c]));
  }
}

/// spectra[(w * H + c) * bins + f] = conj(filter[c * bins + f]) * spectra[...].
template <class Complex>
__global__ void multiply_conjugate(Complex* __restrict__ spectra, const Complex* __restrict__ filter, long rows,
                                   long bins, int channels) {
  const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i >= rows * bins) return;
  Complex k = filter[((i / bins) % channels) * bins + i % bins];
  k.y = -k.y;
  spectra[i] = cmul(k, spectra[i]);
}

/// sum[c, f] += sum over the chunk's windows of conj(X) DY.
template <class Complex>
__global__ void accumulate_cross(Complex* __restrict__ sum, const Complex* __restrict__ xs,
                                 const Complex* __restrict__ dys, long windows, long bins, int channels) {
  const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i >= channels * bins) return;
  Complex acc = sum[i];
  for (long w = 0; w < windows; ++w) {
    Complex a = xs[w * channels * bins + i];
    a.y = -a.y;
    const Complex p = cmul(a, dys[w * channels * bins + i]);
    acc.x += p.x, acc.y += p.y;
  }
  sum[i] = acc;
}

/// dk[c, s] += rows[c, s] / n for s < taps.
template <class Real>
__global__ void add_taps(double* __restrict__ dk, const Real* __restrict__ rows, long n, long taps, long filter_length,
                         int channels) {
  const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i >= taps * channels) return;
  const long c = i / taps, s = i % taps;
  dk[c * filter_length + s] += static_cast<double>(rows[c * n + s]) / static_cast<double>(n);
}

/// dbias[c] += sum over positions of dy x (block (32, 8): 32 channels, 8 lanes of positions).
template <class Real>
__global__ void bias_gradient(const Real* __restrict__ x, const Real* __restrict__ dy, double* __restrict__ dbias,
                              long positions, int channels) {
  __shared__ double part[8][32];
  const int c = blockIdx.x * 32 + threadIdx.x;
  double sum = 0;
  if (c < channels) {
    for (long p = blockIdx.y * 8L + threadIdx.y; p < positions; p += 8L * gridDim.y) {
      sum += static_cast<double>(dy[p * channels + c]) * static_cast<double>(x[p * channels + c]);
    }
  }
  part[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && c < channels) {
    for (int j = 1; j < 8; ++j) sum += part[j][threadIdx.x];
    atomicAdd(dbias + c, sum);
  }
}

template <class Real>
__global__ void to_real(const double* __restrict__ in, Real* __restrict__ out, long count) {
  const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i < count) out[i] = static_cast<Real>(in[i]);
}

template <class Real>
__global__ void scale_real(Real* data, long count, Real factor) {
  const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i < count) data[i] *= factor;
}

unsigned blocks_for(long count, int threads) { return static_cast<unsigned>((count + threads - 1) / threads); }

/// Copies the window tables into one device table: the direct windows first,
/// then per bucket its causal windows and, where given, its look-ahead ones.
/// causal[b] and lookahead[b] point at bucket b's parts of the table.
cudaError_t upload_windows(DeviceBuffer& table, const long* direct, long direct_count, const nk_conv_bucket* buckets,
                           const nk_conv_bucket* anticausal, long bucket_count, std::vector<const long*>& causal,
                           std::vector<const long*>& lookahead) {
  long total = direct_count;
  for (long b = 0; b < bucket_count; ++b) total += buckets[b].count + (anticausal ? anticausal[b].count : 0);
  cudaError_t status = table.allocate(sizeof(long) * kFields * total);
  long* at = static_cast<long*>(table.get());
  auto copy = [&](const long* host, long count) {
    if (status == cudaSuccess && count) status = cudaMemcpy(at, host, sizeof(long) * kFields * count, cudaMemcpyHostToDevice);
    at += count * kFields;
  };
  copy(direct, direct_count);
  for (long b = 0; b < bucket_count; ++b) {
    causal.push_back(at);
    copy(buckets[b].windows, buckets[b].count);
    lookahead.push_back(at);
    if (anticausal) copy(anticausal[b].windows, anticausal[b].count);
  }
  return status;
}

/// cuFFT plans sharing one work area, destroyed together.
struct PlanSet {
  std::vector<cufftHandle> plans;
  ~PlanSet() {
    for (cufftHandle p : plans) cufftDestroy(p);
  }
  cufftResult make(cufftType type, long n, long batch, size_t* work, cufftHandle* out) {
    cufftHandle plan;
    cufftResult status = cufftCreate(&plan);
    if (status != CUFFT_SUCCESS) return status;
    plans.push_back(plan);
    cufftSetAutoAllocation(plan, 0);
    long long size = n;
    const bool forward = type == CUFFT_R2C || type == CUFFT_D2Z;
    long long in_dist = forward ? n : n / 2 + 1, out_dist = forward ? n / 2 + 1 : n;
    status = cufftMakePlanMany64(plan, 1, &size, nullptr, 1, in_dist, nullptr, 1, out_dist, type, batch, work);
    *out = plan;
    return status;
  }
};

struct BucketRun {
  long n = 0, bins = 0, taps = 0, count = 0, chunk = 0;
  const long* windows = nullptr;  // device
  cufftHandle filter_plan{}, forward_full{}, inverse_full{}, forward_rest{}, inverse_rest{};
  size_t filter_offset = 0;  // complex elements into the filter spectra buffer
};

template <class Real>
int packed_conv(const Real* x, const Real* k, const Real* bias, Real* y, long batch, long length, long channels,
                long filter_length, const nk_conv_bucket* buckets, long bucket_count, const long* direct,
                long direct_count, int repeats, nk_cuda_timing* timing, char* error, size_t error_size) {
  using F = Fft<Real>;
  using Complex = typename F::Complex;
  if (batch < 1 || length < 1 || channels < 1 || filter_length < 1 || filter_length > length) {
    set_error(error, error_size, "packed_conv: bad shape");
    return -1;
  }
  Timer timer;
  nk_cuda_timing local{};
  const size_t signal_bytes = sizeof(Real) * batch * length * channels;
  DeviceBuffer d_x, d_y, d_k, d_bias, d_windows;
  timer.start();
  NK_CUDA_TRY(upload(d_x, x, signal_bytes));
  NK_CUDA_TRY(d_y.allocate(signal_bytes));
  NK_CUDA_TRY(upload(d_k, k, sizeof(Real) * channels * filter_length));
  NK_CUDA_TRY(upload(d_bias, bias, bias ? sizeof(Real) * channels : 0));
  std::vector<const long*> causal, lookahead;
  NK_CUDA_TRY(upload_windows(d_windows, direct, direct_count, buckets, nullptr, bucket_count, causal, lookahead));
  const long* windows = static_cast<const long*>(d_windows.get());
  std::vector<BucketRun> runs(static_cast<size_t>(bucket_count));
  for (long b = 0; b < bucket_count; ++b) {
    BucketRun& r = runs[static_cast<size_t>(b)];
    r.n = buckets[b].fft_size, r.bins = r.n / 2 + 1, r.taps = buckets[b].taps, r.count = buckets[b].count;
    r.windows = causal[static_cast<size_t>(b)];
  }
  local.upload_ms = timer.stop();

  // Set-up: plans, work area, buffers (rows of a chunk hold at most 2^27 numbers).
  timer.start();
  PlanSet plans;
  size_t work_max = 0, filter_total = 0, rows_max = 0, spectra_max = 0;
  const long row_budget = 1L << 27;
  for (BucketRun& r : runs) {
    if (!r.count) continue;
    r.chunk = std::clamp<long>(row_budget / (channels * r.n), 1, std::min<long>(r.count, 65535));
    size_t work = 0;
    NK_CUFFT_TRY(plans.make(F::forward, r.n, channels, &work, &r.filter_plan));
    work_max = std::max(work_max, work);
    NK_CUFFT_TRY(plans.make(F::forward, r.n, r.chunk * channels, &work, &r.forward_full));
    work_max = std::max(work_max, work);
    NK_CUFFT_TRY(plans.make(F::inverse, r.n, r.chunk * channels, &work, &r.inverse_full));
    work_max = std::max(work_max, work);
    const long rest = r.count % r.chunk;
    if (rest) {
      NK_CUFFT_TRY(plans.make(F::forward, r.n, rest * channels, &work, &r.forward_rest));
      work_max = std::max(work_max, work);
      NK_CUFFT_TRY(plans.make(F::inverse, r.n, rest * channels, &work, &r.inverse_rest));
      work_max = std::max(work_max, work);
    }
    r.filter_offset = filter_total;
    filter_total += static_cast<size_t>(channels * r.bins);
    rows_max = std::max(rows_max, static_cast<size_t>(std::max(r.chunk, 1L) * channels * r.n));
    spectra_max = std::max(spectra_max, static_cast<size_t>(std::max(r.chunk, 1L) * channels * r.bins));
  }
  DeviceBuffer d_work, d_rows, d_spectra, d_filters;
  NK_CUDA_TRY(d_work.allocate(work_max));
  NK_CUDA_TRY(d_rows.allocate(sizeof(Real) * rows_max));
  NK_CUDA_TRY(d_spectra.allocate(sizeof(Complex) * spectra_max));
  NK_CUDA_TRY(d_filters.allocate(sizeof(Complex) * filter_total));
  for (cufftHandle p : plans.plans) NK_CUFFT_TRY(cufftSetWorkArea(p, d_work.get()));
  NK_CUDA_TRY(cudaMemset(d_y.get(), 0, signal_bytes));
  local.setup_ms = timer.stop();

  Real* rows = static_cast<Real*>(d_rows.get());
  Complex* spectra = static_cast<Complex*>(d_spectra.get());
  Complex* filters = static_cast<Complex*>(d_filters.get());
  const Real* dx = static_cast<const Real*>(d_x.get());
  const Real* dk = static_cast<const Real*>(d_k.get());
  const Real* dbias = bias ? static_cast<const Real*>(d_bias.get()) : nullptr;
  Real* dy = static_cast<Real*>(d_y.get());
  const int h = static_cast<int>(channels);
  double best = INFINITY;
  for (int rep = 0; rep < std::max(1, repeats); ++rep) {
    timer.start();
    if (direct_count) {
      direct_documents<Real><<<static_cast<unsigned>(direct_count), 256>>>(dx, dk, dbias, dy, windows, length, h,
                                                                            filter_length);
      NK_CUDA_TRY(cudaGetLastError());
    }
    for (const BucketRun& r : runs) {
      if (!r.count) continue;
      Complex* filter = filters + r.filter_offset;
      filter_rows<Real><<<blocks_for(r.n * channels, 256), 256>>>(dk, rows, r.n, r.taps, filter_length, h);
      NK_CUDA_TRY(cudaGetLastError());
      NK_CUFFT_TRY(F::r2c(r.filter_plan, rows, filter));
      scale_rows<Real><<<blocks_for(channels * r.bins, 256), 256>>>(filter, channels * r.bins, Real(1) / static_cast<Real>(r.n));
      NK_CUDA_TRY(cudaGetLastError());
      for (long first = 0; first < r.count; first += r.chunk) {
        const long count = std::min(r.chunk, r.count - first);
        const bool full = count == r.chunk;
        const dim3 threads(32, 8);
        const dim3 grid(static_cast<unsigned>((r.n + 31) / 32), static_cast<unsigned>((channels + 31) / 32),
                        static_cast<unsigned>(std::min<long>(count, 65535)));
        gather_windows<Real><<<grid, threads>>>(dx, rows, r.windows, first, count, r.n, length, h);
        NK_CUDA_TRY(cudaGetLastError());
        NK_CUFFT_TRY(F::r2c(full ? r.forward_full : r.forward_rest, rows, spectra));
        multiply_spectra<Complex><<<blocks_for(count * channels * r.bins, 256), 256>>>(spectra, filter, count * channels,
                                                                                      r.bins, h);
        NK_CUDA_TRY(cudaGetLastError());
        NK_CUFFT_TRY(F::c2r(full ? r.inverse_full : r.inverse_rest, spectra, rows));
        scatter_windows<Real><<<grid, threads>>>(rows, dy, dx, dbias, r.windows, first, count, r.n, length, h);
        NK_CUDA_TRY(cudaGetLastError());
      }
    }
    best = std::min(best, timer.stop());
  }
  NK_CUDA_TRY(cudaDeviceSynchronize());
  local.compute_ms = best;
  timer.start();
  NK_CUDA_TRY(cudaMemcpy(y, d_y.get(), signal_bytes, cudaMemcpyDeviceToHost));
  local.download_ms = timer.stop();
  if (timing) *timing = local;
  return 0;
}

struct GradBucketRun {
  long n = 0, bins = 0, taps = 0, count = 0, anti = 0, chunk = 0;
  const long* windows = nullptr;     // device: causal windows
  const long* anticausal = nullptr;  // device: look-ahead windows (tiled buckets)
  cufftHandle filter_plan{}, inverse_filter{}, forward_full{}, inverse_full{}, forward_rest{}, inverse_rest{};
  cufftHandle forward_anti_rest{}, inverse_anti_rest{};
};

template <class Real>
int packed_conv_grad(const Real* x, const Real* k, const Real* bias, const Real* dy, Real* dx, Real* dk, Real* dbias,
                     long batch, long length, long channels, long filter_length, const nk_conv_bucket* buckets,
                     const nk_conv_bucket* anticausal, long bucket_count, const long* direct, long direct_count,
                     int repeats, nk_cuda_timing* timing, char* error, size_t error_size) {
  using F = Fft<Real>;
  using Complex = typename F::Complex;
  if (batch < 1 || length < 1 || channels < 1 || filter_length < 1 || filter_length > length) {
    set_error(error, error_size, "packed_conv_grad: bad shape");
    return -1;
  }
  Timer timer;
  nk_cuda_timing local{};
  const long positions = batch * length;
  const size_t signal_bytes = sizeof(Real) * positions * channels, taps_count = static_cast<size_t>(channels * filter_length);
  DeviceBuffer d_x, d_dy, d_dx, d_k, d_bias, d_windows, d_dk, d_dk_real, d_dbias, d_dbias_real;
  timer.start();
  NK_CUDA_TRY(upload(d_x, x, signal_bytes));
  NK_CUDA_TRY(upload(d_dy, dy, signal_bytes));
  NK_CUDA_TRY(d_dx.allocate(signal_bytes));
  NK_CUDA_TRY(upload(d_k, k, sizeof(Real) * taps_count));
  NK_CUDA_TRY(upload(d_bias, bias, bias ? sizeof(Real) * channels : 0));
  NK_CUDA_TRY(d_dk.allocate(sizeof(double) * taps_count));
  NK_CUDA_TRY(d_dk_real.allocate(sizeof(Real) * taps_count));
  NK_CUDA_TRY(d_dbias.allocate(sizeof(double) * channels));
  NK_CUDA_TRY(d_dbias_real.allocate(sizeof(Real) * channels));
  std::vector<const long*> causal, lookahead;
  NK_CUDA_TRY(upload_windows(d_windows, direct, direct_count, buckets, anticausal, bucket_count, causal, lookahead));
  const long* windows = static_cast<const long*>(d_windows.get());
  std::vector<GradBucketRun> runs(static_cast<size_t>(bucket_count));
  for (long b = 0; b < bucket_count; ++b) {
    GradBucketRun& r = runs[static_cast<size_t>(b)];
    r.n = buckets[b].fft_size, r.bins = r.n / 2 + 1, r.taps = buckets[b].taps;
    r.count = buckets[b].count, r.anti = anticausal[b].count;
    r.windows = causal[static_cast<size_t>(b)];
    r.anticausal = lookahead[static_cast<size_t>(b)];
  }
  local.upload_ms = timer.stop();

  timer.start();
  PlanSet plans;
  size_t work_max = 0, rows_max = 0, spectra_max = 0, filter_max = 0;
  const long row_budget = 1L << 26;
  auto note = [&](size_t work) { work_max = std::max(work_max, work); };
  for (GradBucketRun& r : runs) {
    if (!r.count) continue;
    r.chunk = std::clamp<long>(row_budget / (channels * r.n), 1, std::min<long>(std::max(r.count, r.anti), 65535));
    size_t work = 0;
    NK_CUFFT_TRY(plans.make(F::forward, r.n, channels, &work, &r.filter_plan));
    note(work);
    NK_CUFFT_TRY(plans.make(F::inverse, r.n, channels, &work, &r.inverse_filter));
    note(work);
    NK_CUFFT_TRY(plans.make(F::forward, r.n, r.chunk * channels, &work, &r.forward_full));
    note(work);
    NK_CUFFT_TRY(plans.make(F::inverse, r.n, r.chunk * channels, &work, &r.inverse_full));
    note(work);
    if (const long rest = r.count % r.chunk) {
      NK_CUFFT_TRY(plans.make(F::forward, r.n, rest * channels, &work, &r.forward_rest));
    note(work);
      NK_CUFFT_TRY(plans.make(F::inverse, r.n, rest * channels, &work, &r.inverse_rest));
    note(work);
    }
    if (const long rest = r.anti % r.chunk) {
      NK_CUFFT_TRY(plans.make(F::forward, r.n, rest * channels, &work, &r.forward_anti_rest));
    note(work);
      NK_CUFFT_TRY(plans.make(F::inverse, r.n, rest * channels, &work, &r.inverse_anti_rest));
    note(work);
    }
    rows_max = std::max(rows_max, static_cast<size_t>(r.chunk * channels * r.n));
    spectra_max = std::max(spectra_max, static_cast<size_t>(r.chunk * channels * r.bins));
    filter_max = std::max(filter_max, static_cast<size_t>(channels * r.bins));
  }
  DeviceBuffer d_work, d_rows_x, d_rows_dy, d_spec_x, d_spec_dy, d_filter, d_sum;
  NK_CUDA_TRY(d_work.allocate(work_max));
  NK_CUDA_TRY(d_rows_x.allocate(sizeof(Real) * rows_max));
  NK_CUDA_TRY(d_rows_dy.allocate(sizeof(Real) * rows_max));
  NK_CUDA_TRY(d_spec_x.allocate(sizeof(Complex) * spectra_max));
  NK_CUDA_TRY(d_spec_dy.allocate(sizeof(Complex) * spectra_max));
  NK_CUDA_TRY(d_filter.allocate(sizeof(Complex) * filter_max));
  NK_CUDA_TRY(d_sum.allocate(sizeof(Complex) * filter_max));
  for (cufftHandle p : plans.plans) NK_CUFFT_TRY(cufftSetWorkArea(p, d_work.get()));
  NK_CUDA_TRY(cudaMemset(d_dx.get(), 0, signal_bytes));
  local.setup_ms = timer.stop();

  Real* rows_x = static_cast<Real*>(d_rows_x.get());
  Real* rows_dy = static_cast<Real*>(d_rows_dy.get());
  Complex* spec_x = static_cast<Complex*>(d_spec_x.get());
  Complex* spec_dy = static_cast<Complex*>(d_spec_dy.get());
  Complex* filter = static_cast<Complex*>(d_filter.get());
  Complex* sum = static_cast<Complex*>(d_sum.get());
  const Real* gx = static_cast<const Real*>(d_x.get());
  const Real* gdy = static_cast<const Real*>(d_dy.get());
  const Real* gk = static_cast<const Real*>(d_k.get());
  const Real* gbias = bias ? static_cast<const Real*>(d_bias.get()) : nullptr;
  Real* gdx = static_cast<Real*>(d_dx.get());
  double* gdk = static_cast<double*>(d_dk.get());
  const int h = static_cast<int>(channels);
  const dim3 threads(32, 8);
  double best = INFINITY;
  for (int rep = 0; rep < std::max(1, repeats); ++rep) {
    timer.start();
    NK_CUDA_TRY(cudaMemsetAsync(gdk, 0, sizeof(double) * taps_count));
    if (direct_count) {
      direct_grad_documents<Real><<<static_cast<unsigned>(direct_count), 256>>>(gx, gk, gbias, gdy, gdx, gdk, windows,
                                                                                length, h, filter_length);
      NK_CUDA_TRY(cudaGetLastError());
    }
    for (const GradBucketRun& r : runs) {
      if (!r.count) continue;
      filter_rows<Real><<<blocks_for(r.n * channels, 256), 256>>>(gk, rows_x, r.n, r.taps, filter_length, h);
      NK_CUDA_TRY(cudaGetLastError());
      NK_CUFFT_TRY(F::r2c(r.filter_plan, rows_x, filter));
      scale_rows<Real><<<blocks_for(channels * r.bins, 256), 256>>>(filter, channels * r.bins, Real(1) / static_cast<Real>(r.n));
      NK_CUDA_TRY(cudaMemsetAsync(sum, 0, sizeof(Complex) * channels * r.bins));
      const bool tiled = r.anti > 0;
      for (long first = 0; first < r.count; first += r.chunk) {
        const long count = std::min(r.chunk, r.count - first);
        const bool full = count == r.chunk;
        const dim3 grid(static_cast<unsigned>((r.n + 31) / 32), static_cast<unsigned>((channels + 31) / 32),
                        static_cast<unsigned>(std::min<long>(count, 65535)));
        gather_windows<Real><<<grid, threads>>>(gx, rows_x, r.windows, first, count, r.n, length, h);
        gather_windows<Real><<<grid, threads>>>(gdy, rows_dy, r.windows, first, count, r.n, length, h, kOutBegin, kOutEnd);
        NK_CUDA_TRY(cudaGetLastError());
        NK_CUFFT_TRY(F::r2c(full ? r.forward_full : r.forward_rest, rows_x, spec_x));
        NK_CUFFT_TRY(F::r2c(full ? r.forward_full : r.forward_rest, rows_dy, spec_dy));
        accumulate_cross<Complex><<<blocks_for(channels * r.bins, 256), 256>>>(sum, spec_x, spec_dy, count, r.bins, h);
        NK_CUDA_TRY(cudaGetLastError());
        if (!tiled) {
          multiply_conjugate<Complex><<<blocks_for(count * channels * r.bins, 256), 256>>>(spec_dy, filter, count * channels, r.bins, h);
          NK_CUFFT_TRY(F::c2r(full ? r.inverse_full : r.inverse_rest, spec_dy, rows_dy));
          scatter_windows<Real><<<grid, threads>>>(rows_dy, gdx, gdy, gbias, r.windows, first, count, r.n, length, h);
          NK_CUDA_TRY(cudaGetLastError());
        }
      }
      // dx of overlap-save tiles: windows that look ahead of their outputs.
      for (long first = 0; first < r.anti; first += r.chunk) {
        const long count = std::min(r.chunk, r.anti - first);
        const bool full = count == r.chunk;
        const dim3 grid(static_cast<unsigned>((r.n + 31) / 32), static_cast<unsigned>((channels + 31) / 32),
                        static_cast<unsigned>(std::min<long>(count, 65535)));
        gather_windows<Real><<<grid, threads>>>(gdy, rows_dy, r.anticausal, first, count, r.n, length, h);
        NK_CUDA_TRY(cudaGetLastError());
        NK_CUFFT_TRY(F::r2c(full ? r.forward_full : r.forward_anti_rest, rows_dy, spec_dy));
        multiply_conjugate<Complex><<<blocks_for(count * channels * r.bins, 256), 256>>>(spec_dy, filter, count * channels, r.bins, h);
        NK_CUFFT_TRY(F::c2r(full ? r.inverse_full : r.inverse_anti_rest, spec_dy, rows_dy));
        scatter_windows<Real><<<grid, threads>>>(rows_dy, gdx, gdy, gbias, r.anticausal, first, count, r.n, length, h);
        NK_CUDA_TRY(cudaGetLastError());
      }
      NK_CUFFT_TRY(F::c2r(r.inverse_filter, sum, rows_x));
      add_taps<Real><<<blocks_for(r.taps * channels, 256), 256>>>(gdk, rows_x, r.n, r.taps, filter_length, h);
      NK_CUDA_TRY(cudaGetLastError());
    }
    to_real<Real><<<blocks_for(static_cast<long>(taps_count), 256), 256>>>(gdk, static_cast<Real*>(d_dk_real.get()), static_cast<long>(taps_count));
    if (bias && dbias) {
      NK_CUDA_TRY(cudaMemsetAsync(d_dbias.get(), 0, sizeof(double) * channels));
      bias_gradient<Real><<<dim3(static_cast<unsigned>((channels + 31) / 32), 64), threads>>>(
          gx, gdy, static_cast<double*>(d_dbias.get()), positions, h);
      to_real<Real><<<blocks_for(channels, 256), 256>>>(static_cast<const double*>(d_dbias.get()),
                                                        static_cast<Real*>(d_dbias_real.get()), channels);
    }
    NK_CUDA_TRY(cudaGetLastError());
    best = std::min(best, timer.stop());
  }
  NK_CUDA_TRY(cudaDeviceSynchronize());
  local.compute_ms = best;
  timer.start();
  NK_CUDA_TRY(cudaMemcpy(dx, d_dx.get(), signal_bytes, cudaMemcpyDeviceToHost));
  NK_CUDA_TRY(cudaMemcpy(dk, d_dk_real.get(), sizeof(Real) * taps_count, cudaMemcpyDeviceToHost));
  if (bias && dbias) NK_CUDA_TRY(cudaMemcpy(dbias, d_dbias_real.get(), sizeof(Real) * channels, cudaMemcpyDeviceToHost));
  local.download_ms = timer.stop();
  if (timing) *timing = local;
  return 0;
}

}  // namespace

int packed_conv_f32(const float* x, const float* k, const float* bias, float* y, long batch, long length,
                    long channels, long filter_length, const nk_conv_bucket* buckets, long bucket_count,
                    const long* direct, long direct_count, int repeats, nk_cuda_timing* timing, char* error,
                    size_t error_size) {
  return packed_conv<float>(x, k, bias, y, batch, length, channels, filter_length, buckets, bucket_count, direct,
                            direct_count, repeats, timing, error, error_size);
}

int packed_conv_f64(const double* x, const double* k, const double* bias, double* y, long batch, long length,
                    long channels, long filter_length, const nk_conv_bucket* buckets, long bucket_count,
                    const long* direct, long direct_count, int repeats, nk_cuda_timing* timing, char* error,
                    size_t error_size) {
  return packed_conv<double>(x, k, bias, y, batch, length, channels, filter_length, buckets, bucket_count, direct,
                             direct_count, repeats, timing, error, error_size);
}

}  // namespace nk::cuda

namespace nk::cuda {

int packed_conv_grad_f32(const float* x, const float* k, const float* bias, const float* dy, float* dx, float* dk,
                         float* dbias, long batch, long length, long channels, long filter_length,
                         const nk_conv_bucket* buckets, const nk_conv_bucket* anticausal, long bucket_count,
                         const long* direct, long direct_count, int repeats, nk_cuda_timing* timing, char* error,
                         size_t error_size) {
  return packed_conv_grad<float>(x, k, bias, dy, dx, dk, dbias, batch, length, channels, filter_length, buckets,
                                 anticausal, bucket_count, direct, direct_count, repeats, timing, error, error_size);
}

int packed_conv_grad_f64(const double* x, const double* k, const double* bias, const double* dy, double* dx,
                         double* dk, double* dbias, long batch, long length, long channels, long filter_length,
                         const nk_conv_bucket* buckets, const nk_conv_bucket* anticausal, long bucket_count,
                         const long* direct, long direct_count, int repeats, nk_cuda_timing* timing, char* error,
                         size_t error_size) {
  return packed_conv_grad<double>(x, k, bias, dy, dx, dk, dbias, batch, length, channels, filter_length, buckets,
                                  anticausal, bucket_count, direct, direct_count, repeats, timing, error, error_size);
}

}  // namespace nk::cuda

extern const nk_cuda_conv nk_cuda_conv_table = {
    .header = nk::cuda::family_header<nk_cuda_conv>(),
    .packed_conv_f32 = nk::cuda::packed_conv_f32,
    .packed_conv_f64 = nk::cuda::packed_conv_f64,
    .packed_conv_grad_f32 = nk::cuda::packed_conv_grad_f32,
    .packed_conv_grad_f64 = nk::cuda::packed_conv_grad_f64,
};
