// engine.hpp - runs a Plan: gather windows from the packed [B,L,H] layout,
// batched real FFTs, spectral product with each bucket's filter spectrum,
// inverse FFTs, scatter back into the packed layout.
#pragma once
#include <cstdint>

#include "nk/kernels/cuda_call.hpp"
#include "rubiconv/packing.hpp"
#include "rubiconv/plan.hpp"

namespace rubiconv {

/// The convolution y[b,t,h] = sum_{s=0..t-start(t)} k[h,s] x[b,t-s,h] (+ bias[h] x[b,t,h]).
template <class Real>
struct Problem {
  const Packing* packing = nullptr;
  int64_t batch = 0, length = 0, channels = 0, filter_length = 0;  ///< B, L, H, Lk
  const Real* x = nullptr;     ///< [B,L,H]
  const Real* k = nullptr;     ///< [H,Lk], tap 0 = current position
  const Real* bias = nullptr;  ///< [H] or null (no skip term)
};

/// y [B,L,H] for the plan's method (direct plans accumulate in float64).
template <class Real>
void apply(const Problem<Real>& problem, const Plan& plan, Real* y);

using nk::kernels::GpuTiming;
/// apply() on the GPU through the CUDA module (same plan, same result up to rounding).
template <class Real>
GpuTiming apply_cuda(const Problem<Real>& problem, const Plan& plan, Real* y, int repeats = 1);

/// grad() on the GPU through the CUDA module (same plan; dbias only with a bias).
template <class Real>
GpuTiming grad_cuda(const Problem<Real>& problem, const Plan& plan, const Real* dy, Real* dx, Real* dk, Real* dbias,
                    int repeats = 1);

/// Gradients of <dy, y> for the same problem: dx [B,L,H], dk [H,Lk], and
/// dbias [H] when the problem has a bias (dbias may be null otherwise).
template <class Real>
void grad(const Problem<Real>& problem, const Plan& plan, const Real* dy, Real* dx, Real* dk, Real* dbias);

}  // namespace rubiconv
