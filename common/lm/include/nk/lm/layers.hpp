// layers.hpp - the Llama block's element-wise layers, forward and explicit
// backward (llm.c style: caller-owned buffers, no allocation, no autograd).
// Activations are token-major: row n of [N, D] is token n. Templates on the
// scalar so that the model runs in float and the tests check the backward
// against central finite differences in double.
#pragma once
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace nk::lm {

namespace detail {
/// x = exp(x) element by element through Eigen's vectorised exp, every
/// element the same way (a partial last packet is padded, no scalar
/// prologue), so a value never depends on its address or its place in the
/// buffer: packed and separate batches, and resumed runs, stay bit-identical.
template <class T>
void exp_inplace(T* x, int64_t n) {
  namespace ei = Eigen::internal;
  using Packet = typename ei::packet_traits<T>::type;
  constexpr int64_t P = sizeof(Packet) / sizeof(T);
  int64_t i = 0;
  for (; i + P <= n; i += P) ei::pstoreu(x + i, ei::pexp(ei::ploadu<Packet>(x + i)));
  if (i < n) {
    T pad[P] = {};
    std::copy(x + i, x + n, pad);
    ei::pstoreu(pad, ei::pexp(ei::ploadu<Packet>(pad)));
    std::copy(pad, pad + (n - i), x + i);
  }
}
}  // namespace detail

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

/// Rotary position embedding in place, in the rotate-half convention of
/// transformers' Llama, on values [offset, offset + dim) of each of 'heads'
/// blocks of head_stride values per token (token n at positions[n], rows of
/// heads * head_stride): pair (i, i + dim/2) turns by positions[n] *
/// theta^(-2i/dim). 'inverse' turns back, which is also the backward (a
/// rotation's transpose is its inverse). MLA turns the last rope_dim values
/// of each query head and the one decoupled key; Llama whole heads (rope()).
template <class T>
void rope_part(T* x, const int32_t* positions, int64_t n, int64_t heads, int64_t head_stride, int64_t offset, int64_t dim,
               double theta, bool inverse = false) {
  const int64_t half = dim / 2;
  // cos and sin per (position, pair) for the positions present: a batch of
  // many rows holds few distinct positions (at most the context).
  int64_t most = 0;
  for (int64_t r = 0; r < n; ++r) most = std::max<int64_t>(most, positions[r]);
  // Grown to the largest batch seen, then reused: no allocation in later steps.
  thread_local std::vector<double> table;
  thread_local std::vector<char> present;
  table.resize(static_cast<size_t>(2 * (most + 1) * half));
  present.assign(static_cast<size_t>(most + 1), 0);
  for (int64_t r = 0; r < n; ++r) present[static_cast<size_t>(positions[r])] = 1;
  double* cs = table.data();
  for (int64_t p = 0; p <= most; ++p) {
    if (!present[static_cast<size_t>(p)]) continue;
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(p) * std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(dim));
      cs[2 * (p * half + i)] = std::cos(angle);
      cs[2 * (p * half + i) + 1] = inverse ? -std::sin(angle) : std::sin(angle);
    }
  }
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t i = 0; i < half; ++i) {
      const double c = cs[2 * (positions[r] * half + i)], s = cs[2 * (positions[r] * half + i) + 1];
      for (int64_t h = 0; h < heads; ++h) {
        T* v = x + (r * heads + h) * head_stride + offset;
        const double a = v[i], b = v[i + half];
        v[i] = static_cast<T>(a * c - b * s);
        v[i + half] = static_cast<T>(b * c + a * s);
      }
    }
  }
}

/// RoPE on whole heads of [N, H, hd] (Llama's q and k).
template <class T>
void rope(T* x, const int32_t* positions, int64_t n, int64_t heads, int64_t hd, double theta, bool inverse = false) {
  rope_part(x, positions, n, heads, hd, 0, hd, theta, inverse);
}

/// SwiGLU: out = silu(gate) * up, element-wise over count values.
template <class T>
void swiglu_forward(const T* gate, const T* up, int64_t count, T* out) {
  constexpr int64_t kBlock = 4096;  // per task; Eigen's exp is vectorised where libm's is not
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < count; b += kBlock) {
    const int64_t end = std::min(count, b + kBlock);
    for (int64_t e = b; e < end; ++e) out[e] = -gate[e];
    detail::exp_inplace(out + b, end - b);
    for (int64_t e = b; e < end; ++e) out[e] = gate[e] * up[e] / (T(1) + out[e]);
  }
}

/// dgate = dout up silu'(gate), dup = dout silu(gate) (both overwritten).
template <class T>
void swiglu_backward(const T* dout, const T* gate, const T* up, int64_t count, T* dgate, T* dup) {
  constexpr int64_t kBlock = 4096;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < count; b += kBlock) {
    const int64_t end = std::min(count, b + kBlock);
    for (int64_t e = b; e < end; ++e) dgate[e] = -gate[e];
    detail::exp_inplace(dgate + b, end - b);
    for (int64_t e = b; e < end; ++e) {
      const T g = gate[e], sig = T(1) / (T(1) + dgate[e]);
      dgate[e] = dout[e] * up[e] * sig * (T(1) + g * (T(1) - sig));
      dup[e] = dout[e] * g * sig;
    }
  }
}

}  // namespace nk::lm
