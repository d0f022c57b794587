// common.cuh - error plumbing, device buffers and family headers shared by the module's kernels.
#pragma once
#include <cuda_runtime.h>
#include <cufft.h>

#include <cstddef>
#include <cstdio>

#include "nk/kernels/cuda_families.hpp"

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
  /// Frees the memory now (allocate may follow).
  void release() {
    if (pointer_) cudaFree(pointer_);
    pointer_ = nullptr;
  }
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

/// A family table's header, as the loader checks it.
template <class Family>
constexpr nk_cuda_family_header family_header() {
  return {Family::family, Family::version, sizeof(Family)};
}

}  // namespace nk::cuda
