// metrics.cpp - Frechet distance, density and coverage, bits per dimension
// (metrics.hpp).
#include "invariance-audit/metrics.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

#include "invariance-audit/prior.hpp"
#include "nk/nn/likelihood.hpp"
#include "nk/rng.hpp"

namespace ia {

namespace {

using Rows = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

Rows rows(const std::vector<float>& v, int64_t n, int64_t F) {
  return Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(v.data(), n, F).cast<double>();
}

// Symmetric positive semi-definite square root (negative round-off clipped).
Eigen::MatrixXd psd_sqrt(const Eigen::MatrixXd& m) {
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(m);
  const Eigen::VectorXd s = eig.eigenvalues().cwiseMax(0.0).cwiseSqrt();
  return eig.eigenvectors() * s.asDiagonal() * eig.eigenvectors().transpose();
}

// Squared distances between the rows of a and b.
Eigen::MatrixXd distances2(const Rows& a, const Rows& b) {
  const Eigen::VectorXd na = a.rowwise().squaredNorm(), nb = b.rowwise().squaredNorm();
  Eigen::MatrixXd d = -2.0 * a * b.transpose();
  d.colwise() += na;
  d.rowwise() += nb.transpose();
  return d.cwiseMax(0.0);
}

}  // namespace

double frechet_distance(const std::vector<float>& a, int64_t na, const std::vector<float>& b, int64_t nb, int64_t F) {
  if (na < 2 || nb < 2) throw std::invalid_argument("frechet_distance: fewer than 2 rows");
  const Rows A = rows(a, na, F), B = rows(b, nb, F);
  const Eigen::RowVectorXd ma = A.colwise().mean(), mb = B.colwise().mean();
  const Rows ca = A.rowwise() - ma, cb = B.rowwise() - mb;
  const Eigen::MatrixXd Ca = ca.transpose() * ca / static_cast<double>(na - 1);
  const Eigen::MatrixXd Cb = cb.transpose() * cb / static_cast<double>(nb - 1);
  const Eigen::MatrixXd sa = psd_sqrt(Ca);
  const Eigen::MatrixXd mid = sa * Cb * sa;
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(0.5 * (mid + mid.transpose()), Eigen::EigenvaluesOnly);
  const double cross = eig.eigenvalues().cwiseMax(0.0).cwiseSqrt().sum();
  return std::max(0.0, (ma - mb).squaredNorm() + Ca.trace() + Cb.trace() - 2 * cross);
}

DensityCoverage density_coverage(const std::vector<float>& real, int64_t nr, const std::vector<float>& fake, int64_t nf,
                                 int64_t F, int64_t k) {
  if (nr <= k || nf < 1) throw std::invalid_argument("density_coverage: too few points for k");
  const Rows R = rows(real, nr, F), Y = rows(fake, nf, F);
  const Eigen::MatrixXd rr = distances2(R, R), ry = distances2(R, Y);
  std::vector<double> radius2(static_cast<size_t>(nr));
  std::vector<double> row(static_cast<size_t>(nr));
  for (int64_t i = 0; i < nr; ++i) {
    for (int64_t j = 0; j < nr; ++j) row[j] = rr(i, j);
    // k-th smallest among the others: index k counts the point itself (distance 0).
    std::nth_element(row.begin(), row.begin() + k, row.end());
    radius2[i] = row[k];
  }
  DensityCoverage out;
  int64_t inside = 0, covered = 0;
  for (int64_t i = 0; i < nr; ++i) {
    bool any = false;
    for (int64_t j = 0; j < nf; ++j)
      if (ry(i, j) <= radius2[i]) ++inside, any = true;
    covered += any;
  }
  out.density = static_cast<double>(inside) / static_cast<double>(k * nf);
  out.coverage = static_cast<double>(covered) / static_cast<double>(nr);
  return out;
}

BitsPerDim bits_per_dim(nk::nn::FlowField& field, nk::nn::Shape image, const float* pixels, int64_t n, int64_t steps,
                        int64_t probes, int64_t batch, uint64_t seed) {
  const int64_t d = image.size();
  BitsPerDim out;
  out.bits.resize(static_cast<size_t>(n));
  std::vector<float> x;
  for (int64_t start = 0; start < n; start += batch) {
    const int64_t rows = std::min(batch, n - start);
    x.assign(pixels + start * d, pixels + (start + rows) * d);
    // 8-bit data, dequantised: (level + u) / 256, u ~ U[0,1), the standard
    // of bits/dim (a continuous density on exact levels, e.g. a background
    // clipped to 0, is unbounded).
    nk::Rng noise = nk::Rng(seed).split(0xde9 + static_cast<uint64_t>(start));
    for (float& v : x) {
      const double level = std::round(std::clamp(static_cast<double>(v), 0.0, 1.0) * 255.0);
      v = to_prior(static_cast<float>((level + noise.uniform()) / 256.0));
    }
    const nk::nn::LikelihoodResult r = nk::nn::log_likelihood(field, x.data(), rows, d, steps, probes, seed + static_cast<uint64_t>(start));
    for (int64_t b = 0; b < rows; ++b) out.bits[start + b] = -r.log_density[b] / (static_cast<double>(d) * std::numbers::ln2) + 7.0;
    out.forwards += r.forwards;
    out.backwards += r.backwards;
  }
  return out;
}

}  // namespace ia
