// gemm.cpp - the CPU products' instruction-set copy for this process, and the cuBLAS dispatch.
#include "nk/kernels/gemm.hpp"

#include <cstdlib>
#include <cstring>

#include "gemm_isa.hpp"
#include "nk/kernels/cuda_call.hpp"

namespace nk::kernels {

namespace {

const GemmOps& cpu_ops() {
  static const GemmOps& chosen = []() -> const GemmOps& {
#ifdef NK_KERNELS_HAVE_ISA_COPIES
    const char* cap = std::getenv("NK_KERNELS_ISA");
    const int most = !cap ? 2 : std::strcmp(cap, "generic") == 0 ? 0 : std::strcmp(cap, "avx2") == 0 ? 1 : 2;
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
    if (most >= 2 && avx512) return gemm_avx512::ops;
    if (most >= 1 && avx2) return gemm_avx2::ops;
#endif
    return gemm_generic::ops;
  }();
  return chosen;
}

}  // namespace

void gemm(const float* a, const float* b, float* c, long m, long n, long k, DeviceKind device) {
  if (device == DeviceKind::cuda) {
    cuda_call("gemm (cuBLAS)", cuda_family<nk_cuda_blas>("gemm").gemm_f32, a, b, c, m, n, k);
    return;
  }
  cpu_ops().gemm(a, b, c, m, n, k);
}

void gemm_nt(const float* a, const float* b, float* c, long m, long n, long k, bool accumulate) {
  cpu_ops().gemm_nt(a, b, c, m, n, k, accumulate);
}

const char* gemm_isa() { return cpu_ops().isa; }

}  // namespace nk::kernels
