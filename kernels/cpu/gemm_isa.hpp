// gemm_isa.hpp - the table each instruction-set copy of gemm_isa.cpp fills.
#pragma once

namespace nk::kernels {

struct GemmOps {
  const char* isa;
  void (*gemm)(const float* a, const float* b, float* c, long m, long n, long k);
  void (*gemm_nt)(const float* a, const float* b, float* c, long m, long n, long k, bool accumulate);
  void (*gemm_tn)(const float* a, const float* b, float* c, long m, long n, long k, bool accumulate);
};

namespace gemm_generic {
extern const GemmOps ops;
}
namespace gemm_avx2 {
extern const GemmOps ops;
}
namespace gemm_avx512 {
extern const GemmOps ops;
}

}  // namespace nk::kernels
