// gemm_avx2.cpp - gemm_isa.cpp again for AVX2 + FMA (flags in CMakeLists.txt), Eigen renamed.
#ifdef NK_KERNELS_HAVE_ISA_COPIES
#define Eigen EigenKernelsAvx2
#define NK_GEMM_NAMESPACE gemm_avx2
#define NK_GEMM_ISA "avx2"
#include "gemm_isa.cpp"
#endif
