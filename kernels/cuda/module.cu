// module.cu - libnk-cuda.so: the core family and the one exported symbol,
// nk_cuda_family, through which the loader (common/core/src/device.cpp) finds
// every family table (nk/kernels/cuda_families.hpp) by name and version.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

#include "common.cuh"

namespace nk::cuda {

namespace {

const char* runtime_version() {
  static char text[32];
  int version = 0;
  cudaRuntimeGetVersion(&version);
  std::snprintf(text, sizeof text, "%d.%d", version / 1000, (version % 1000) / 10);
  return text;
}

int device_count(char* error, size_t error_size) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    set_error(error, error_size, cudaGetErrorString(status));
    cudaGetLastError();
    return -1;
  }
  return count;
}

int device_name(char* name, size_t name_size, char* error, size_t error_size) {
  cudaDeviceProp properties{};
  NK_CUDA_TRY(cudaGetDeviceProperties(&properties, 0));
  std::snprintf(name, name_size, "%s", properties.name);
  return 0;
}

}  // namespace

}  // namespace nk::cuda

extern const nk_cuda_core nk_cuda_core_table = {
    .header = nk::cuda::family_header<nk_cuda_core>(),
    .runtime_version = nk::cuda::runtime_version,
    .device_count = nk::cuda::device_count,
    .device_name = nk::cuda::device_name,
};

// Each family's table is defined beside its kernels, in kernels/cuda/<family>/.
#define NK_DECLARE_FAMILY(F) extern const F F##_table;
NK_CUDA_FAMILIES(NK_DECLARE_FAMILY)

extern "C" __attribute__((visibility("default"))) const nk_cuda_family_header* nk_cuda_family(const char* name,
                                                                                              int version) {
#define NK_LOOKUP_FAMILY(F) \
  if (std::strcmp(name, F::family) == 0) return version == F::version ? &F##_table.header : nullptr;
  NK_CUDA_FAMILIES(NK_LOOKUP_FAMILY)
  return nullptr;
}
