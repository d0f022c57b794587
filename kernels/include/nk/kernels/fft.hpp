// fft.hpp - batched real FFTs: FFTW with a plan cache on the CPU, cuFFT through
// the CUDA module when --device picked CUDA.
#pragma once
#include <complex>
#include <string>

#include "nk/device.hpp"

namespace nk::fft {

/// Number of complex bins of a real transform of length n.
inline long bins(long n) { return n / 2 + 1; }

/// Forward transforms of 'batch' contiguous rows of length n (row stride n);
/// out holds batch rows of bins(n) values. Unnormalised.
void forward(const float* in, std::complex<float>* out, long n, long batch, DeviceKind device = DeviceKind::cpu);
void forward(const double* in, std::complex<double>* out, long n, long batch);

/// Inverse transforms, scaled by 1/n so that inverse(forward(x)) == x. 'in'
/// is not modified.
void inverse(const std::complex<float>* in, float* out, long n, long batch, DeviceKind device = DeviceKind::cpu);
void inverse(const std::complex<double>* in, double* out, long n, long batch);
/// The same, free to overwrite 'in' (FFTW's faster path for complex-to-real).
void inverse_destroying(std::complex<float>* in, float* out, long n, long batch);
void inverse_destroying(std::complex<double>* in, double* out, long n, long batch);

/// A fast transform length >= n whose factors are 2, 3, 5 and 7.
long good_size(long n);

/// Plans created so far (for tests and --verbose).
long cached_plans();

/// "fftw-3.3.10".
std::string fftw_version();

}  // namespace nk::fft
