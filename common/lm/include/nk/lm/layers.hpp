// layers.hpp - the Llama block's element-wise layers, forward and explicit
// backward (llm.c style: caller-owned buffers, no allocation, no autograd).
// Activations are token-major: row n of [N, D] is token n. Templates on the
// scalar so that the model runs in float and the tests check the backward
// against central finite differences in double.
#pragma once
#include <cmath>
#include <cstdint>

namespace nk::lm {

/// RMSNorm: out = x / rms(x) * weight, rms = sqrt(mean(x^2) + eps), per row
/// of [N, D]; rstd[N] keeps 1/rms for the backward.
template <class T>
void rmsnorm_forward(const T* x, const T* weight, int64_t n, int64_t d, double eps, T* out, T* rstd) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < n; ++r) {
    const T* xr = x + r * d;
    double ss = 0;
    for (int64_t i = 0; i < d; ++i) ss += static_cast<double>(xr[i]) * xr[i];
    const T s = static_cast<T>(1.0 / std::sqrt(ss / static_cast<double>(d) + eps));
    rstd[r] = s;
    for (int64_t i = 0; i < d; ++i) out[r * d + i] = xr[i] * s * weight[i];
  }
}

/// dx = (w dy - x s^2 <w dy, x> / D) s (overwritten); dweight += sum over rows
/// of dy x s (accumulated: the caller zeroes gradients once per step).
template <class T>
void rmsnorm_backward(const T* dout, const T* x, const T* weight, const T* rstd, int64_t n, int64_t d, T* dx, T* dweight) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < n; ++r) {
    const T* xr = x + r * d;
    const T* gr = dout + r * d;
    const double s = rstd[r];
    double dot = 0;
    for (int64_t i = 0; i < d; ++i) dot += static_cast<double>(weight[i]) * gr[i] * xr[i];
    const double k = s * s * s * dot / static_cast<double>(d);
    for (int64_t i = 0; i < d; ++i) dx[r * d + i] = static_cast<T>(s * weight[i] * gr[i] - k * xr[i]);
  }
  // The weight gradient sums over rows: by column, so that threads never share an entry.
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < d; ++i) {
    double acc = 0;
    for (int64_t r = 0; r < n; ++r) acc += static_cast<double>(dout[r * d + i]) * x[r * d + i] * rstd[r];
    dweight[i] += static_cast<T>(acc);
  }
}

/// Rotary position embedding in place on [N, H, hd] (token n at positions[n]),
/// in the rotate-half convention of transformers' Llama: pair (i, i + hd/2)
/// turns by positions[n] * theta^(-2i/hd). 'inverse' turns back, which is
/// also the backward (a rotation's transpose is its inverse).
template <class T>
void rope(T* x, const int32_t* positions, int64_t n, int64_t heads, int64_t hd, double theta, bool inverse = false) {
  const int64_t half = hd / 2;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t i = 0; i < half; ++i) {
      const double angle = positions[r] * std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(hd));
      const double c = std::cos(angle), s = inverse ? -std::sin(angle) : std::sin(angle);
      for (int64_t h = 0; h < heads; ++h) {
        T* v = x + (r * heads + h) * hd;
        const double a = v[i], b = v[i + half];
        v[i] = static_cast<T>(a * c - b * s);
        v[i + half] = static_cast<T>(b * c + a * s);
      }
    }
  }
}

/// SwiGLU: out = silu(gate) * up, element-wise over count values.
template <class T>
void swiglu_forward(const T* gate, const T* up, int64_t count, T* out) {
#pragma omp parallel for simd schedule(static)
  for (int64_t e = 0; e < count; ++e) {
    const T g = gate[e], sig = T(1) / (T(1) + std::exp(-g));
    out[e] = g * sig * up[e];
  }
}

/// dgate = dout up silu'(gate), dup = dout silu(gate) (both overwritten).
template <class T>
void swiglu_backward(const T* dout, const T* gate, const T* up, int64_t count, T* dgate, T* dup) {
#pragma omp parallel for simd schedule(static)
  for (int64_t e = 0; e < count; ++e) {
    const T g = gate[e], sig = T(1) / (T(1) + std::exp(-g));
    const T silu = g * sig;
    dgate[e] = dout[e] * up[e] * sig * (T(1) + g * (T(1) - sig));
    dup[e] = dout[e] * silu;
  }
}

}  // namespace nk::lm
