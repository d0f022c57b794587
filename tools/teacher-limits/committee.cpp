// committee.cpp - the blocked loss and gradient: per block of rows, Z = X
// (W/sqrt d)^T by gemm_nt, sigma and sigma' elementwise, the residuals, M =
// r a sigma'(Z), then gW += M^T X by gemm_tn; chunks in parallel, each with
// its own partial sums.
#include "teacher-limits/committee.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <numbers>

#include "nk/assignment.hpp"
#include "nk/kernels/gemm.hpp"

namespace tl {

MatrixF to_float(const Matrix& X) {
  return X.cast<float>();
}

Committee::Committee(Act activation, int64_t k, int64_t d)
    : act_(activation), k_(k), d_(d), block_(std::clamp<int64_t>(65536 / std::max<int64_t>(k, 1), 16, 256)) {
  chunks_.resize(kChunks);
  for (Chunk& c : chunks_) {
    c.z.resize(block_, k);
    c.s.resize(block_, k);
    c.ds.resize(block_, k);
    c.f.resize(block_);
  }
}

void Committee::activate(Chunk& c, int64_t rows, bool derivative) const {
  auto z = c.z.topRows(rows).array();
  auto s = c.s.topRows(rows).array();
  auto ds = c.ds.topRows(rows).array();
  const float scale = static_cast<float>(act_.scale());
  switch (act_.kind()) {
    case Act::he3: {
      const float c3 = static_cast<float>(1 / std::sqrt(6.0));
      s = c3 * z * (z.square() - 3.0f);
      if (derivative) ds = (3.0f * c3) * (z.square() - 1.0f);
      break;
    }
    case Act::he2: {
      s = (z.square() - 1.0f) * static_cast<float>(1 / std::numbers::sqrt2);
      if (derivative) ds = static_cast<float>(std::numbers::sqrt2) * z;
      break;
    }
    case Act::linear:
      s = z;
      if (derivative) ds.setOnes();
      break;
    case Act::relu_centered: {
      const float mean = static_cast<float>(1 / std::sqrt(2 * std::numbers::pi));
      s = scale * (z.max(0.0f) - mean);
      if (derivative) ds = (z > 0.0f).cast<float>() * scale;
      break;
    }
    case Act::tanh:
      s = z.tanh();
      if (derivative) ds = scale * (1.0f - s.square());
      s *= scale;
      break;
  }
}

void Committee::run_chunk(Chunk& c, const float* X, const double* y, int64_t begin, int64_t end, bool grad_W,
                          bool grad_a, double* out) {
  c.loss = 0;
  if (grad_W) c.gW.setZero(k_, d_);
  if (grad_a) c.ga.setZero(k_);
  const Eigen::VectorXf& af = af_;
  bool first = true;
  for (int64_t b = begin; b < end; b += block_) {
    const int64_t rows = std::min(block_, end - b);
    const float* xb = X + b * d_;
    nk::kernels::gemm_nt(xb, wf_.data(), c.z.data(), rows, k_, d_);
    activate(c, rows, grad_W);
    c.f.head(rows).noalias() = c.s.topRows(rows) * af;
    if (y == nullptr) {
      for (int64_t r = 0; r < rows; ++r) out[b + r] = c.f[r];
      continue;
    }
    // c.f becomes -r, the loss's derivative in f.
    for (int64_t r = 0; r < rows; ++r) {
      const double residual = y[b + r] - static_cast<double>(c.f[r]);
      c.loss += 0.5 * residual * residual;
      c.f[r] = static_cast<float>(-residual);
    }
    if (grad_a) c.ga.noalias() += (c.s.topRows(rows).transpose() * c.f.head(rows)).cast<double>();
    if (grad_W) {
      // M = -r a sigma'(z), over sigma', then gW += M^T X.
      c.ds.topRows(rows).array() =
          (c.ds.topRows(rows).array().rowwise() * af.transpose().array()).colwise() * c.f.head(rows).array();
      nk::kernels::gemm_tn(c.ds.data(), xb, c.gW.data(), k_, d_, rows, !first);
      first = false;
    }
  }
}

double Committee::half_sse(const float* X, const double* y, int64_t rows, const Matrix& W, const Vector& a, Matrix* gW,
                           Vector* ga) {
  wf_ = (W / std::sqrt(static_cast<double>(d_))).cast<float>();
  af_ = a.cast<float>();
  const bool grad_W = gW != nullptr, grad_a = ga != nullptr;
#pragma omp parallel for schedule(static)
  for (int c = 0; c < kChunks; ++c)
    run_chunk(chunks_[c], X, y, rows * c / kChunks, rows * (c + 1) / kChunks, grad_W, grad_a, nullptr);
  double loss = 0;
  if (grad_W) gW->setZero(k_, d_);
  if (grad_a) ga->setZero(k_);
  const double inv_sqrt_d = 1 / std::sqrt(static_cast<double>(d_));
  for (int c = 0; c < kChunks; ++c) {
    const int64_t begin = rows * c / kChunks, end = rows * (c + 1) / kChunks;
    if (begin == end) continue;
    loss += chunks_[c].loss;
    if (grad_W) *gW += chunks_[c].gW.cast<double>() * inv_sqrt_d;
    if (grad_a) *ga += chunks_[c].ga;
  }
  return loss;
}

void Committee::predict(const float* X, int64_t rows, const Matrix& W, const Vector& a, double* out) {
  wf_ = (W / std::sqrt(static_cast<double>(d_))).cast<float>();
  af_ = a.cast<float>();
#pragma omp parallel for schedule(static)
  for (int c = 0; c < kChunks; ++c)
    run_chunk(chunks_[c], X, nullptr, rows * c / kChunks, rows * (c + 1) / kChunks, false, false, out);
}

std::vector<double> matched_overlaps(const Matrix& teacher_W, const Matrix& student_W) {
  const int64_t k = teacher_W.rows(), w = student_W.rows(), size = std::max(k, w);
  Eigen::MatrixXd score = Eigen::MatrixXd::Zero(size, size);
  const Eigen::VectorXd tn = teacher_W.rowwise().norm(), sn = student_W.rowwise().norm();
  const Eigen::MatrixXd dots = teacher_W * student_W.transpose();
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < w; ++j) {
      const double denom = tn[i] * sn[j];
      score(i, j) = denom > 0 ? std::abs(dots(i, j)) / denom : 0.0;
    }
  const std::vector<int> match = nk::max_assignment(score);
  std::vector<double> overlap(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) overlap[i] = score(i, match[i]);
  return overlap;
}

}  // namespace tl
