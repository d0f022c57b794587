// vector_avx2.cpp - vector_isa.cpp again for AVX2 + FMA (flags in CMakeLists.txt).
#ifdef NK_KERNELS_HAVE_ISA_COPIES
#define NK_VECTOR_NAMESPACE vector_avx2
#define NK_VECTOR_ISA "avx2"
#include "vector_isa.cpp"
#endif
