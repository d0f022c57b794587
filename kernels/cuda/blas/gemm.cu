// gemm.cu - the blas family: row-major SGEMM through cuBLAS (CPU twin:
// kernels/cpu/gemm.cpp, Eigen).
#include <cublas_v2.h>

#include "../common.cuh"

namespace nk::cuda {

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

}  // namespace nk::cuda

extern const nk_cuda_blas nk_cuda_blas_table = {
    .header = nk::cuda::family_header<nk_cuda_blas>(),
    .gemm_f32 = nk::cuda::gemm_f32,
};
