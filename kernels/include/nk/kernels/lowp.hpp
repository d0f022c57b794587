// lowp.hpp - low-precision number formats as bit patterns: bfloat16 and
// FP8 E4M3 (OCP / NVIDIA "e4m3fn"), exact conversions from float32 and back.
// Header-only: the CPU kernels inline them and the CUDA twins (kernels/cuda)
// are tested against them.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace nk::kernels {

/// float32 -> bfloat16 bits, round to nearest, ties to even; NaN stays a
/// (quiet) NaN of the same sign, infinities stay infinite.
inline uint16_t to_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

/// bfloat16 bits -> float32 (exact).
inline float from_bf16(uint16_t bits) {
  const uint32_t u = static_cast<uint32_t>(bits) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

/// The largest finite E4M3 value.
inline constexpr float kE4m3Max = 448.0f;

/// float32 -> E4M3 code: exponent bias 7, 3 mantissa bits, no infinities,
/// NaN = 0x7F / 0xFF, subnormals m * 2^-9. Rounds to nearest with ties to the
/// even code and saturates to +-448 (infinities included), as CUDA's
/// __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3); the sign is kept
/// (-0 -> 0x80); NaN -> 0x7F with the input's sign bit.
inline uint8_t to_e4m3(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  const uint8_t sign = static_cast<uint8_t>((u >> 24) & 0x80u);
  u &= 0x7fffffffu;
  if (u > 0x7f800000u) return static_cast<uint8_t>(sign | 0x7f);
  if (u >= 0x43e00000u) return static_cast<uint8_t>(sign | 0x7e);  // >= 448 (and +-inf): saturate
  if (u < 0x3c800000u) {                                            // below 2^-6: the subnormal grid m * 2^-9
    float a;
    std::memcpy(&a, &u, 4);
    const float m = std::nearbyint(a * 512.0f);  // exact scaling; the default mode rounds ties to even
    return static_cast<uint8_t>(sign | static_cast<uint8_t>(m));  // m = 8 is the code of 2^-6
  }
  // Normal: keep 3 of the 23 mantissa bits, ties to even; a carry moves into the exponent.
  uint32_t code = (((u >> 23) - 120u) << 3) | ((u >> 20) & 7u);
  const uint32_t rest = u & 0xfffffu;
  if (rest > 0x80000u || (rest == 0x80000u && (code & 1u))) ++code;
  if (code > 0x7eu) code = 0x7eu;
  return static_cast<uint8_t>(sign | code);
}

/// E4M3 code -> float32 (exact; NaN codes give NaN).
inline float from_e4m3(uint8_t code) {
  const uint32_t e = (code >> 3) & 0xfu, m = code & 7u;
  float v;
  if ((code & 0x7f) == 0x7f) v = std::nanf("");
  else if (e == 0) v = std::ldexp(static_cast<float>(m), -9);
  else v = std::ldexp(static_cast<float>(8 + m), static_cast<int>(e) - 10);
  return (code & 0x80) ? -v : v;
}

/// The half-precision bits whose value is exactly from_e4m3(code) * 2^-8
/// (subnormals included): a vector decode converts 8 codes at once with
/// F16C's vcvtph2ps and scales by 256 (or folds it into a scale).
inline uint16_t e4m3_as_half_bits(uint8_t code) {
  return static_cast<uint16_t>(((code & 0x80u) << 8) | ((code & 0x7fu) << 7));
}

}  // namespace nk::kernels
