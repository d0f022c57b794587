// base_currents.cpp - the frozen base's first-layer currents and the
// per-batch sparse (or low-rank) correction for the trained delta.
#include "base_currents.hpp"

#include <algorithm>
#include <stdexcept>

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

bool BaseCurrents::applies(const snn::Config& config) { return !config.conv() && config.coding == snn::Coding::direct; }

int64_t BaseCurrents::bytes_for(const snn::Config& config, int64_t examples) {
  return examples * config.sizes[1] * static_cast<int64_t>(sizeof(float));
}

BaseCurrents::BaseCurrents(const snn::Network& base, const snn::Matrix& examples) {
  if (!applies(base.config)) throw std::invalid_argument("base currents need a dense first layer under direct coding");
  cache_.resize(examples.rows(), base.weight[0].rows());
  cache_.noalias() = examples * base.weight[0].transpose();
  cache_.rowwise() += base.bias[0].transpose();
}

int64_t BaseCurrents::bytes() const { return static_cast<int64_t>(cache_.size() * sizeof(float)); }

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
  for (size_t i = 1; i < row_start_.size(); ++i) row_start_[i] += row_start_[i - 1];
}

void BaseCurrents::sparse_currents(const int64_t* examples, const snn::Matrix& x_t, const snn::Matrix& w, const snn::Matrix& base,
                                   snn::Matrix& out) {
  const int64_t n = cache_.cols(), b = x_t.cols(), cols = w.cols();
  delta_t_.resize(n, b);
  constexpr int64_t kBlock = 16;
#pragma omp parallel
  {
    // Row i of x Delta^T, transposed: the support entries (i, j) of Delta,
    // each adding Delta_ij times x's column j (a row of x_t), over the batch.
#pragma omp for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      float* __restrict acc = delta_t_.data() + i * b;
      std::fill(acc, acc + b, 0.0f);
      for (int64_t e = row_start_[static_cast<size_t>(i)]; e < row_start_[static_cast<size_t>(i) + 1]; ++e) {
        const int32_t at = support_[static_cast<size_t>(e)];
        const float delta = w.data()[at] - base.data()[at];
        if (delta == 0.0f) continue;
        const float* __restrict column = x_t.data() + (at - i * cols) * b;
#pragma omp simd
        for (int64_t r = 0; r < b; ++r) acc[r] += delta * column[r];
      }
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

void BaseCurrents::low_rank_currents(const int64_t* examples, const snn::Matrix& x, const Eigen::MatrixXf& u, const Eigen::MatrixXf& v,
                                     snn::Matrix& out) const {
  for (int64_t r = 0; r < x.rows(); ++r) out.row(r) = cache_.row(examples[r]);
  const Eigen::MatrixXf xv = x * v;
  out.noalias() += xv * u.transpose();
}

}  // namespace spike
