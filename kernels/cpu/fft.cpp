// fft.cpp - FFTW plan cache (plans made once per shape, executed with the
// new-array interface so one plan serves every buffer of the same alignment).
#include "nk/kernels/fft.hpp"

#include <fftw3.h>

#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "nk/error.hpp"
#include "nk/kernels/cuda_call.hpp"

namespace nk::fft {

namespace {

// precision (4|8), direction (+1 forward, -1 inverse keeping its input, -2
// inverse free to overwrite it), n, batch, aligned input, aligned output
using PlanKey = std::tuple<int, int, long, long, bool, bool>;

// Plans live until exit, then are destroyed (so leak checkers see no leak).
struct PlanCache {
  std::mutex mutex;  // FFTW's planner is not thread-safe
  std::map<PlanKey, void*> plans;
  ~PlanCache() {
    for (auto& [key, plan] : plans) {
      if (std::get<0>(key) == 4) fftwf_destroy_plan(static_cast<fftwf_plan>(plan));
      else fftw_destroy_plan(static_cast<fftw_plan>(plan));
    }
    fftwf_cleanup();
    fftw_cleanup();
  }
};
PlanCache g_cache;

template <class Real>
bool aligned(const void* p) {
  if constexpr (sizeof(Real) == 4) return fftwf_alignment_of(static_cast<float*>(const_cast<void*>(p))) == 0;
  else return fftw_alignment_of(static_cast<double*>(const_cast<void*>(p))) == 0;
}

template <class Real>
void* plan_for(int direction, long n, long batch, const void* in, const void* out) {
  const bool in_aligned = aligned<Real>(in), out_aligned = aligned<Real>(out);
  const PlanKey key{static_cast<int>(sizeof(Real)), direction, n, batch, in_aligned, out_aligned};
  std::lock_guard<std::mutex> lock(g_cache.mutex);
  if (auto found = g_cache.plans.find(key); found != g_cache.plans.end()) return found->second;
  const int size = static_cast<int>(n);
  const int howmany = static_cast<int>(batch);
  const int complex_bins = static_cast<int>(bins(n));
  unsigned flags = FFTW_ESTIMATE | (in_aligned && out_aligned ? 0u : FFTW_UNALIGNED);
  void* plan = nullptr;
  // Plan on scratch buffers so that planning never touches the caller's data.
  if constexpr (sizeof(Real) == 4) {
    float* real = fftwf_alloc_real(static_cast<size_t>(n * batch));
    fftwf_complex* spectrum = fftwf_alloc_complex(static_cast<size_t>(bins(n) * batch));
    plan = direction > 0 ? static_cast<void*>(fftwf_plan_many_dft_r2c(1, &size, howmany, real, nullptr, 1, size,
                                                                      spectrum, nullptr, 1, complex_bins, flags))
                         : static_cast<void*>(fftwf_plan_many_dft_c2r(1, &size, howmany, spectrum, nullptr, 1,
                                                                      complex_bins, real, nullptr, 1, size,
                                                                      flags | (direction == -1 ? FFTW_PRESERVE_INPUT : FFTW_DESTROY_INPUT)));
    fftwf_free(real);
    fftwf_free(spectrum);
  } else {
    double* real = fftw_alloc_real(static_cast<size_t>(n * batch));
    fftw_complex* spectrum = fftw_alloc_complex(static_cast<size_t>(bins(n) * batch));
    plan = direction > 0 ? static_cast<void*>(fftw_plan_many_dft_r2c(1, &size, howmany, real, nullptr, 1, size,
                                                                     spectrum, nullptr, 1, complex_bins, flags))
                         : static_cast<void*>(fftw_plan_many_dft_c2r(1, &size, howmany, spectrum, nullptr, 1,
                                                                     complex_bins, real, nullptr, 1, size,
                                                                     flags | (direction == -1 ? FFTW_PRESERVE_INPUT : FFTW_DESTROY_INPUT)));
    fftw_free(real);
    fftw_free(spectrum);
  }
  if (!plan) throw Error(Exit::runtime, "FFTW could not plan a transform of length " + std::to_string(n));
  g_cache.plans.emplace(key, plan);
  return plan;
}

void check_shape(long n, long batch) {
  if (n <= 0 || batch <= 0 || n > (1L << 30) || batch > (1L << 30)) {
    throw Error(Exit::runtime, "FFT of length " + std::to_string(n) + " x " + std::to_string(batch) +
                                   " rows is out of range");
  }
}

}  // namespace

void forward(const float* in, std::complex<float>* out, long n, long batch, DeviceKind device) {
  check_shape(n, batch);
  if (device == DeviceKind::cuda) {
    kernels::cuda_call("cuFFT", kernels::cuda_family<nk_cuda_fft>("cuFFT").rfft_f32, in, reinterpret_cast<float*>(out),
                       n, batch);
    return;
  }
  auto plan = static_cast<fftwf_plan>(plan_for<float>(+1, n, batch, in, out));
  fftwf_execute_dft_r2c(plan, const_cast<float*>(in), reinterpret_cast<fftwf_complex*>(out));
}

void forward(const double* in, std::complex<double>* out, long n, long batch) {
  check_shape(n, batch);
  auto plan = static_cast<fftw_plan>(plan_for<double>(+1, n, batch, in, out));
  fftw_execute_dft_r2c(plan, const_cast<double*>(in), reinterpret_cast<fftw_complex*>(out));
}

void inverse(const std::complex<float>* in, float* out, long n, long batch, DeviceKind device) {
  check_shape(n, batch);
  if (device == DeviceKind::cuda) {
    kernels::cuda_call("cuFFT", kernels::cuda_family<nk_cuda_fft>("cuFFT").irfft_f32,
                       reinterpret_cast<const float*>(in), out, n, batch);
    return;
  }
  auto plan = static_cast<fftwf_plan>(plan_for<float>(-1, n, batch, in, out));
  fftwf_execute_dft_c2r(plan, reinterpret_cast<fftwf_complex*>(const_cast<std::complex<float>*>(in)), out);
  const float scale = 1.0f / static_cast<float>(n);
  for (long i = 0; i < n * batch; ++i) out[i] *= scale;
}

void inverse(const std::complex<double>* in, double* out, long n, long batch) {
  check_shape(n, batch);
  auto plan = static_cast<fftw_plan>(plan_for<double>(-1, n, batch, in, out));
  fftw_execute_dft_c2r(plan, reinterpret_cast<fftw_complex*>(const_cast<std::complex<double>*>(in)), out);
  const double scale = 1.0 / static_cast<double>(n);
  for (long i = 0; i < n * batch; ++i) out[i] *= scale;
}

void inverse_destroying(std::complex<float>* in, float* out, long n, long batch) {
  check_shape(n, batch);
  auto plan = static_cast<fftwf_plan>(plan_for<float>(-2, n, batch, in, out));
  fftwf_execute_dft_c2r(plan, reinterpret_cast<fftwf_complex*>(in), out);
  const float scale = 1.0f / static_cast<float>(n);
  for (long i = 0; i < n * batch; ++i) out[i] *= scale;
}

void inverse_destroying(std::complex<double>* in, double* out, long n, long batch) {
  check_shape(n, batch);
  auto plan = static_cast<fftw_plan>(plan_for<double>(-2, n, batch, in, out));
  fftw_execute_dft_c2r(plan, reinterpret_cast<fftw_complex*>(in), out);
  const double scale = 1.0 / static_cast<double>(n);
  for (long i = 0; i < n * batch; ++i) out[i] *= scale;
}

long good_size(long n) {
  for (long candidate = std::max(n, 1L);; ++candidate) {
    long rest = candidate;
    for (long factor : {2L, 3L, 5L, 7L}) {
      while (rest % factor == 0) rest /= factor;
    }
    if (rest == 1) return candidate;
  }
}

long cached_plans() {
  std::lock_guard<std::mutex> lock(g_cache.mutex);
  return static_cast<long>(g_cache.plans.size());
}

std::string fftw_version() { return ::fftw_version; }

}  // namespace nk::fft
