// module.cu - libnk-cuda.so: the entry table that common/ finds with dlsym.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cufft.h>

#include <cstdio>
#include <cstring>

#include "module_common.cuh"
#include "nk/kernels/cuda_module.hpp"

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

__global__ void scale_kernel(float* data, long count, float factor) {
  const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i < count) data[i] *= factor;
}

int rfft_f32(const float* in, float* out, long n, long batch, char* error, size_t error_size) {
  const size_t real_bytes = sizeof(float) * n * batch;
  const size_t complex_bytes = sizeof(cufftComplex) * (n / 2 + 1) * batch;
  DeviceBuffer d_in, d_out;
  NK_CUDA_TRY(d_in.allocate(real_bytes));
  NK_CUDA_TRY(d_out.allocate(complex_bytes));
  NK_CUDA_TRY(cudaMemcpy(d_in.get(), in, real_bytes, cudaMemcpyHostToDevice));
  cufftHandle plan;
  NK_CUFFT_TRY(cufftPlan1d(&plan, static_cast<int>(n), CUFFT_R2C, static_cast<int>(batch)));
  const cufftResult status = cufftExecR2C(plan, static_cast<cufftReal*>(d_in.get()), static_cast<cufftComplex*>(d_out.get()));
  cufftDestroy(plan);
  NK_CUFFT_TRY(status);
  NK_CUDA_TRY(cudaMemcpy(out, d_out.get(), complex_bytes, cudaMemcpyDeviceToHost));
  return 0;
}

int irfft_f32(const float* in, float* out, long n, long batch, char* error, size_t error_size) {
  const size_t real_bytes = sizeof(float) * n * batch;
  const size_t complex_bytes = sizeof(cufftComplex) * (n / 2 + 1) * batch;
  DeviceBuffer d_in, d_out;
  NK_CUDA_TRY(d_in.allocate(complex_bytes));
  NK_CUDA_TRY(d_out.allocate(real_bytes));
  NK_CUDA_TRY(cudaMemcpy(d_in.get(), in, complex_bytes, cudaMemcpyHostToDevice));
  cufftHandle plan;
  NK_CUFFT_TRY(cufftPlan1d(&plan, static_cast<int>(n), CUFFT_C2R, static_cast<int>(batch)));
  const cufftResult status = cufftExecC2R(plan, static_cast<cufftComplex*>(d_in.get()), static_cast<cufftReal*>(d_out.get()));
  cufftDestroy(plan);
  NK_CUFFT_TRY(status);
  const long count = n * batch;
  scale_kernel<<<static_cast<unsigned>((count + 255) / 256), 256>>>(static_cast<float*>(d_out.get()), count, 1.0f / n);
  NK_CUDA_TRY(cudaGetLastError());
  NK_CUDA_TRY(cudaMemcpy(out, d_out.get(), real_bytes, cudaMemcpyDeviceToHost));
  return 0;
}

int gemm_f32(const float* a, const float* b, float* c, long m, long n, long k, char* error, size_t error_size) {
  DeviceBuffer d_a, d_b, d_c;
  NK_CUDA_TRY(d_a.allocate(sizeof(float) * m * k));
  NK_CUDA_TRY(d_b.allocate(sizeof(float) * k * n));
  NK_CUDA_TRY(d_c.allocate(sizeof(float) * m * n));
  NK_CUDA_TRY(cudaMemcpy(d_a.get(), a, sizeof(float) * m * k, cudaMemcpyHostToDevice));
  NK_CUDA_TRY(cudaMemcpy(d_b.get(), b, sizeof(float) * k * n, cudaMemcpyHostToDevice));
  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    set_error(error, error_size, "cublasCreate failed");
    return -1;
  }
  // Row-major C = A B is column-major C^T = B^T A^T.
  const float one = 1.0f, zero = 0.0f;
  const cublasStatus_t status =
      cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k),
                  &one, static_cast<const float*>(d_b.get()), static_cast<int>(n),
                  static_cast<const float*>(d_a.get()), static_cast<int>(k), &zero, static_cast<float*>(d_c.get()),
                  static_cast<int>(n));
  cublasDestroy(handle);
  if (status != CUBLAS_STATUS_SUCCESS) {
    set_error(error, error_size, "cublasSgemm failed");
    return -1;
  }
  NK_CUDA_TRY(cudaMemcpy(c, d_c.get(), sizeof(float) * m * n, cudaMemcpyDeviceToHost));
  return 0;
}

}  // namespace

}  // namespace nk::cuda

extern "C" __attribute__((visibility("default"))) const nk_cuda_api* nk_cuda_get_api(void) {
  static const nk_cuda_api api = {
      NK_CUDA_ABI_VERSION,       nk::cuda::runtime_version, nk::cuda::device_count,
      nk::cuda::device_name,     nk::cuda::spectral_multiply_c64, nk::cuda::rfft_f32,
      nk::cuda::irfft_f32,       nk::cuda::gemm_f32,
      nk::cuda::block_sparse_attention_f32, nk::cuda::dense_attention_cublas_f32,
      nk::cuda::packed_conv_f32, nk::cuda::packed_conv_f64,
      nk::cuda::louver_search_f32,
      nk::cuda::packed_conv_grad_f32, nk::cuda::packed_conv_grad_f64,
  };
  return &api;
}
