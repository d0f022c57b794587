// dense_ops.cpp - which copy of the hot loops this process runs.
#include "dense.hpp"
#include "nk/kernels/isa.hpp"

namespace nk::lm {

const DenseOps& dense_ops() {
  static const DenseOps& chosen = []() -> const DenseOps& {
#ifdef NK_LM_HAVE_AVX2_COPY
    switch (nk::kernels::cpu_isa("NK_LM_ISA")) {
      case nk::kernels::Isa::avx512: return dense_avx512::ops;
      case nk::kernels::Isa::avx2: return dense_avx2::ops;
      case nk::kernels::Isa::generic: break;
    }
#endif
    return dense_generic::ops;
  }();
  return chosen;
}

}  // namespace nk::lm
