// amp.cpp - the amp verb (k = 1): generalised approximate message passing
// (Rangan's GAMP with scalar variances) for w from y = v sigma(w.x/sqrt d) +
// sqrt(Delta) xi with the prior N(0, I_d), beside its state evolution
// q_{t+1} = q_hat/(1 + q_hat), q_hat = alpha F(q_t, v^2/Delta), with F the
// channel table that theory solves with.
#include <algorithm>
#include <array>
#include <cmath>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/rng.hpp"
#include "teacher-limits/teacher_limits.hpp"

namespace tl {
namespace {

// E over z ~ N(omega, V) weighted by the channel p(y | z): a uniform grid of
// 601 points over +-8 standard deviations (robust where the likelihood is
// narrow in z, unlike a Gauss-Hermite rule).
class ChannelGrid {
 public:
  ChannelGrid() : xi_(601), logw_(601) {
    for (int j = 0; j < 601; ++j) {
      xi_[j] = -8 + 16.0 * j / 600;
      logw_[j] = -0.5 * xi_[j] * xi_[j];
    }
  }
  // g_out = (E[z|y] - omega)/V and -dg_out/domega = (1 - Var[z|y]/V)/V.
  void denoise(const Activation& act, double v, double delta, double y, double omega, double V, double& g,
               double& minus_dg) const {
    const double sv = std::sqrt(V);
    std::array<double, 601> lp;
    double top = -1e300;
    for (int j = 0; j < 601; ++j) {
      const double r = y - v * act(omega + sv * xi_[j]);
      lp[j] = logw_[j] - r * r / (2 * delta);
      top = std::max(top, lp[j]);
    }
    double Z = 0, m1 = 0, m2 = 0;
    for (int j = 0; j < 601; ++j) {
      const double p = std::exp(lp[j] - top);
      Z += p;
      m1 += p * xi_[j];
      m2 += p * xi_[j] * xi_[j];
    }
    m1 /= Z;
    const double var_xi = std::max(0.0, m2 / Z - m1 * m1);
    g = m1 / sv;
    minus_dg = (1 - var_xi) / V;
  }
  // E sigma(omega + sqrt(V) xi), xi ~ N(0, 1).
  double mean_output(const Activation& act, double omega, double V) const {
    const double sv = std::sqrt(V);
    double Z = 0, s = 0;
    for (int j = 0; j < 601; ++j) {
      const double w = std::exp(logw_[j]);
      Z += w;
      s += w * act(omega + sv * xi_[j]);
    }
    return s / Z;
  }

 private:
  std::vector<double> xi_, logw_;
};

}  // namespace

AmpResult run_amp(const Data& data, int iterations, double init_overlap, uint64_t seed) {
  const Teacher& t = data.teacher;
  const int64_t n = data.train_X.rows(), d = t.d();
  const double v = t.v[0], delta = t.noise, alpha = static_cast<double>(n) / static_cast<double>(d);
  const Activation act(t.activation);
  const Matrix F = data.train_X / std::sqrt(static_cast<double>(d));
  const double frob = F.squaredNorm(), c_row = frob / static_cast<double>(n), c_col = frob / static_cast<double>(d);
  const Vector w_star = t.W.row(0).transpose();

  // Start with overlap init_overlap: w_hat = q0 w* + sqrt(q0 - q0^2) g, variance 1 - q0.
  nk::Rng rng = nk::Rng(seed).split(7);
  Vector w_hat(d), g_prev = Vector::Zero(n), g(n), omega(n);
  for (int64_t i = 0; i < d; ++i)
    w_hat[i] = init_overlap * w_star[i] + std::sqrt(init_overlap - init_overlap * init_overlap) * rng.normal();
  double tau_x = 1 - init_overlap;

  const StateEvolution se(t.spec());
  AmpResult r;
  double q_se = init_overlap;
  const ChannelGrid grid;
  std::vector<double> minus_dg(static_cast<size_t>(n));
  for (int it = 0; it < iterations; ++it) {
    const double tau_p = c_row * tau_x;
    omega.noalias() = F * w_hat;
    omega -= tau_p * g_prev;
#pragma omp parallel for schedule(static)
    for (int64_t mu = 0; mu < n; ++mu) {
      double gm = 0, dm = 0;
      grid.denoise(act, v, delta, data.train_y[mu], omega[mu], tau_p, gm, dm);
      g[mu] = gm;
      minus_dg[mu] = dm;
    }
    double tau_s = 0;
    for (double x : minus_dg) tau_s += x;
    tau_s /= static_cast<double>(n);
    if (!(tau_s > 0)) tau_s = 1e-12;
    const double tau_r = 1 / (c_col * tau_s);
    const Vector r_hat = w_hat + tau_r * (F.transpose() * g);
    w_hat = r_hat / (1 + tau_r);
    tau_x = tau_r / (1 + tau_r);
    g_prev = g;
    r.q.push_back(std::abs(w_hat.dot(w_star)) / w_star.squaredNorm());
    const double q_hat = alpha * se.channel(std::clamp(q_se, 0.0, 1.0), v * v / delta);
    q_se = q_hat / (1 + q_hat);
    r.q_se.push_back(q_se);
  }
  // The posterior predictive mean on the test set: E v sigma(z), z ~ N(x.w_hat/sqrt d, tau_x).
  const Vector omega_test = data.test_X * w_hat / std::sqrt(static_cast<double>(d));
  double err = 0;
  for (int64_t mu = 0; mu < omega_test.size(); ++mu) {
    const double f = v * grid.mean_output(act, omega_test[mu], c_row * tau_x);
    err += (data.test_f[mu] - f) * (data.test_f[mu] - f);
  }
  r.eps = err / static_cast<double>(omega_test.size());
  r.eps_se = se.error_of({q_se}, 0);
  r.w_hat = w_hat;
  return r;
}

void amp(const AmpOptions& o, const nk::RunEnv& env) {
  const nk::h5::File in = nk::h5::File::open(o.input);
  const Data data = read_data(in);
  if (data.teacher.k() != 1)
    throw nk::input_error(in.path(), "/teacher/W",
                          "has k = " + std::to_string(data.teacher.k()) + " rows; amp is the k = 1 single-index model");
  if (!(o.init_overlap >= 0 && o.init_overlap < 1)) throw nk::usage_error("--init-overlap must be in [0, 1)");
  const AmpResult r = run_amp(data, o.iterations, o.init_overlap, env.seed);
  nk::h5::Writer out(o.output, kAmpSchema, o.no_clobber);
  write_teacher(out, data.teacher);
  const int64_t T = static_cast<int64_t>(r.q.size());
  out.write("/amp/q", r.q.data(), {T}, "t");
  out.write("/amp/q_se", r.q_se.data(), {T}, "t");
  out.write("/amp/w", r.w_hat.data(), {data.teacher.d()}, "d");
  out.write("/amp/eps", &r.eps, {1}, "one");
  out.write("/amp/eps_se", &r.eps_se, {1}, "one");
  out.attr("/amp", "n", data.train_X.rows());
  out.attr("/amp", "init_overlap", o.init_overlap);
  out.commit();
  spdlog::info(
      "amp: n = {}, alpha = {:.3g}: q {:.4f} (state evolution {:.4f}) after {} iterations; eps {:.5g} (SE {:.5g}) -> "
      "{}",
      data.train_X.rows(), static_cast<double>(data.train_X.rows()) / data.teacher.d(), r.q.back(), r.q_se.back(), T,
      r.eps, r.eps_se, nk::display_name(o.output, true));
}

}  // namespace tl
