// state_evolution.hpp - the Bayes-optimal fixed-point equations of the
// hierarchical teacher (derivation in teacher-limits(1), ALGORITHM).
//
// Each feature i is a single-index GLM with Gaussian prior, ratio alpha = n/d
// and the channel y = v_i sigma_c(z) + sqrt(Delta_i) xi, where Delta_i holds
// the noise and every other feature's unexplained variance. Its update is
//   q_hat = alpha F(q, s),  q = q_hat / (1 + q_hat),  s = v_i^2 / Delta_i,
//   F(q, s) = E (d/d omega log Z_out)^2,
// tabulated over (q, log s); below s = 1e-3 the first order F = s K_c'(q)
// holds and the fixed points depend on lambda = alpha s alone (a second table).
// With k >= 2 and a linear part (mu_1 != 0) the linear part
// mu_1 (sum_i v_i w_i).x/sqrt(d) is one collective d-vector (linear
// regression), and the features see sigma_c = sigma - mu_1 z.
#pragma once
#include <cstdint>
#include <vector>

#include "teacher-limits/activation.hpp"

namespace tl {

/// What the equations need of a teacher.
struct TeacherSpec {
  int64_t d = 0;
  std::vector<double> v;  ///< readouts, as given (not renormalised)
  Act activation = Act::he3;
  double noise = 0.1;  ///< Delta
  int64_t k() const { return static_cast<int64_t>(v.size()); }
};

/// Stable fixed points of one feature's scalar map at (alpha, s).
struct FixedPoints {
  double low = 0;   ///< reached from q = 0 (the uninformed branch)
  double high = 0;  ///< reached from q = 1 - 1e-6 (the informed branch)
  double best = 0;  ///< the stable fixed point of largest free entropy
  int count = 1;    ///< stable fixed points found
};

/// Which fixed point a feature takes.
enum class Rule { lowest, highest, best };

/// One solution of the coupled equations at one alpha.
struct Branch {
  std::vector<double> q;  ///< overlap of each feature (specialisation)
  double m_linear = 0;    ///< error of the collective linear mode (per unit mu_1^2)
  double eps = 0;         ///< generalisation error against the noiseless teacher
  int iterations = 0;
  double residual = 0;    ///< max |q change| of the last iteration
  bool converged = false;
};

class StateEvolution {
 public:
  explicit StateEvolution(const TeacherSpec& spec);

  /// Solves at alpha with each feature on 'rule'; features i >= width are held
  /// at q = 0 (a width-limited student; width < 0: all). 'start' warms it.
  Branch solve(double alpha, Rule rule, const Branch* start = nullptr, int64_t width = -1) const;

  /// The fixed points of one feature's map at (alpha, s).
  FixedPoints fixed_points(double alpha, double s) const;
  /// Every feature's effective noise Delta_i in a solved branch.
  std::vector<double> feature_noises(const Branch& b) const;
  /// The table's channel function (tests): F(q, s) = q_hat / alpha.
  double channel(double q, double s) const;
  /// sum_i v_i^2 (var_c - K_c(q_i)) + mu_1^2 m and the pieces of it.
  double error_of(const std::vector<double>& q, double m_linear) const;

  bool split_linear() const { return split_; }
  double mu1() const { return mu1_; }
  double channel_variance() const { return var_c_; }
  const TeacherSpec& spec() const { return spec_; }
  /// K_c(q) of the feature channel (sigma, or sigma - mu_1 z when split).
  double kernel_c(double q) const;

  static constexpr double kSmallSnr = 1e-3;

 private:
  double table_F(int j, double s) const;  // F at q-grid node j
  // exact: F is lambda K_c' (the small-SNR regime), so roots and free
  // entropies are refined with K_c itself rather than the grid's interpolant.
  FixedPoints scan(double alpha, const double* F, bool exact = false) const;
  double kernel_derivative_c(double q) const;
  FixedPoints universal(double lambda) const;
  double linear_mode(double alpha, double rho, double noise) const;

  TeacherSpec spec_;
  Activation act_;
  bool split_ = false;
  double mu1_ = 0, var_c_ = 1;
  std::vector<double> q_;                 // q grid (0 .. 1 - 1e-9)
  std::vector<double> kprime_c_;          // K_c'(q_j)
  std::vector<double> log_s_;             // table rows
  std::vector<double> ratio_;             // [row][j]: F / s
  std::vector<double> kernel_value_, kernel_slope_;  // fine K, K' tables (tanh)
  std::vector<double> log_lambda_;        // universal table
  std::vector<FixedPoints> universal_;
};

}  // namespace tl
