// spectral.hpp - pointwise products in the frequency domain (the inner step of
// every FFT convolution), on the CPU or through the CUDA module.
#pragma once
#include <complex>

#include "nk/device.hpp"

namespace nk::kernels {

/// y[b,h,f] = x[b,h,f] * k[h,f] for b < batch, h < channels, f < bins.
/// x and y are [batch, channels, bins], k is [channels, bins]; y may alias x.
void spectral_multiply(const std::complex<float>* x, const std::complex<float>* k, std::complex<float>* y,
                       long batch, long channels, long bins, DeviceKind device = DeviceKind::cpu);

/// The CPU twin, always available (the reference the CUDA kernel is tested against).
void spectral_multiply_cpu(const std::complex<float>* x, const std::complex<float>* k, std::complex<float>* y,
                           long batch, long channels, long bins);
/// Single-threaded twins, for callers that already run one task per thread.
void spectral_multiply_cpu_serial(const std::complex<float>* x, const std::complex<float>* k, std::complex<float>* y,
                                  long batch, long channels, long bins);
void spectral_multiply_cpu_serial(const std::complex<double>* x, const std::complex<double>* k,
                                  std::complex<double>* y, long batch, long channels, long bins);
/// Double precision (CPU only).
void spectral_multiply_cpu(const std::complex<double>* x, const std::complex<double>* k, std::complex<double>* y,
                           long batch, long channels, long bins);

}  // namespace nk::kernels
