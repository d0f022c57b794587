// dense_avx2.cpp - dense.cpp again, for AVX2+FMA (compile flags set in
// CMakeLists.txt on x86-64). Eigen is renamed so that none of its template
// instances here can stand in for the baseline copy's at link time.
#ifdef NK_LM_HAVE_AVX2_COPY
#define Eigen EigenAvx2
#define NK_LM_DENSE_NAMESPACE dense_avx2
#define NK_LM_DENSE_ISA "avx2+fma"
#include "dense.cpp"
#endif
