// cuda_module.hpp - the C ABI of libnk-cuda.so, the CUDA module that common/
// loads with dlopen. Backend-neutral: no CUDA header is needed to include it.
#pragma once
#include <cstddef>

extern "C" {

/// Bumped whenever a field is added, removed or changes meaning.
#define NK_CUDA_ABI_VERSION 1

/// Every entry returns 0 on success, or -1 and fills 'error' (error_size bytes)
/// with a one-line reason. Pointers are host pointers; the module copies to and
/// from the device. Complex numbers are interleaved (re, im) floats.
struct nk_cuda_api {
  int abi_version;
  /// CUDA runtime version as text, e.g. "13.0".
  const char* (*runtime_version)(void);
  /// Number of usable devices (>= 0), or -1 with the reason none can be used.
  int (*device_count)(char* error, size_t error_size);
  /// Name of device 0.
  int (*device_name)(char* name, size_t name_size, char* error, size_t error_size);
  /// y[b,h,f] = x[b,h,f] * k[h,f] for b < batch, h < channels, f < bins (complex).
  int (*spectral_multiply_c64)(const float* x, const float* k, float* y, long batch, long channels, long bins,
                               char* error, size_t error_size);
  /// Batched real-to-complex FFT (cuFFT) of 'batch' rows of length n: out has n/2+1 bins per row.
  int (*rfft_f32)(const float* in, float* out, long n, long batch, char* error, size_t error_size);
  /// Inverse of rfft_f32, scaled by 1/n so that irfft(rfft(x)) = x.
  int (*irfft_f32)(const float* in, float* out, long n, long batch, char* error, size_t error_size);
  /// C = A B for row-major A [m,k], B [k,n], C [m,n] (cuBLAS SGEMM).
  int (*gemm_f32)(const float* a, const float* b, float* c, long m, long n, long k, char* error, size_t error_size);
};

/// The module's single exported symbol.
const nk_cuda_api* nk_cuda_get_api(void);
}
