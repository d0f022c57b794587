// vector.cpp - the vector loops' instruction-set copy for this process.
#include "nk/kernels/vector.hpp"

#include <stdexcept>

#include "nk/kernels/isa.hpp"
#include "vector_isa.hpp"

namespace nk::kernels {

namespace {

const VectorOps& vector_cpu_ops() {
  static const VectorOps& chosen = []() -> const VectorOps& {
#ifdef NK_KERNELS_HAVE_ISA_COPIES
    switch (cpu_isa("NK_KERNELS_ISA")) {
      case Isa::avx512: return vector_avx512::ops;
      case Isa::avx2: return vector_avx2::ops;
      case Isa::generic: break;
    }
#endif
    return vector_generic::ops;
  }();
  return chosen;
}

}  // namespace

void fill_normal(Rng& rng, float* out, int64_t n, float scale) { vector_cpu_ops().fill_normal(rng, out, n, scale); }

void conv2d_direct(const ConvShape& s, const float* x, const float* packed, const float* bias, float* y,
                   const ConvEpilogue& epilogue) {
  const int64_t o = s.out_channels;
  const bool fixed = o == 4 || o == 8 || o == 16 || o == 32 || o == 64;
  if (epilogue.pool > 1 && (!epilogue.relu || !fixed)) {
    throw std::invalid_argument("conv2d_direct: a pooling epilogue needs relu and 4, 8, 16, 32 or 64 output channels");
  }
  vector_cpu_ops().conv2d_direct(s, x, packed, bias, y, epilogue);
}

void silu(const float* x, float* y, int64_t n) { vector_cpu_ops().silu(x, y, n); }

void silu_backward(const float* x, const float* dy, float* dx, int64_t n) { vector_cpu_ops().silu_backward(x, dy, dx, n); }

void softmax_rows_biased(const float* z, int64_t rows, int64_t V, const float* b, double* lse, double* acc) {
  vector_cpu_ops().softmax_rows_biased(z, rows, V, b, lse, acc);
}

const char* vector_isa() { return vector_cpu_ops().isa; }

}  // namespace nk::kernels
