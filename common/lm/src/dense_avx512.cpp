// dense_avx512.cpp - dense.cpp a third time, for AVX-512 (F, DQ, VL, BW) with
// FMA (compile flags set in CMakeLists.txt on x86-64): Eigen's 16-float
// packets and its larger register blocking over 32 vector registers. Eigen
// is renamed, as in dense_avx2.cpp.
#ifdef NK_LM_HAVE_AVX2_COPY
#define Eigen EigenAvx512
#define NK_LM_DENSE_NAMESPACE dense_avx512
#define NK_LM_DENSE_ISA "avx512"
#include "dense.cpp"
#endif
