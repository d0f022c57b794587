// probe.cu - the probe family: what the device sustains, measured (copy
// bandwidth and the BF16 GEMM rate), for a roofline's derating.
#include <cublas_v2.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "../common.cuh"

namespace nk::cuda {

namespace {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

__global__ void fill_bf16(__nv_bfloat16* x, long n, float scale) {
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n; i += static_cast<long>(gridDim.x) * blockDim.x) {
    x[i] = __float2bfloat16(scale * static_cast<float>((i * 2654435761u) % 1000) / 1000.0f - 0.5f * scale);
  }
}

int device_limits(double seconds, nk_device_limits* out, char* error, size_t error_size) {
  *out = nk_device_limits{};
  cudaDeviceProp properties{};
  NK_CUDA_TRY(cudaGetDeviceProperties(&properties, 0));
  std::snprintf(out->device, sizeof out->device, "%s", properties.name);
  out->memory_bytes = static_cast<double>(properties.totalGlobalMem);
  const double half = std::max(0.5, seconds / 2);
  cudaEvent_t start, stop;
  NK_CUDA_TRY(cudaEventCreate(&start));
  NK_CUDA_TRY(cudaEventCreate(&stop));
  auto elapsed = [&](float* ms) {
    cudaEventSynchronize(stop);
    return cudaEventElapsedTime(ms, start, stop);
  };
  int status = 0;
  {
    // Copy: 1 GiB (less on a small device) each way.
    const long bytes = std::min<long>(1L << 30, static_cast<long>(properties.totalGlobalMem / 8));
    DeviceBuffer a, b;
    NK_CUDA_TRY(a.allocate(bytes));
    NK_CUDA_TRY(b.allocate(bytes));
    NK_CUDA_TRY(cudaMemset(a.get(), 1, bytes));
    NK_CUDA_TRY(cudaMemcpy(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice));  // warm-up
    float best = 1e30f;
    const auto t0 = std::chrono::steady_clock::now();
    int runs = 0;
    while (runs < 1000 && (runs < 3 || since(t0) < half)) {
      NK_CUDA_TRY(cudaEventRecord(start));
      NK_CUDA_TRY(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice));
      NK_CUDA_TRY(cudaEventRecord(stop));
      float ms = 0;
      NK_CUDA_TRY(elapsed(&ms));
      best = std::min(best, ms);
      ++runs;
    }
    out->copy_bytes = bytes;
    out->copy_runs = runs;
    out->copy_bytes_per_s = 2.0 * static_cast<double>(bytes) / (best / 1e3);
  }
  {
    const long n = 8192;
    DeviceBuffer a, b, c;
    NK_CUDA_TRY(a.allocate(sizeof(__nv_bfloat16) * n * n));
    NK_CUDA_TRY(b.allocate(sizeof(__nv_bfloat16) * n * n));
    NK_CUDA_TRY(c.allocate(sizeof(__nv_bfloat16) * n * n));
    fill_bf16<<<1024, 256>>>(static_cast<__nv_bfloat16*>(a.get()), n * n, 1.0f);
    fill_bf16<<<1024, 256>>>(static_cast<__nv_bfloat16*>(b.get()), n * n, 1.0f);
    NK_CUDA_TRY(cudaGetLastError());
    cublasHandle_t handle;
    if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
      set_error(error, error_size, "cublasCreate failed");
      return -1;
    }
    const float one = 1.0f, zero = 0.0f;
    auto gemm = [&] {
      return cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(n), static_cast<int>(n), &one,
                          a.get(), CUDA_R_16BF, static_cast<int>(n), b.get(), CUDA_R_16BF, static_cast<int>(n), &zero, c.get(),
                          CUDA_R_16BF, static_cast<int>(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    };
    float best = 1e30f;
    int runs = 0;
    if (gemm() != CUBLAS_STATUS_SUCCESS) {  // warm-up (and the algorithm's choice)
      set_error(error, error_size, "cublasGemmEx (BF16) failed");
      status = -1;
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      while (runs < 1000 && (runs < 3 || since(t0) < half)) {
        cudaEventRecord(start);
        const cublasStatus_t s = gemm();
        cudaEventRecord(stop);
        float ms = 0;
        if (s != CUBLAS_STATUS_SUCCESS || elapsed(&ms) != cudaSuccess) {
          set_error(error, error_size, "cublasGemmEx (BF16) failed");
          status = -1;
          break;
        }
        best = std::min(best, ms);
        ++runs;
      }
    }
    cublasDestroy(handle);
    out->gemm_size = n;
    out->gemm_runs = runs;
    if (status == 0) out->bf16_flops = 2.0 * n * n * static_cast<double>(n) / (best / 1e3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return status;
}

}  // namespace

}  // namespace nk::cuda

extern const nk_cuda_probe nk_cuda_probe_table = {
    .header = nk::cuda::family_header<nk_cuda_probe>(),
    .device_limits = nk::cuda::device_limits,
};
