// vector_avx512.cpp - vector_isa.cpp a third time for AVX-512 (F, DQ, VL, BW): 16-float vectors.
#ifdef NK_KERNELS_HAVE_ISA_COPIES
#define NK_VECTOR_NAMESPACE vector_avx512
#define NK_VECTOR_ISA "avx512"
#include "vector_isa.cpp"
#endif
