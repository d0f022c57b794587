// gemm.hpp - single-precision matrix products on the CPU (Eigen, in the
// widest instruction-set copy the CPU runs) or GPU (cuBLAS).
#pragma once
#include "nk/device.hpp"

namespace nk::kernels {

/// C = A B for row-major A [m,k], B [k,n], C [m,n].
void gemm(const float* a, const float* b, float* c, long m, long n, long k, DeviceKind device = DeviceKind::cpu);

/// C [m,n] = A B^T (or C += A B^T with 'accumulate') for row-major A [m,k]
/// and B [n,k]: both operands are read along their rows (a layer's weights
/// [out, in] applied to a batch). CPU only.
void gemm_nt(const float* a, const float* b, float* c, long m, long n, long k, bool accumulate = false);

/// C [m,n] = A^T B (or C += A^T B) for row-major A [k,m] and B [k,n]: a sum
/// of outer products over k rows (a weight gradient from a batch). CPU only;
/// inside an OpenMP region it runs on the calling thread alone.
void gemm_tn(const float* a, const float* b, float* c, long m, long n, long k, bool accumulate = false);

/// Which copy of the CPU products runs: "avx512" where the CPU has AVX-512
/// F/DQ/VL/BW, else "avx2" (AVX2 + FMA), else "generic" (the baseline
/// x86-64 or other ISA the binary was built for). NK_KERNELS_ISA = generic,
/// avx2 or avx512 caps the choice; binaries stay portable without -march=native.
const char* gemm_isa();

}  // namespace nk::kernels
