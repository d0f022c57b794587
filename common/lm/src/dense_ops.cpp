// dense_ops.cpp - which copy of the hot loops this process runs.
#include <cstdlib>
#include <cstring>

#include "dense.hpp"

namespace nk::lm {

const DenseOps& dense_ops() {
  static const DenseOps& chosen = []() -> const DenseOps& {
#ifdef NK_LM_HAVE_AVX2_COPY
    const char* force = std::getenv("NK_LM_ISA");
    const bool generic = force && std::strcmp(force, "generic") == 0;
    if (!generic && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return dense_avx2::ops;
#endif
    return dense_generic::ops;
  }();
  return chosen;
}

}  // namespace nk::lm
