// base_currents.cpp - the frozen base's first-layer currents and the
// per-batch sparse (or low-rank) correction for the trained delta.
#include "spike-sft/base_currents.hpp"

#include <omp.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <stdexcept>

#include "nk/kernels/gemm.hpp"

namespace spike {

void transpose_into(const Eigen::Ref<const snn::Matrix>& src, snn::Matrix& dst) {
  constexpr int64_t kBlock = 16;  // one cache line of the source row, 16 destination rows in turn
  const int64_t rows = src.rows(), cols = src.cols(), stride = src.outerStride();
#pragma omp for schedule(static) nowait
  for (int64_t j0 = 0; j0 < cols; j0 += kBlock) {
    const int64_t j1 = std::min(cols, j0 + kBlock);
    for (int64_t r = 0; r < rows; ++r) {
      const float* in = src.data() + r * stride;
      for (int64_t j = j0; j < j1; ++j) dst(j, r) = in[j];
    }
  }
}

bool BaseCurrents::applies(const snn::Config& config) {
  return !config.conv() && config.coding == snn::Coding::direct;
}

int64_t BaseCurrents::bytes_for(const snn::Config& config, int64_t examples) {
  return examples * config.sizes[1] * static_cast<int64_t>(sizeof(float));
}

BaseCurrents::BaseCurrents(const snn::Network& base, const snn::Matrix& examples) {
  if (!applies(base.config)) throw std::invalid_argument("base currents need a dense first layer under direct coding");
  cache_.resize(examples.rows(), base.weight[0].rows());
  nk::kernels::gemm_nt(examples.data(), base.weight[0].data(), cache_.data(), examples.rows(), base.weight[0].rows(),
                       examples.cols());
  cache_.rowwise() += base.bias[0].transpose();
}

int64_t BaseCurrents::bytes() const {
  return static_cast<int64_t>(cache_.size() * sizeof(float));
}

void BaseCurrents::set_support(const snn::Matrix& w, const snn::Matrix& base, const std::vector<int32_t>& mask) {
  const int64_t n = w.size(), cols = w.cols();
  support_.clear();
  size_t next = 0;
  for (int64_t e = 0; e < n; ++e) {
    while (next < mask.size() && mask[next] < e) ++next;
    const bool in_mask = next < mask.size() && mask[next] == e;
    if (in_mask || w.data()[e] != base.data()[e]) support_.push_back(static_cast<int32_t>(e));
  }
  row_start_.assign(static_cast<size_t>(w.rows()) + 1, 0);
  for (const int32_t e : support_) ++row_start_[static_cast<size_t>(e / cols) + 1];
  widest_ = 0;
  for (size_t i = 1; i < row_start_.size(); ++i) {
    widest_ = std::max(widest_, row_start_[i]);
    row_start_[i] += row_start_[i - 1];
  }
}

namespace {

/// Gathers row i's nonzero support entries: Delta_ij into delta, the offset
/// of row j of x_t into column; returns their number.
inline int64_t row_entries(int64_t i, const int32_t* support, const int64_t* row_start, const float* w,
                           const float* base, int64_t b, int64_t cols, float* delta, int64_t* column) {
  int64_t count = 0;
  for (int64_t e = row_start[i]; e < row_start[i + 1]; ++e) {
    const int32_t at = support[e];
    const float d = w[at] - base[at];
    if (d == 0.0f) continue;
    delta[count] = d;
    column[count++] = (at - i * cols) * b;
  }
  return count;
}

/// Rows [i0, i1) of x Delta^T, transposed, into out [n, b]: for each row i
/// the support entries (i, j) of Delta, each adding Delta_ij times x's
/// column j (row j of x_t) over the batch; 'delta' and 'column' are scratch
/// for one row's entries.
void delta_rows_plain(int64_t i0, int64_t i1, const int32_t* support, const int64_t* row_start, const float* w,
                      const float* base, const float* x_t, int64_t b, int64_t cols, float* delta, int64_t* column,
                      float* out) {
  for (int64_t i = i0; i < i1; ++i) {
    const int64_t count = row_entries(i, support, row_start, w, base, b, cols, delta, column);
    float* __restrict row = out + i * b;
    std::fill(row, row + b, 0.0f);
    for (int64_t e = 0; e < count; ++e) {
      const float d = delta[e];
      const float* __restrict x = x_t + column[e];
#pragma omp simd
      for (int64_t r = 0; r < b; ++r) row[r] += d * x[r];
    }
  }
}

using DeltaRows = decltype(&delta_rows_plain);

#if defined(__x86_64__)
/// The same with 32 examples' sums in four AVX registers across a row's
/// entries (one broadcast, four loads and four FMAs per entry).
__attribute__((target("avx2,fma"))) void delta_rows_avx2(int64_t i0, int64_t i1, const int32_t* support,
                                                         const int64_t* row_start, const float* w, const float* base,
                                                         const float* x_t, int64_t b, int64_t cols, float* delta,
                                                         int64_t* column, float* out) {
  for (int64_t i = i0; i < i1; ++i) {
    const int64_t count = row_entries(i, support, row_start, w, base, b, cols, delta, column);
    float* row = out + i * b;
    int64_t r0 = 0;
    for (; r0 + 32 <= b; r0 += 32) {
      __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
      for (int64_t e = 0; e < count; ++e) {
        const __m256 d = _mm256_broadcast_ss(delta + e);
        const float* x = x_t + column[e] + r0;
        a0 = _mm256_fmadd_ps(d, _mm256_loadu_ps(x), a0);
        a1 = _mm256_fmadd_ps(d, _mm256_loadu_ps(x + 8), a1);
        a2 = _mm256_fmadd_ps(d, _mm256_loadu_ps(x + 16), a2);
        a3 = _mm256_fmadd_ps(d, _mm256_loadu_ps(x + 24), a3);
      }
      _mm256_storeu_ps(row + r0, a0);
      _mm256_storeu_ps(row + r0 + 8, a1);
      _mm256_storeu_ps(row + r0 + 16, a2);
      _mm256_storeu_ps(row + r0 + 24, a3);
    }
    for (int64_t r = r0; r < b; ++r) {
      float sum = 0.0f;
      for (int64_t e = 0; e < count; ++e) sum = std::fma(delta[e], x_t[column[e] + r], sum);
      row[r] = sum;
    }
  }
}
#endif

void sampled_dots_plain(int64_t e0, int64_t e1, const int32_t* index, int64_t cols, const float* gv_t, const float* x_t,
                        int64_t steps, float* grad) {
  for (int64_t e = e0; e < e1; ++e) {
    const int64_t at = index[e], i = at / cols;
    const float* __restrict a = gv_t + i * steps;
    const float* __restrict b = x_t + (at - i * cols) * steps;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t r = 0; r < steps; ++r) sum += a[r] * b[r];
    grad[e] = sum;
  }
}

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) void sampled_dots_avx2(int64_t e0, int64_t e1, const int32_t* index, int64_t cols,
                                                           const float* gv_t, const float* x_t, int64_t steps,
                                                           float* grad) {
  for (int64_t e = e0; e < e1; ++e) {
    const int64_t at = index[e], i = at / cols;
    const float* a = gv_t + i * steps;
    const float* b = x_t + (at - i * cols) * steps;
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    int64_t r = 0;
    for (; r + 16 <= steps; r += 16) {
      s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + r), _mm256_loadu_ps(b + r), s0);
      s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + r + 8), _mm256_loadu_ps(b + r + 8), s1);
    }
    const __m256 s = _mm256_add_ps(s0, s1);
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    float sum = _mm_cvtss_f32(h);
    for (; r < steps; ++r) sum = std::fma(a[r], b[r], sum);
    grad[e] = sum;
  }
}
#endif

const auto sampled_dots_best = [] {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return &sampled_dots_avx2;
#endif
  return &sampled_dots_plain;
}();

const DeltaRows delta_rows_best = [] {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return &delta_rows_avx2;
#endif
  return &delta_rows_plain;
}();

}  // namespace

void sampled_dots(int64_t e0, int64_t e1, const int32_t* index, int64_t cols, const float* gv_t, const float* x_t,
                  int64_t steps, float* grad) {
  sampled_dots_best(e0, e1, index, cols, gv_t, x_t, steps, grad);
}

void BaseCurrents::sparse_currents(const int64_t* examples, const snn::Matrix& x_t, const snn::Matrix& w,
                                   const snn::Matrix& base, snn::Matrix& out) {
  const int64_t n = cache_.cols(), b = x_t.cols(), cols = w.cols();
  delta_t_.resize(n, b);
  constexpr int64_t kBlock = 16;
#pragma omp parallel
  {
    std::vector<float> delta(static_cast<size_t>(widest_));
    std::vector<int64_t> column(static_cast<size_t>(widest_));
#pragma omp for schedule(static)
    for (int64_t t = 0; t < omp_get_num_threads(); ++t) {
      // One contiguous range of rows per thread: one call into the AVX2 code.
      const int64_t i0 = n * t / omp_get_num_threads(), i1 = n * (t + 1) / omp_get_num_threads();
      delta_rows_best(i0, i1, support_.data(), row_start_.data(), w.data(), base.data(), x_t.data(), b, cols,
                      delta.data(), column.data(), delta_t_.data());
    }
    // The cached rows plus the correction, 16 examples at a time.
#pragma omp for schedule(static)
    for (int64_t r0 = 0; r0 < b; r0 += kBlock) {
      const int64_t r1 = std::min(b, r0 + kBlock);
      for (int64_t r = r0; r < r1; ++r) out.row(r) = cache_.row(examples[r]);
      for (int64_t i = 0; i < n; ++i) {
        const float* acc = delta_t_.data() + i * b;
        for (int64_t r = r0; r < r1; ++r) out(r, i) += acc[r];
      }
    }
  }
}

void BaseCurrents::low_rank_currents(const int64_t* examples, const snn::Matrix& x, const Eigen::MatrixXf& u,
                                     const Eigen::MatrixXf& v, snn::Matrix& out) const {
  for (int64_t r = 0; r < x.rows(); ++r) out.row(r) = cache_.row(examples[r]);
  const Eigen::MatrixXf xv = x * v;
  out.noalias() += xv * u.transpose();
}

}  // namespace spike
