// spectral.cpp - CPU twin of the spectral multiply and the device dispatch.
#include "nk/kernels/spectral.hpp"

#include <string>

#include "nk/error.hpp"
#include "nk/kernels/cuda_call.hpp"

namespace nk::kernels {

namespace {
template <class Real>
void multiply_rows(const std::complex<Real>* x, const std::complex<Real>* k, std::complex<Real>* y, long batch,
                   long channels, long bins) {
#pragma omp parallel for collapse(2) schedule(static)
  for (long b = 0; b < batch; ++b) {
    for (long h = 0; h < channels; ++h) {
      const std::complex<Real>* xr = x + (b * channels + h) * bins;
      const std::complex<Real>* kr = k + h * bins;
      std::complex<Real>* yr = y + (b * channels + h) * bins;
      for (long f = 0; f < bins; ++f) yr[f] = xr[f] * kr[f];
    }
  }
}
template <class Real>
void multiply_rows_serial(const std::complex<Real>* x, const std::complex<Real>* k, std::complex<Real>* y, long batch,
                          long channels, long bins) {
  for (long row = 0; row < batch * channels; ++row) {
    const std::complex<Real>* xr = x + row * bins;
    const std::complex<Real>* kr = k + (row % channels) * bins;
    std::complex<Real>* yr = y + row * bins;
    for (long f = 0; f < bins; ++f) yr[f] = xr[f] * kr[f];
  }
}
}  // namespace

void spectral_multiply_cpu_serial(const std::complex<float>* x, const std::complex<float>* k, std::complex<float>* y,
                                  long batch, long channels, long bins) {
  multiply_rows_serial(x, k, y, batch, channels, bins);
}

void spectral_multiply_cpu_serial(const std::complex<double>* x, const std::complex<double>* k,
                                  std::complex<double>* y, long batch, long channels, long bins) {
  multiply_rows_serial(x, k, y, batch, channels, bins);
}

void spectral_multiply_cpu(const std::complex<float>* x, const std::complex<float>* k, std::complex<float>* y,
                           long batch, long channels, long bins) {
  multiply_rows(x, k, y, batch, channels, bins);
}

void spectral_multiply_cpu(const std::complex<double>* x, const std::complex<double>* k, std::complex<double>* y,
                           long batch, long channels, long bins) {
  multiply_rows(x, k, y, batch, channels, bins);
}

void spectral_multiply(const std::complex<float>* x, const std::complex<float>* k, std::complex<float>* y,
                       long batch, long channels, long bins, DeviceKind device) {
  if (device == DeviceKind::cpu) {
    spectral_multiply_cpu(x, k, y, batch, channels, bins);
    return;
  }
  cuda_call("spectral_multiply", cuda_family<nk_cuda_fft>("spectral_multiply").spectral_multiply_c64,
            reinterpret_cast<const float*>(x), reinterpret_cast<const float*>(k), reinterpret_cast<float*>(y), batch,
            channels, bins);
}

}  // namespace nk::kernels
