// module_common.cuh - error plumbing and device buffers shared by the module's kernels.
#pragma once
#include <cuda_runtime.h>
#include <cufft.h>

#include <cstddef>
#include <cstdio>

#include "nk/kernels/cuda_module.hpp"

namespace nk::cuda {

inline void set_error(char* error, size_t error_size, const char* message) {
  if (error && error_size) std::snprintf(error, error_size, "%s", message);
}

/// Returns -1 from the calling entry with CUDA's message when 'call' fails.
#define NK_CUDA_TRY(call)                                              \
  do {                                                                 \
    const cudaError_t nk_status = (call);                              \
    if (nk_status != cudaSuccess) {                                    \
      ::nk::cuda::set_error(error, error_size, cudaGetErrorString(nk_status)); \
      cudaGetLastError();                                              \
      return -1;                                                       \
    }                                                                  \
  } while (0)

/// cudaMalloc'd memory freed on scope exit.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (pointer_) cudaFree(pointer_);
  }
  cudaError_t allocate(size_t bytes) { return cudaMalloc(&pointer_, bytes ? bytes : 1); }
  void* get() const { return pointer_; }

 private:
  void* pointer_ = nullptr;
};

/// Allocates 'bytes' on the device and copies them from 'host' (when there are any).
inline cudaError_t upload(DeviceBuffer& buffer, const void* host, size_t bytes) {
  cudaError_t status = buffer.allocate(bytes);
  if (status == cudaSuccess && bytes && host) status = cudaMemcpy(buffer.get(), host, bytes, cudaMemcpyHostToDevice);
  return status;
}

inline const char* cufft_text(cufftResult status) {
  switch (status) {
    case CUFFT_SUCCESS: return "cuFFT: success";
    case CUFFT_INVALID_PLAN: return "cuFFT: invalid plan";
    case CUFFT_ALLOC_FAILED: return "cuFFT: allocation failed";
    case CUFFT_INVALID_VALUE: return "cuFFT: invalid value";
    case CUFFT_EXEC_FAILED: return "cuFFT: execution failed";
    case CUFFT_SETUP_FAILED: return "cuFFT: setup failed";
    case CUFFT_INVALID_SIZE: return "cuFFT: invalid size";
    default: return "cuFFT error";
  }
}

/// Returns -1 from the calling entry with cuFFT's message when 'call' fails.
#define NK_CUFFT_TRY(call)                                                \
  do {                                                                    \
    const cufftResult nk_fft_status = (call);                             \
    if (nk_fft_status != CUFFT_SUCCESS) {                                 \
      ::nk::cuda::set_error(error, error_size, ::nk::cuda::cufft_text(nk_fft_status)); \
      return -1;                                                          \
    }                                                                     \
  } while (0)

/// CUDA events around a stretch of work on the default stream.
class Timer {
 public:
  Timer() {
    cudaEventCreate(&start_);
    cudaEventCreate(&stop_);
  }
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  ~Timer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  cudaError_t start() { return cudaEventRecord(start_, nullptr); }
  /// Waits for the work since start(); its status (a failed kernel shows here) and time.
  cudaError_t stop(float* ms) {
    cudaError_t status = cudaEventRecord(stop_, nullptr);
    if (status == cudaSuccess) status = cudaEventSynchronize(stop_);
    if (status == cudaSuccess) status = cudaEventElapsedTime(ms, start_, stop_);
    return status;
  }
  /// Milliseconds since start() (0 when the events failed; callers check
  /// cudaGetLastError separately).
  double stop() {
    float ms = 0;
    stop(&ms);
    return ms;
  }

 private:
  cudaEvent_t start_{}, stop_{};
};

int spectral_multiply_c64(const float* x, const float* k, float* y, long batch, long channels, long bins,
                          char* error, size_t error_size);

int block_sparse_attention_f32(const float* q, const float* k, const float* v, const int* kv_of,
                               const unsigned char* keep, long heads, long kv_heads, long length, long dims,
                               long block, float scale, int repeats, float* out, nk_cuda_timing* timing, char* error,
                               size_t error_size);
int dense_attention_cublas_f32(const float* q, const float* k, const float* v, const int* kv_of, long heads,
                               long kv_heads, long length, long dims, float scale, int repeats, float* out,
                               nk_cuda_timing* timing, char* error, size_t error_size);
int packed_conv_f32(const float* x, const float* k, const float* bias, float* y, long batch, long length,
                    long channels, long filter_length, const nk_conv_bucket* buckets, long bucket_count,
                    const long* direct, long direct_count, int repeats, nk_cuda_timing* timing, char* error,
                    size_t error_size);
int packed_conv_f64(const double* x, const double* k, const double* bias, double* y, long batch, long length,
                    long channels, long filter_length, const nk_conv_bucket* buckets, long bucket_count,
                    const long* direct, long direct_count, int repeats, nk_cuda_timing* timing, char* error,
                    size_t error_size);
int louver_search_f32(const float* keys, const float* key_norm, long n, long dims, long coded, long subspaces,
                      const unsigned short* code16, const unsigned short* residual16, const float* queries,
                      long query_count, const float* tables, const long* table_offset, const float* q_norm,
                      const double* cut, const double* prune_cut, const float* q_rest, const float* rest_norm,
                      long warm, const double* unit, const double* threshold, int dense, int repeats,
                      long* scanned, nk_hit_sink sink, void* sink_context, nk_cuda_timing* timing, char* error,
                      size_t error_size);
int packed_conv_grad_f32(const float* x, const float* k, const float* bias, const float* dy, float* dx, float* dk,
                         float* dbias, long batch, long length, long channels, long filter_length,
                         const nk_conv_bucket* buckets, const nk_conv_bucket* anticausal, long bucket_count,
                         const long* direct, long direct_count, int repeats, nk_cuda_timing* timing, char* error,
                         size_t error_size);
int packed_conv_grad_f64(const double* x, const double* k, const double* bias, const double* dy, double* dx,
                         double* dk, double* dbias, long batch, long length, long channels, long filter_length,
                         const nk_conv_bucket* buckets, const nk_conv_bucket* anticausal, long bucket_count,
                         const long* direct, long direct_count, int repeats, nk_cuda_timing* timing, char* error,
                         size_t error_size);

}  // namespace nk::cuda
