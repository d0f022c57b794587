// vector_isa.hpp - the table each instruction-set copy of vector_isa.cpp fills.
#pragma once
#include "nk/kernels/vector.hpp"

namespace nk::kernels {

struct VectorOps {
  const char* isa;
  void (*fill_normal)(Rng& rng, float* out, int64_t n, float scale);
  void (*conv2d_direct)(const ConvShape& s, const float* x, const float* packed, const float* bias, float* y,
                        const ConvEpilogue& epilogue);
  void (*silu)(const float* x, float* y, int64_t n);
  void (*silu_backward)(const float* x, const float* dy, float* dx, int64_t n);
  void (*softmax_rows_biased)(const float* z, int64_t rows, int64_t V, const float* b, double* lse, double* acc);
};

namespace vector_generic {
extern const VectorOps ops;
}
namespace vector_avx2 {
extern const VectorOps ops;
}
namespace vector_avx512 {
extern const VectorOps ops;
}

}  // namespace nk::kernels
