// filters.cpp - Hyena, STU (Hankel eigenvectors) and random filters.
#include "rubiconv/filters.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <complex>

#include "nk/aligned.hpp"
#include "nk/kernels/fft.hpp"

namespace rubiconv {

namespace {

double hankel_entry(int64_t a_plus_b) {
  const double m = static_cast<double>(a_plus_b);
  return 2.0 / (m * m * m - m);
}

/// v -> Z v for the n x n STU Hankel matrix, as one FFT convolution:
/// (Z v)_i = sum_j c[i+j] v_j = (c * reversed(v))[i + n - 1], c[m] = Z entry at a+b = m+2.
class HankelProduct {
 public:
  explicit HankelProduct(int64_t n) : n_(n), size_(nk::fft::good_size(2 * n - 1)) {
    nk::AlignedVector<double> c(static_cast<size_t>(size_), 0.0);
    for (int64_t m = 0; m <= 2 * n - 2; ++m) c[static_cast<size_t>(m)] = hankel_entry(m + 2);
    spectrum_.resize(static_cast<size_t>(nk::fft::bins(size_)));
    nk::fft::forward(c.data(), spectrum_.data(), size_, 1);
    work_.resize(static_cast<size_t>(size_));
    work_spectrum_.resize(spectrum_.size());
  }
  void operator()(const double* v, double* out) {
    std::fill(work_.begin(), work_.end(), 0.0);
    for (int64_t j = 0; j < n_; ++j) work_[static_cast<size_t>(n_ - 1 - j)] = v[j];
    nk::fft::forward(work_.data(), work_spectrum_.data(), size_, 1);
    for (size_t f = 0; f < spectrum_.size(); ++f) work_spectrum_[f] *= spectrum_[f];
    nk::fft::inverse(work_spectrum_.data(), work_.data(), size_, 1);
    for (int64_t i = 0; i < n_; ++i) out[i] = work_[static_cast<size_t>(i + n_ - 1)];
  }

 private:
  int64_t n_, size_;
  nk::AlignedVector<std::complex<double>> spectrum_, work_spectrum_;
  nk::AlignedVector<double> work_;
};

void normalise_sign(std::vector<double>& v) {
  const auto largest = std::max_element(v.begin(), v.end(), [](double a, double b) { return std::abs(a) < std::abs(b); });
  if (largest != v.end() && *largest < 0) {
    for (double& x : v) x = -x;
  }
}

Eigenpairs dense_pairs(int64_t n, int64_t count) {
  Eigen::MatrixXd z(n, n);
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = 0; b < n; ++b) z(a, b) = hankel_entry(a + b + 2);
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(z);
  Eigenpairs pairs;
  for (int64_t j = 0; j < count; ++j) {
    const int64_t column = n - 1 - j;  // eigenvalues come in increasing order
    pairs.values.push_back(solver.eigenvalues()(column));
    std::vector<double> v(solver.eigenvectors().col(column).data(), solver.eigenvectors().col(column).data() + n);
    normalise_sign(v);
    pairs.vectors.push_back(std::move(v));
  }
  return pairs;
}

Eigenpairs lanczos_pairs(int64_t n, int64_t count, const nk::Rng& rng) {
  HankelProduct product(n);
  const int64_t steps = std::min(n, count + 24);
  Eigen::MatrixXd q(n, steps + 1);
  Eigen::VectorXd alpha(steps), beta(steps);
  nk::Rng stream = rng.split(0x57u);
  for (int64_t i = 0; i < n; ++i) q(i, 0) = stream.normal();
  q.col(0).normalize();
  Eigen::VectorXd w(n);
  int64_t done = 0;
  for (int64_t j = 0; j < steps; ++j) {
    product(q.col(j).data(), w.data());
    alpha(j) = q.col(j).dot(w);
    // Full reorthogonalisation (twice is enough) keeps the Ritz vectors clean.
    for (int pass = 0; pass < 2; ++pass) w -= q.leftCols(j + 1) * (q.leftCols(j + 1).transpose() * w);
    beta(j) = w.norm();
    done = j + 1;
    if (beta(j) < 1e-13 * std::abs(alpha(0))) break;
    q.col(j + 1) = w / beta(j);
  }
  Eigen::MatrixXd t = Eigen::MatrixXd::Zero(done, done);
  for (int64_t j = 0; j < done; ++j) {
    t(j, j) = alpha(j);
    if (j + 1 < done) t(j, j + 1) = t(j + 1, j) = beta(j);
  }
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(t);
  Eigenpairs pairs;
  for (int64_t j = 0; j < std::min(count, done); ++j) {
    const int64_t column = done - 1 - j;
    pairs.values.push_back(solver.eigenvalues()(column));
    const Eigen::VectorXd ritz = q.leftCols(done) * solver.eigenvectors().col(column);
    std::vector<double> v(ritz.data(), ritz.data() + n);
    normalise_sign(v);
    pairs.vectors.push_back(std::move(v));
  }
  return pairs;
}

}  // namespace

Eigenpairs stu_eigenpairs(int64_t n, int64_t count, bool dense, const nk::Rng& rng) {
  count = std::min(count, n);
  return dense ? dense_pairs(n, count) : lanczos_pairs(n, count, rng);
}

std::vector<double> stu_filters(int64_t channels, int64_t filter_length, const nk::Rng& rng) {
  const int64_t count = std::min<int64_t>({24, channels, filter_length});
  const Eigenpairs pairs = stu_eigenpairs(filter_length, count, filter_length <= 1024, rng);
  const auto found = static_cast<int64_t>(pairs.vectors.size());
  std::vector<double> k(static_cast<size_t>(channels * filter_length));
  for (int64_t h = 0; h < channels; ++h) {
    const int64_t j = h % found;
    const double scale = std::pow(std::max(pairs.values[static_cast<size_t>(j)], 0.0), 0.25);
    for (int64_t t = 0; t < filter_length; ++t) {
      k[static_cast<size_t>(h * filter_length + t)] = scale * pairs.vectors[static_cast<size_t>(j)][static_cast<size_t>(t)];
    }
  }
  return k;
}

std::vector<double> hyena_filters(int64_t channels, int64_t filter_length, const nk::Rng& rng) {
  std::vector<double> k(static_cast<size_t>(channels * filter_length));
  for (int64_t h = 0; h < channels; ++h) {
    nk::Rng stream = rng.split(static_cast<uint64_t>(h));
    const double reach = 0.3 + 1.2 * stream.uniform();  // decays to 1% after reach * Lk taps
    const double rate = std::log(100.0) / (reach * static_cast<double>(filter_length));
    double amplitude[4], frequency[4], phase[4];
    for (int j = 0; j < 4; ++j) {
      amplitude[j] = stream.normal();
      frequency[j] = 2 * M_PI * (1.0 + 63.0 * stream.uniform()) / static_cast<double>(filter_length);
      phase[j] = 2 * M_PI * stream.uniform();
    }
    double norm = 0;
    double* row = k.data() + h * filter_length;
    for (int64_t t = 0; t < filter_length; ++t) {
      double wave = 0;
      for (int j = 0; j < 4; ++j) wave += amplitude[j] * std::sin(frequency[j] * static_cast<double>(t) + phase[j]);
      row[t] = std::exp(-rate * static_cast<double>(t)) * wave;
      norm += std::abs(row[t]);
    }
    if (norm > 0) {
      for (int64_t t = 0; t < filter_length; ++t) row[t] /= norm;
    }
  }
  return k;
}

std::vector<double> random_filters(int64_t channels, int64_t filter_length, const nk::Rng& rng) {
  std::vector<double> k(static_cast<size_t>(channels * filter_length));
  const double scale = 1.0 / std::sqrt(static_cast<double>(filter_length));
  for (int64_t h = 0; h < channels; ++h) {
    nk::Rng stream = rng.split(static_cast<uint64_t>(h));
    for (int64_t t = 0; t < filter_length; ++t) k[static_cast<size_t>(h * filter_length + t)] = scale * stream.normal();
  }
  return k;
}

}  // namespace rubiconv
