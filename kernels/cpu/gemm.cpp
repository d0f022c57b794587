// gemm.cpp - Eigen SGEMM and the cuBLAS dispatch.
#include "nk/kernels/gemm.hpp"

#include <Eigen/Core>
#include <string>

#include "nk/kernels/cuda_call.hpp"

namespace nk::kernels {

void gemm(const float* a, const float* b, float* c, long m, long n, long k, DeviceKind device) {
  if (device == DeviceKind::cuda) {
    cuda_call("gemm (cuBLAS)", cuda_family<nk_cuda_blas>("gemm").gemm_f32, a, b, c, m, n, k);
    return;
  }
  using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<const Matrix> A(a, m, k), B(b, k, n);
  Eigen::Map<Matrix> C(c, m, n);
  C.noalias() = A * B;
}

}  // namespace nk::kernels
