// continuous.hpp - what the global verb's methods share: the evaluation
// tracker (budget, best gap, trace, first evaluation reaching each eps), the
// proposal densities (Gaussian, over-smoothed Gaussian KDE) and the learners
// that fit them.
#pragma once
#include <Eigen/Core>
#include <Eigen/Cholesky>
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "aldrift/objective.hpp"
#include "nk/rng.hpp"

namespace ald {

/// The eps of /curve/eps: 1e-1 .. 1e-8.
inline constexpr int kCurvePoints = 8;
double curve_eps(int k);

/// Counts evaluations of d and keeps the best point.
class Tracker {
 public:
  Tracker(const Objective& f, int64_t budget, double eps, bool keep_trace);
  /// The budget is spent or the best gap is <= eps.
  bool done() const { return evals_ >= budget_ || best_ <= eps_; }
  /// d(x) - d*, one evaluation (callers check done() first).
  double operator()(const double* x);
  int64_t evals() const { return evals_; }
  double best() const { return best_; }
  const std::vector<double>& best_x() const { return best_x_; }
  const std::vector<double>& trace() const { return trace_; }
  /// First evaluation (1-based) with best gap <= curve_eps(k), or -1.
  const std::array<int64_t, kCurvePoints>& first_reach() const { return reach_; }
  const Objective& objective() const { return f_; }
  /// Called after every evaluation with the point and its gap (tests watch the search with it).
  std::function<void(const double*, double)> on_eval;

 private:
  const Objective& f_;
  int64_t budget_;
  double eps_;
  bool keep_trace_;
  int64_t evals_ = 0;
  double best_;
  std::vector<double> best_x_, trace_;
  std::array<int64_t, kCurvePoints> reach_;
};

/// A proposal distribution on R^n.
class Density {
 public:
  virtual ~Density() = default;
  virtual void sample(nk::Rng& rng, double* x) const = 0;
  virtual double log_density(const double* x) const = 0;
};

class GaussianDensity : public Density {
 public:
  /// N(mean, cov); a covariance that is not positive definite gets a growing
  /// ridge until it is.
  GaussianDensity(Eigen::VectorXd mean, Eigen::MatrixXd cov);
  void sample(nk::Rng& rng, double* x) const override;
  double log_density(const double* x) const override;
  const Eigen::VectorXd& mean() const { return mean_; }
  const Eigen::MatrixXd& cov() const { return cov_; }

 private:
  Eigen::VectorXd mean_;
  Eigen::MatrixXd cov_, chol_;
  double log_norm_ = 0;
};

/// An equal-weight mixture of N(x_j, diag(h^2)) over the samples x_j.
class KdeDensity : public Density {
 public:
  KdeDensity(std::vector<double> centres, int n, std::vector<double> bandwidth);
  void sample(nk::Rng& rng, double* x) const override;
  double log_density(const double* x) const override;
  const std::vector<double>& bandwidth() const { return h_; }

 private:
  std::vector<double> centres_, h_;
  int n_;
  int64_t m_;
  double log_norm_ = 0;
};

/// A product of one-dimensional KDEs: coordinate i of a draw comes from
/// its own KDE, an equal-weight mixture of N(c_ji, h_i^2) over the samples'
/// coordinates i, independently of the others; the density is the product
/// of the coordinates' mixture densities.
class ProductKdeDensity : public Density {
 public:
  /// Each coordinate's kernel is N(c, h_i^2) with probability 1 - wide_share
  /// and N(c, wide_i^2) otherwise (wide_share 0: h alone).
  ProductKdeDensity(std::vector<double> centres, int n, std::vector<double> bandwidth, std::vector<double> wide = {},
                    double wide_share = 0);
  void sample(nk::Rng& rng, double* x) const override;
  double log_density(const double* x) const override;
  const std::vector<double>& bandwidth() const { return h_; }

 private:
  std::vector<double> centres_, h_, wide_;
  double share_ = 0;
  int n_;
  int64_t m_;
};

/// The prior N(0, s^2 I) of the global verb (s = 3).
inline constexpr double kPriorSd = 3.0;
std::unique_ptr<Density> make_prior(int n);
double log_prior(const double* x, int n);

enum class ContinuousLearner { gauss, kde, optimistic, product };
ContinuousLearner parse_continuous_learner(const std::string& name);

struct LearnerOptions {
  double inflate = 2.0;    ///< gauss: covariance multiplied by this
  double bandwidth = 2.0;  ///< kde, product: multiple of Silverman's bandwidth
  double eta = 0.5;        ///< optimistic, product: widening (1 + eta) of the envelope's variance
  double wide_share = 0.1; ///< product: each coordinate's share of Silverman-wide kernels
};

/// Fits the learner to m samples (rows of length n) drawn from pi_T.
std::unique_ptr<Density> fit_density(ContinuousLearner kind, const std::vector<double>& samples, int n, double T,
                                     const Objective& f, const LearnerOptions& o);

/// Weighted mean and covariance of m rows (weights may be empty: all 1).
void weighted_moments(const std::vector<double>& rows, int n, const std::vector<double>& w, Eigen::VectorXd& mean,
                      Eigen::MatrixXd& cov);

}  // namespace ald
