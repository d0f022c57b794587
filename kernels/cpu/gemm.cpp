// gemm.cpp - the CPU products' instruction-set copy for this process, and the cuBLAS dispatch.
#include "nk/kernels/gemm.hpp"

#include "gemm_isa.hpp"
#include "nk/kernels/cuda_call.hpp"
#include "nk/kernels/isa.hpp"

namespace nk::kernels {

namespace {

const GemmOps& cpu_ops() {
  static const GemmOps& chosen = []() -> const GemmOps& {
#ifdef NK_KERNELS_HAVE_ISA_COPIES
    switch (cpu_isa("NK_KERNELS_ISA")) {
      case Isa::avx512: return gemm_avx512::ops;
      case Isa::avx2: return gemm_avx2::ops;
      case Isa::generic: break;
    }
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

void gemm_tn(const float* a, const float* b, float* c, long m, long n, long k, bool accumulate) {
  cpu_ops().gemm_tn(a, b, c, m, n, k, accumulate);
}

const char* gemm_isa() { return cpu_ops().isa; }

}  // namespace nk::kernels
