// module_common.cuh - error plumbing and device buffers shared by the module's kernels.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>

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

int spectral_multiply_c64(const float* x, const float* k, float* y, long batch, long channels, long bins,
                          char* error, size_t error_size);

}  // namespace nk::cuda
