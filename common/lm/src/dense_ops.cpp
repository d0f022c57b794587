// dense_ops.cpp - which copy of the hot loops this process runs.
#include <cstdlib>
#include <cstring>

#include "dense.hpp"

namespace nk::lm {

const DenseOps& dense_ops() {
  static const DenseOps& chosen = []() -> const DenseOps& {
#ifdef NK_LM_HAVE_AVX2_COPY
    const char* cap = std::getenv("NK_LM_ISA");
    const int most = !cap ? 2 : std::strcmp(cap, "generic") == 0 ? 0 : std::strcmp(cap, "avx2") == 0 ? 1 : 2;
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
    if (most >= 2 && avx512) return dense_avx512::ops;
    if (most >= 1 && avx2) return dense_avx2::ops;
#endif
    return dense_generic::ops;
  }();
  return chosen;
}

}  // namespace nk::lm
