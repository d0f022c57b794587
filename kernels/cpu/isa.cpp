// isa.cpp - the CPU's widest supported copy, capped by an environment variable.
#include "nk/kernels/isa.hpp"

#include <cstdlib>
#include <cstring>

namespace nk::kernels {

Isa cpu_isa(const char* cap) {
  const char* value = std::getenv(cap);
  const int most = !value ? 2 : std::strcmp(value, "generic") == 0 ? 0 : std::strcmp(value, "avx2") == 0 ? 1 : 2;
#if defined(__x86_64__) || defined(__i386__)
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
  if (most >= 2 && avx512) return Isa::avx512;
  if (most >= 1 && avx2) return Isa::avx2;
#endif
  return Isa::generic;
}

}  // namespace nk::kernels
