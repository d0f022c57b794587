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

}  // namespace snapmla::detail
#endif
