// gemm.cpp - Eigen SGEMM and the cuBLAS dispatch.
#include "nk/kernels/gemm.hpp"

#include <Eigen/Core>
#include <string>

#include "nk/error.hpp"
#include "nk/kernels/cuda_module.hpp"

namespace nk::kernels {

void gemm(const float* a, const float* b, float* c, long m, long n, long k, DeviceKind device) {
  if (device == DeviceKind::cuda) {
    std::string why;
    const nk_cuda_api* api = cuda_module(&why);
    if (!api) throw Error(Exit::runtime, "gemm on CUDA: " + why);
    char error[512] = {0};
    if (api->gemm_f32(a, b, c, m, n, k, error, sizeof error) != 0) {
      throw Error(Exit::runtime, std::string("gemm on CUDA (cuBLAS): ") + error);
    }
    return;
  }
  using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<const Matrix> A(a, m, k), B(b, k, n);
  Eigen::Map<Matrix> C(c, m, n);
  C.noalias() = A * B;
}

}  // namespace nk::kernels
