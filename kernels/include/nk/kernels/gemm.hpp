// gemm.hpp - single-precision matrix product on the CPU (Eigen) or GPU (cuBLAS).
#pragma once
#include "nk/device.hpp"

namespace nk::kernels {

/// C = A B for row-major A [m,k], B [k,n], C [m,n].
void gemm(const float* a, const float* b, float* c, long m, long n, long k, DeviceKind device = DeviceKind::cpu);

}  // namespace nk::kernels
