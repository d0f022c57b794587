// kernel_avx2.cpp - the page step again for AVX2 + FMA + F16C (compile flags
// set in CMakeLists.txt on x86-64), picked at run time by kernel.cpp.
#ifdef NK_SNAPMLA_HAVE_AVX2_COPY
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "nk/kernels/lowp.hpp"
#include "snapmla-decode/kernel.hpp"

namespace snapmla::detail {
#define NK_SNAPMLA_COPY avx2_copy
#include "snapmla-decode/kernel_page.inc"
#undef NK_SNAPMLA_COPY

PageStep page_step_avx2() { return &avx2_copy::page_step; }
float code_unit_avx2() { return avx2_copy::code_unit(); }
RoundScaled round_e4m3_scaled_avx2() { return &avx2_copy::round_e4m3_scaled; }
RoundScaled round_bf16_scaled_avx2() { return &avx2_copy::round_bf16_scaled; }
bool round_e4m3_avx2(const float* in, float* out, int64_t n) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("f16c")) return false;
  for (int64_t i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, avx2_copy::round_e4m3x8(_mm256_loadu_ps(in + i)));
  return true;
}
bool decode_e4m3_avx2(const uint8_t* codes, float* out, int64_t n) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("f16c")) return false;
  for (int64_t i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, avx2_copy::load_e4m3x8(codes + i));
  return true;
}

}  // namespace snapmla::detail
#endif
