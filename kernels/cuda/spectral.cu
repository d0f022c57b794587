// spectral.cu - y[b,h,f] = x[b,h,f] * k[h,f] on the GPU (CPU twin: cpu/spectral.cpp).
#include <cuComplex.h>

#include "module_common.cuh"

namespace nk::cuda {

namespace {
__global__ void spectral_multiply_kernel(const cuFloatComplex* x, const cuFloatComplex* k, cuFloatComplex* y,
                                         long rows, long channels, long bins) {
  const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i >= rows * bins) return;
  const long row = i / bins, f = i % bins;
  const long h = row % channels;
  y[i] = cuCmulf(x[i], k[h * bins + f]);
}
}  // namespace

int spectral_multiply_c64(const float* x, const float* k, float* y, long batch, long channels, long bins,
                          char* error, size_t error_size) {
  const long rows = batch * channels;
  const size_t signal_bytes = sizeof(cuFloatComplex) * rows * bins;
  const size_t filter_bytes = sizeof(cuFloatComplex) * channels * bins;
  DeviceBuffer d_x, d_k;
  NK_CUDA_TRY(d_x.allocate(signal_bytes));
  NK_CUDA_TRY(d_k.allocate(filter_bytes));
  NK_CUDA_TRY(cudaMemcpy(d_x.get(), x, signal_bytes, cudaMemcpyHostToDevice));
  NK_CUDA_TRY(cudaMemcpy(d_k.get(), k, filter_bytes, cudaMemcpyHostToDevice));
  const long count = rows * bins;
  if (count > 0) {
    spectral_multiply_kernel<<<static_cast<unsigned>((count + 255) / 256), 256>>>(
        static_cast<const cuFloatComplex*>(d_x.get()), static_cast<const cuFloatComplex*>(d_k.get()),
        static_cast<cuFloatComplex*>(d_x.get()), rows, channels, bins);
    NK_CUDA_TRY(cudaGetLastError());
  }
  NK_CUDA_TRY(cudaMemcpy(y, d_x.get(), signal_bytes, cudaMemcpyDeviceToHost));
  return 0;
}

}  // namespace nk::cuda
