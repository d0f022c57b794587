// continuous.cpp - tracker, densities and learners of the global verb.
#include "aldrift/continuous.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "nk/error.hpp"

namespace ald {

namespace {
constexpr double kLog2Pi = 1.8378770664093453;
}

double curve_eps(int k) { return std::pow(10.0, -(k + 1)); }

Tracker::Tracker(const Objective& f, int64_t budget, double eps, bool keep_trace)
    : f_(f), budget_(budget), eps_(eps), keep_trace_(keep_trace), best_(std::numeric_limits<double>::infinity()) {
  reach_.fill(-1);
  if (keep_trace_) trace_.reserve(static_cast<size_t>(std::min<int64_t>(budget, int64_t{1} << 24)));
}

double Tracker::operator()(const double* x) {
  const double d = f_(x);
  ++evals_;
  if (d < best_) {
    best_ = d;
    best_x_.assign(x, x + f_.n);
    for (int k = 0; k < kCurvePoints; ++k)
      if (reach_[k] < 0 && best_ <= curve_eps(k)) reach_[k] = evals_;
  }
  if (keep_trace_) trace_.push_back(best_);
  if (on_eval) on_eval(x, d);
  return d;
}

GaussianDensity::GaussianDensity(Eigen::VectorXd mean, Eigen::MatrixXd cov) : mean_(std::move(mean)), cov_(std::move(cov)) {
  const int n = static_cast<int>(mean_.size());
  double ridge = 0;
  const double scale = std::max(cov_.diagonal().cwiseAbs().maxCoeff(), 1e-300);
  for (int attempt = 0;; ++attempt) {
    Eigen::MatrixXd c = cov_;
    c.diagonal().array() += ridge;
    Eigen::LLT<Eigen::MatrixXd> llt(c);
    if (llt.info() == Eigen::Success && llt.matrixL().toDenseMatrix().diagonal().minCoeff() > 0) {
      cov_ = c;
      chol_ = llt.matrixL();
      break;
    }
    if (attempt > 60) throw nk::Error(nk::Exit::runtime, "a fitted covariance stayed singular (all samples equal?)");
    ridge = ridge == 0 ? scale * 1e-12 : ridge * 10;
  }
  log_norm_ = -0.5 * n * kLog2Pi - chol_.diagonal().array().log().sum();
}

void GaussianDensity::sample(nk::Rng& rng, double* x) const {
  const int n = static_cast<int>(mean_.size());
  Eigen::VectorXd z(n);
  for (int i = 0; i < n; ++i) z[i] = rng.normal();
  Eigen::Map<Eigen::VectorXd>(x, n) = mean_ + chol_.triangularView<Eigen::Lower>() * z;
}

double GaussianDensity::log_density(const double* x) const {
  const int n = static_cast<int>(mean_.size());
  const Eigen::VectorXd r = Eigen::Map<const Eigen::VectorXd>(x, n) - mean_;
  const Eigen::VectorXd y = chol_.triangularView<Eigen::Lower>().solve(r);
  return log_norm_ - 0.5 * y.squaredNorm();
}

KdeDensity::KdeDensity(std::vector<double> centres, int n, std::vector<double> bandwidth)
    : centres_(std::move(centres)), h_(std::move(bandwidth)), n_(n) {
  m_ = static_cast<int64_t>(centres_.size()) / n;
  log_norm_ = -0.5 * n * kLog2Pi - std::log(static_cast<double>(m_));
  for (double h : h_) log_norm_ -= std::log(h);
}

void KdeDensity::sample(nk::Rng& rng, double* x) const {
  const int64_t j = static_cast<int64_t>(rng.below(static_cast<uint64_t>(m_)));
  for (int i = 0; i < n_; ++i) x[i] = centres_[j * n_ + i] + h_[i] * rng.normal();
}

double KdeDensity::log_density(const double* x) const {
  double top = -std::numeric_limits<double>::infinity();
  thread_local std::vector<double> e;  // called for every proposal: no allocation after the first
  e.resize(m_);
  for (int64_t j = 0; j < m_; ++j) {
    double s = 0;
    for (int i = 0; i < n_; ++i) {
      const double u = (x[i] - centres_[j * n_ + i]) / h_[i];
      s += u * u;
    }
    e[j] = -0.5 * s;
    top = std::max(top, e[j]);
  }
  double z = 0;
  for (int64_t j = 0; j < m_; ++j) z += std::exp(e[j] - top);
  return log_norm_ + top + std::log(z);
}

ProductKdeDensity::ProductKdeDensity(std::vector<double> centres, int n, std::vector<double> bandwidth,
                                     std::vector<double> wide, double wide_share)
    : centres_(std::move(centres)), h_(std::move(bandwidth)), wide_(std::move(wide)), share_(wide_share), n_(n) {
  m_ = static_cast<int64_t>(centres_.size()) / n;
  if (wide_.empty()) share_ = 0;
}

void ProductKdeDensity::sample(nk::Rng& rng, double* x) const {
  for (int i = 0; i < n_; ++i) {
    const int64_t j = static_cast<int64_t>(rng.below(static_cast<uint64_t>(m_)));
    const double h = share_ > 0 && rng.uniform() < share_ ? wide_[i] : h_[i];
    x[i] = centres_[j * n_ + i] + h * rng.normal();
  }
}

double ProductKdeDensity::log_density(const double* x) const {
  thread_local std::vector<double> e;
  e.resize(2 * m_);
  double total = -0.5 * n_ * kLog2Pi - n_ * std::log(static_cast<double>(m_));
  for (int i = 0; i < n_; ++i) {
    // log sum_j [(1 - share) N(x; c, h^2) + share N(x; c, wide^2)], max-subtracted.
    double top = -std::numeric_limits<double>::infinity();
    const double ln = std::log1p(-share_) - std::log(h_[i]);
    const double lw = share_ > 0 ? std::log(share_) - std::log(wide_[i]) : 0;
    for (int64_t j = 0; j < m_; ++j) {
      const double c = centres_[j * n_ + i];
      const double u = (x[i] - c) / h_[i];
      e[j] = ln - 0.5 * u * u;
      top = std::max(top, e[j]);
      if (share_ > 0) {
        const double v = (x[i] - c) / wide_[i];
        e[m_ + j] = lw - 0.5 * v * v;
        top = std::max(top, e[m_ + j]);
      }
    }
    double z = 0;
    for (int64_t j = 0; j < (share_ > 0 ? 2 * m_ : m_); ++j) z += std::exp(e[j] - top);
    total += top + std::log(z);
  }
  return total;
}

std::unique_ptr<Density> make_prior(int n) {
  return std::make_unique<GaussianDensity>(Eigen::VectorXd::Zero(n),
                                           Eigen::MatrixXd::Identity(n, n) * (kPriorSd * kPriorSd));
}

double log_prior(const double* x, int n) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += x[i] * x[i];
  return -0.5 * s / (kPriorSd * kPriorSd) - 0.5 * n * kLog2Pi - n * std::log(kPriorSd);
}

ContinuousLearner parse_continuous_learner(const std::string& name) {
  if (name == "gauss") return ContinuousLearner::gauss;
  if (name == "kde") return ContinuousLearner::kde;
  if (name == "optimistic") return ContinuousLearner::optimistic;
  if (name == "product") return ContinuousLearner::product;
  throw nk::usage_error("unknown learner '" + name + "' (gauss, kde, optimistic or product)");
}

void weighted_moments(const std::vector<double>& rows, int n, const std::vector<double>& w, Eigen::VectorXd& mean,
                      Eigen::MatrixXd& cov) {
  const int64_t m = static_cast<int64_t>(rows.size()) / n;
  double total = 0;
  mean = Eigen::VectorXd::Zero(n);
  for (int64_t j = 0; j < m; ++j) {
    const double wj = w.empty() ? 1.0 : w[j];
    total += wj;
    mean += wj * Eigen::Map<const Eigen::VectorXd>(&rows[j * n], n);
  }
  if (!(total > 0)) throw nk::Error(nk::Exit::runtime, "a weighted fit got no weight");
  mean /= total;
  cov = Eigen::MatrixXd::Zero(n, n);
  for (int64_t j = 0; j < m; ++j) {
    const double wj = w.empty() ? 1.0 : w[j];
    const Eigen::VectorXd r = Eigen::Map<const Eigen::VectorXd>(&rows[j * n], n) - mean;
    cov.selfadjointView<Eigen::Lower>().rankUpdate(r, wj / total);
  }
  cov = cov.selfadjointView<Eigen::Lower>();
}

std::unique_ptr<Density> fit_density(ContinuousLearner kind, const std::vector<double>& samples, int n, double T,
                                     const Objective& f, const LearnerOptions& o) {
  Eigen::VectorXd mean;
  Eigen::MatrixXd cov;
  weighted_moments(samples, n, {}, mean, cov);
  const int64_t m = static_cast<int64_t>(samples.size()) / n;
  switch (kind) {
    case ContinuousLearner::gauss:
      return std::make_unique<GaussianDensity>(mean, cov * o.inflate);
    case ContinuousLearner::kde: {
      // Silverman's rule per coordinate, times the over-smoothing factor.
      const double factor = o.bandwidth * std::pow(4.0 / ((n + 2.0) * static_cast<double>(m)), 1.0 / (n + 4.0));
      std::vector<double> h(n);
      for (int i = 0; i < n; ++i) h[i] = std::max(factor * std::sqrt(std::max(cov(i, i), 0.0)), 1e-300);
      return std::make_unique<KdeDensity>(samples, n, h);
    }
    case ContinuousLearner::product: {
      // Silverman's one-dimensional rule per coordinate, times the over-smoothing factor.
      const double factor = o.bandwidth * 1.06 * std::pow(static_cast<double>(m), -0.2);
      // With an envelope, no wider than a basin of the upper envelope at T (widened by 1 + eta).
      const double basin = f.has_envelope() ? std::sqrt((1.0 + o.eta) / (1.0 / (kPriorSd * kPriorSd) + 2.0 * T * f.c2))
                                            : std::numeric_limits<double>::infinity();
      std::vector<double> h(n), wide(n);
      for (int i = 0; i < n; ++i) {
        wide[i] = std::max(factor * std::sqrt(std::max(cov(i, i), 0.0)), 1e-300);
        h[i] = std::min(wide[i], basin);
      }
      return std::make_unique<ProductKdeDensity>(samples, n, h, wide, f.has_envelope() ? o.wide_share : 0.0);
    }
    case ContinuousLearner::optimistic: {
      // The lower envelope's Gaussian at T, with the prior: precision 1/s^2 + 2 T c1,
      // widened by 1 + eta, centred at the sample mean (see aldrift(1), ALGORITHM).
      const double var = (1.0 + o.eta) / (1.0 / (kPriorSd * kPriorSd) + 2.0 * T * f.c1);
      return std::make_unique<GaussianDensity>(mean, Eigen::MatrixXd::Identity(n, n) * var);
    }
  }
  return nullptr;
}

}  // namespace ald
