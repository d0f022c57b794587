// state_evolution.cpp - the channel table, the scalar fixed points with their
// free entropy, and the damped coupled iteration.
#include "teacher-limits/state_evolution.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

#include "teacher-limits/quadrature.hpp"

namespace tl {
namespace {

constexpr double kQTop = 1 - 1e-9;
constexpr int kFineKernel = 4097;
constexpr double kLogLambdaLo = -6, kLogLambdaHi = 12;
constexpr int kLambdaPerDecade = 50;

std::vector<double> q_grid() {
  std::vector<double> q{0.0};
  for (double e = -8; e < std::log10(0.05) - 1e-9; e += 0.2) q.push_back(std::pow(10.0, e));
  for (double x = 0.05; x < 0.95 + 1e-9; x += 0.025) q.push_back(x);
  for (double e = std::log10(0.05) - 0.2; e > -9 - 1e-9; e -= 0.2) q.push_back(1 - std::pow(10.0, e));
  q.push_back(kQTop);
  std::sort(q.begin(), q.end());
  q.erase(std::unique(q.begin(), q.end(), [](double a, double b) { return std::abs(a - b) < 1e-13; }), q.end());
  return q;
}

// F(q, s) = E_omega integral dy (d_omega p)^2 / p for y = sqrt(s) g(omega +
// sqrt(V) z) + xi, omega = sqrt(q) xi', V = 1 - q: the density p on a y grid
// (step 0.25, spectrally accurate for a density smoothed by unit noise) as a
// sum of Gaussian bumps from a z grid fine enough that neighbouring bumps are
// at most 0.4 apart. g is odd or even for every activation here, so omega
// and -omega give the same value and only omega >= 0 is summed.
template <class G, class DG>
double channel_quadrature(double q, double s, G g, DG dg) {
  static const Quadrature outer = gauss_hermite(48);
  const double V = 1 - q, rs = std::sqrt(s);
  const double hy = 0.25, window = 8.5;
  std::vector<double> p, dp;
  double total = 0;
  const int n = q > 0 ? outer.size() : 1;
  for (int a = 0; a < n; ++a) {
    double omega = 0, weight = 1;
    if (q > 0) {
      if (outer.x[a] < -1e-12 || outer.w[a] < 1e-16) continue;
      omega = std::sqrt(q) * outer.x[a];
      weight = outer.x[a] > 1e-12 ? 2 * outer.w[a] : outer.w[a];
    }
    if (V < 1e-10) {  // the channel is noiseless in z: p = phi(y - c)
      const double d = dg(omega);
      total += weight * s * d * d;
      continue;
    }
    const double sv = std::sqrt(V), zmax = 6.5;
    double slope = 0;
    for (int t = 0; t <= 64; ++t) slope = std::max(slope, std::abs(dg(omega + sv * (-4.5 + 9.0 * t / 64))));
    const double hz = std::min(0.05, 0.4 / (rs * sv * slope + 1e-300));
    const int nz = static_cast<int>(std::ceil(2 * zmax / hz));
    const double step = 2 * zmax / nz;
    double cmin = 1e300, cmax = -1e300;
    for (int t = 0; t <= nz; ++t) {
      const double c = rs * g(omega + sv * (-zmax + t * step));
      cmin = std::min(cmin, c);
      cmax = std::max(cmax, c);
    }
    const double y0 = cmin - window;
    const int ny = static_cast<int>(std::ceil((cmax - cmin + 2 * window) / hy)) + 1;
    p.assign(ny, 0.0);
    dp.assign(ny, 0.0);
    const int half = static_cast<int>(window / hy);
    for (int t = 0; t <= nz; ++t) {
      const double z = -zmax + t * step;
      const double wz = step * std::exp(-0.5 * z * z) / std::sqrt(2 * std::numbers::pi) * ((t == 0 || t == nz) ? 0.5 : 1.0);
      const double arg = omega + sv * z, c = rs * g(arg), dc = rs * dg(arg);
      const int j0 = static_cast<int>(std::lround((c - y0) / hy));
      // exp(-(y_j - c)^2 / 2) by a multiplicative recurrence on each side of j0.
      const double u0 = y0 + j0 * hy - c, e0 = std::exp(-0.5 * u0 * u0);
      const double shrink = std::exp(-hy * hy);
      double e = e0, r = std::exp(-u0 * hy - 0.5 * hy * hy);
      for (int j = j0, u = 0; u <= half && j < ny; ++j, ++u) {
        if (j >= 0) {
          const double du = y0 + j * hy - c;
          p[j] += wz * e;
          dp[j] += wz * e * du * dc;
        }
        e *= r;
        r *= shrink;
      }
      e = e0;
      r = std::exp(u0 * hy - 0.5 * hy * hy);
      for (int j = j0 - 1, u = 1; u <= half && j >= 0; --j, ++u) {
        e *= r;
        r *= shrink;
        if (j < ny) {
          const double du = y0 + j * hy - c;
          p[j] += wz * e;
          dp[j] += wz * e * du * dc;
        }
      }
    }
    double inner = 0;
    for (int j = 0; j < ny; ++j)
      if (p[j] > 1e-290) inner += dp[j] * dp[j] / p[j];
    total += weight * inner * hy / std::sqrt(2 * std::numbers::pi);
  }
  return total;
}

}  // namespace

StateEvolution::StateEvolution(const TeacherSpec& spec) : spec_(spec), act_(spec.activation) {
  if (spec_.d <= 0 || spec_.v.empty()) throw std::invalid_argument("StateEvolution: d and k must be positive");
  if (!(spec_.noise > 0)) throw std::invalid_argument("StateEvolution: the noise must be positive");
  split_ = spec_.k() >= 2 && std::abs(act_.mu1()) > 1e-12;
  mu1_ = split_ ? act_.mu1() : 0.0;
  var_c_ = split_ ? std::max(0.0, 1 - mu1_ * mu1_) : 1.0;
  if (var_c_ < 1e-12) var_c_ = 0;

  q_ = q_grid();
  kprime_c_.resize(q_.size());
  for (size_t j = 0; j < q_.size(); ++j) kprime_c_[j] = std::max(0.0, act_.kernel_derivative(q_[j]) - mu1_ * mu1_);
  if (act_.kind() == Act::tanh) {
    kernel_value_.resize(kFineKernel);
    kernel_slope_.resize(kFineKernel);
    for (int t = 0; t < kFineKernel; ++t) {
      const double q = static_cast<double>(t) / (kFineKernel - 1);
      kernel_value_[t] = act_.kernel(q);
      kernel_slope_[t] = act_.kernel_derivative(q);
    }
  }
  if (var_c_ == 0) return;

  double vmax = 0;
  for (double x : spec_.v) vmax = std::max(vmax, x * x);
  const double s_max = 1.05 * vmax / spec_.noise;
  if (s_max > kSmallSnr) {
    const double lo = std::log(kSmallSnr), hi = std::log(s_max);
    const int rows = std::max(2, static_cast<int>(std::ceil((hi - lo) / std::log(10.0) * 8)) + 1);
    for (int r = 0; r < rows; ++r) log_s_.push_back(lo + (hi - lo) * r / (rows - 1));
    const int Q = static_cast<int>(q_.size());
    ratio_.assign(static_cast<size_t>(rows) * Q, 0.0);
    const double m1 = mu1_;
    const Activation act = act_;
    auto g = [&act, m1](double z) { return act(z) - m1 * z; };
    auto dg = [&act, m1](double z) { return act.derivative(z) - m1; };
#pragma omp parallel for schedule(dynamic, 1)
    for (int cell = 0; cell < rows * Q; ++cell) {
      const int r = cell / Q, j = cell % Q;
      const double s = std::exp(log_s_[r]);
      ratio_[cell] = channel_quadrature(q_[j], s, g, dg) / s;
    }
  }
  log_lambda_.resize((kLogLambdaHi - kLogLambdaLo) * kLambdaPerDecade + 1);
  universal_.resize(log_lambda_.size());
  for (size_t t = 0; t < log_lambda_.size(); ++t) {
    log_lambda_[t] = kLogLambdaLo + static_cast<double>(t) / kLambdaPerDecade;
    universal_[t] = scan(std::pow(10.0, log_lambda_[t]), kprime_c_.data(), true);
  }
}

namespace {
// Linear interpolation in a table over kFineKernel uniform points of [0, 1].
double fine_lookup(const std::vector<double>& table, double q) {
  const double x = q * (kFineKernel - 1);
  const int t = std::min(kFineKernel - 2, static_cast<int>(x));
  const double f = x - t;
  return (1 - f) * table[t] + f * table[t + 1];
}
}  // namespace

double StateEvolution::kernel_c(double q) const {
  q = std::clamp(q, 0.0, 1.0);
  const double k = kernel_value_.empty() ? act_.kernel(q) : fine_lookup(kernel_value_, q);
  return k - mu1_ * mu1_ * q;
}

double StateEvolution::kernel_derivative_c(double q) const {
  q = std::clamp(q, 0.0, 1.0);
  const double k = kernel_slope_.empty() ? act_.kernel_derivative(q) : fine_lookup(kernel_slope_, q);
  return std::max(0.0, k - mu1_ * mu1_);
}

double StateEvolution::table_F(int j, double s) const {
  if (log_s_.empty() || s < kSmallSnr) return s * kprime_c_[j];
  // Cubic (Catmull-Rom) in log s through four rows; clamped at the ends.
  const int Q = static_cast<int>(q_.size()), rows = static_cast<int>(log_s_.size());
  const double x = (std::log(s) - log_s_[0]) / (log_s_[1] - log_s_[0]);
  const int r = std::clamp(static_cast<int>(x), 0, rows - 2);
  const double t = std::clamp(x - r, 0.0, 1.0);
  auto at = [&](int row) { return ratio_[static_cast<size_t>(std::clamp(row, 0, rows - 1)) * Q + j]; };
  const double p0 = at(r - 1), p1 = at(r), p2 = at(r + 1), p3 = at(r + 2);
  const double m1 = r > 0 ? 0.5 * (p2 - p0) : p2 - p1, m2 = r + 2 < rows ? 0.5 * (p3 - p1) : p2 - p1;
  const double t2 = t * t, t3 = t2 * t;
  const double value = (2 * t3 - 3 * t2 + 1) * p1 + (t3 - 2 * t2 + t) * m1 + (-2 * t3 + 3 * t2) * p2 + (t3 - t2) * m2;
  return s * value;
}

double StateEvolution::channel(double q, double s) const {
  const auto it = std::upper_bound(q_.begin(), q_.end(), q);
  const int j = std::clamp(static_cast<int>(it - q_.begin()) - 1, 0, static_cast<int>(q_.size()) - 2);
  const double f = std::clamp((q - q_[j]) / (q_[j + 1] - q_[j]), 0.0, 1.0);
  return (1 - f) * table_F(j, s) + f * table_F(j + 1, s);
}

// The stable fixed points of q = alpha F (1 - q) ... i.e. of
// g(q) = alpha F(q) (1 - q) - q = 0 with g falling through zero, F linear
// between grid nodes; their free entropy relative to q = 0 is
//   phi(q) = [q + log(1 - q)] / 2 + (alpha / 2) int_0^q F.
FixedPoints StateEvolution::scan(double alpha, const double* F, bool exact) const {
  const int Q = static_cast<int>(q_.size());
  FixedPoints out;
  out.count = 0;
  double best_phi = -1e300, integral = 0;
  auto g = [&](int j) { return alpha * F[j] * (1 - q_[j]) - q_[j]; };
  auto consider = [&](double q, double partial_integral) {
    const double phi = 0.5 * (q + std::log1p(-q)) + 0.5 * alpha * partial_integral;
    if (out.count == 0) out.low = q;
    out.high = q;
    if (phi > best_phi + 1e-15) {
      best_phi = phi;
      out.best = q;
    }
    ++out.count;
  };
  double g_prev = g(0);
  if (g_prev <= 0 && g(1) < 0) consider(0.0, 0.0);
  for (int j = 0; j + 1 < Q; ++j) {
    const double g_next = g(j + 1);
    const double width = q_[j + 1] - q_[j];
    const double slope = (F[j + 1] - F[j]) / width;
    if (g_prev > 0 && g_next <= 0) {
      double a = q_[j], b = q_[j + 1];
      if (exact) {  // g(q) = alpha K_c'(q) (1 - q) - q changes sign on the nodes
        for (int it = 0; it < 60; ++it) {
          const double m = 0.5 * (a + b);
          (alpha * kernel_derivative_c(m) * (1 - m) - m > 0 ? a : b) = m;
        }
        const double root = 0.5 * (a + b);
        consider(root, kernel_c(root) - kernel_c(0));
      } else {
        for (int it = 0; it < 60; ++it) {
          const double m = 0.5 * (a + b);
          const double gm = alpha * (F[j] + slope * (m - q_[j])) * (1 - m) - m;
          (gm > 0 ? a : b) = m;
        }
        const double root = 0.5 * (a + b), u = root - q_[j];
        consider(root, integral + F[j] * u + 0.5 * slope * u * u);
      }
    }
    integral += 0.5 * (F[j] + F[j + 1]) * width;
    g_prev = g_next;
  }
  if (g_prev > 0) {  // the fixed point lies above the last node (F is flat there)
    const double x = alpha * F[Q - 1], root = x / (1 + x);
    consider(root, exact ? kernel_c(root) - kernel_c(0) : integral + F[Q - 1] * (root - q_[Q - 1]));
  }
  if (out.count == 0) out.count = 1;
  return out;
}

FixedPoints StateEvolution::universal(double lambda) const {
  if (lambda <= 0) return {};
  const double x = (std::log10(lambda) - kLogLambdaLo) * kLambdaPerDecade;
  if (x < 0) return scan(lambda, kprime_c_.data(), true);
  const int t = static_cast<int>(x);
  if (t + 1 >= static_cast<int>(universal_.size())) return scan(lambda, kprime_c_.data(), true);
  const FixedPoints &a = universal_[t], &b = universal_[t + 1];
  const bool a_high = a.best == a.high && a.count > 1, b_high = b.best == b.high && b.count > 1;
  if (a.count != b.count || a_high != b_high) return scan(lambda, kprime_c_.data(), true);
  const double f = x - t;
  FixedPoints out;
  out.count = a.count;
  out.low = (1 - f) * a.low + f * b.low;
  out.high = (1 - f) * a.high + f * b.high;
  out.best = a.count == 1 ? out.low : (a_high ? out.high : out.low);
  if (a.count > 1 && !a_high && a.best != a.low) return scan(lambda, kprime_c_.data(), true);  // a middle one won
  return out;
}

FixedPoints StateEvolution::fixed_points(double alpha, double s) const {
  if (var_c_ == 0 || !(alpha > 0) || !(s > 0)) return {};
  if (s < kSmallSnr || log_s_.empty()) return universal(alpha * s);
  double F[512];
  const int Q = static_cast<int>(q_.size());
  for (int j = 0; j < Q; ++j) F[j] = table_F(j, s);
  return scan(alpha, F);
}

double StateEvolution::linear_mode(double alpha, double rho, double noise) const {
  // m = rho / (1 + alpha rho / (noise + m)): m^2 + m (noise + alpha rho - rho) - rho noise = 0.
  if (rho <= 0) return 0;
  const double b = noise + alpha * rho - rho;
  return 2 * rho * noise / (b + std::sqrt(b * b + 4 * rho * noise));
}

double StateEvolution::error_of(const std::vector<double>& q, double m_linear) const {
  double e = mu1_ * mu1_ * m_linear;
  for (size_t i = 0; i < q.size(); ++i) e += spec_.v[i] * spec_.v[i] * (var_c_ - (var_c_ > 0 ? kernel_c(q[i]) : 0.0));
  return e;
}

std::vector<double> StateEvolution::feature_noises(const Branch& b) const {
  std::vector<double> own(b.q.size());
  double S = 0;
  for (size_t j = 0; j < b.q.size(); ++j) {
    own[j] = spec_.v[j] * spec_.v[j] * (var_c_ - (var_c_ > 0 ? kernel_c(b.q[j]) : 0.0));
    S += own[j];
  }
  const double base = spec_.noise + mu1_ * mu1_ * b.m_linear + S;
  for (double& x : own) x = std::max(spec_.noise, base - x);
  return own;
}

Branch StateEvolution::solve(double alpha, Rule rule, const Branch* start, int64_t width) const {
  const int64_t k = spec_.k();
  Branch b;
  b.q.assign(k, rule == Rule::highest ? 1 - 1e-6 : 0.0);
  if (start && static_cast<int64_t>(start->q.size()) == k) b.q = start->q;
  if (width >= 0)
    for (int64_t i = width; i < k; ++i) b.q[i] = 0;
  std::vector<double> own(k), next(k);
  const double eta = 0.5;
  for (int it = 1; it <= 3000; ++it) {
    double S = 0, rho = 0;
    for (int64_t i = 0; i < k; ++i) {
      const double v2 = spec_.v[i] * spec_.v[i];
      own[i] = v2 * (var_c_ - (var_c_ > 0 ? kernel_c(b.q[i]) : 0.0));
      S += own[i];
      rho += v2 * (1 - b.q[i]);
    }
    b.m_linear = split_ ? linear_mode(alpha, rho, (spec_.noise + S) / (mu1_ * mu1_)) : 0.0;
    const double base = spec_.noise + mu1_ * mu1_ * b.m_linear + S;
#pragma omp parallel for schedule(static) if (k >= 512)
    for (int64_t i = 0; i < k; ++i) {
      if (width >= 0 && i >= width) {
        next[i] = 0;
        continue;
      }
      const double noise_i = std::max(spec_.noise, base - own[i]);
      const FixedPoints fp = fixed_points(alpha, spec_.v[i] * spec_.v[i] / noise_i);
      next[i] = rule == Rule::lowest ? fp.low : rule == Rule::highest ? fp.high : fp.best;
    }
    double change = 0;
    for (int64_t i = 0; i < k; ++i) {
      change = std::max(change, std::abs(next[i] - b.q[i]));
      b.q[i] += (it <= 2 ? 1.0 : eta) * (next[i] - b.q[i]);
    }
    b.iterations = it;
    b.residual = change;
    if (change < 1e-11) {
      b.q = next;
      b.converged = true;
      break;
    }
  }
  double rho = 0;
  for (int64_t i = 0; i < k; ++i) rho += spec_.v[i] * spec_.v[i] * (1 - b.q[i]);
  double S = 0;
  for (int64_t i = 0; i < k; ++i) S += spec_.v[i] * spec_.v[i] * (var_c_ - (var_c_ > 0 ? kernel_c(b.q[i]) : 0.0));
  b.m_linear = split_ ? linear_mode(alpha, rho, (spec_.noise + S) / (mu1_ * mu1_)) : 0.0;
  b.eps = error_of(b.q, b.m_linear);
  return b;
}

}  // namespace tl
