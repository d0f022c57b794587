// gemm_avx512.cpp - gemm_isa.cpp a third time for AVX-512 (F, DQ, VL, BW) with FMA: Eigen's
// 16-float packets and its wider register blocking; Eigen renamed, as in gemm_avx2.cpp.
#ifdef NK_KERNELS_HAVE_ISA_COPIES
#define Eigen EigenKernelsAvx512
#define NK_GEMM_NAMESPACE gemm_avx512
#define NK_GEMM_ISA "avx512"
#include "gemm_isa.cpp"
#endif
