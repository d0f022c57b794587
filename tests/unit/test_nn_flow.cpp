// test_nn_flow.cpp - flow matching (nk/nn/flow.hpp) on Gaussian data, where
// everything is known in closed form: for x1 ~ N(mu, s^2) per value the
// velocity of the linear path is v*(x, t) = mu + (t s^2 - (1 - t)) /
// ((1 - t)^2 + t^2 s^2) (x - t mu), the ODE carries x0 to mu + s x0 exactly,
// and the smallest flow-matching loss is E_t[1 + s^2 - (t s^2 - (1 - t))^2 /
// ((1 - t)^2 + t^2 s^2)] per value.
#include <doctest/doctest.h>

#include <cmath>

#include <Eigen/Dense>
#include <algorithm>

#include "nk/nn/flow.hpp"
#include "nk/nn/guidance.hpp"
#include "nk/nn/likelihood.hpp"
#include "nk/rng.hpp"

namespace {

constexpr double kMu = 0.7, kS = 0.4;

double exact_velocity(double x, double t) {
  return kMu + (t * kS * kS - (1 - t)) / ((1 - t) * (1 - t) + t * t * kS * kS) * (x - t * kMu);
}

nk::nn::Velocity analytic() {
  return [](const float* x, float t, int64_t batch, float* v) {
    for (int64_t j = 0; j < batch; ++j) v[j] = static_cast<float>(exact_velocity(x[j], t));
  };
}

// Largest |x1 - (mu + s x0)| after integrating from x0.
double map_error(nk::nn::Solver solver, int64_t steps) {
  const int64_t n = 1000;
  std::vector<float> x0(n), x(n);
  nk::Rng rng(7);
  for (auto& v : x0) v = static_cast<float>(rng.normal());
  x = x0;
  nk::nn::integrate(analytic(), x.data(), n, 1, steps, solver);
  double worst = 0;
  for (int64_t j = 0; j < n; ++j) worst = std::max(worst, std::abs(x[j] - (kMu + kS * x0[j])));
  return worst;
}

double smallest_loss() {
  double sum = 0;
  const int m = 100000;
  for (int i = 0; i < m; ++i) {
    const double t = (i + 0.5) / m, c = t * kS * kS - (1 - t);
    sum += 1 + kS * kS - c * c / ((1 - t) * (1 - t) + t * t * kS * kS);
  }
  return sum / m;
}

// The exact Gaussian velocity as a FlowField over D values (its Jacobian is
// a(t) I: the divergence is D a(t), the density of x1 is N(mu, s^2) per value).
class ScalarGaussianField : public nk::nn::FlowField {
 public:
  void velocity(const float* x, float t, int64_t batch, float* v) override {
    t_ = t;
    for (int64_t j = 0; j < batch * dim; ++j) v[j] = static_cast<float>(exact_velocity(x[j], t));
  }
  void velocity_vjp(const float* g, int64_t batch, float* dx) override {
    const double a = (t_ * kS * kS - (1 - t_)) / ((1 - t_) * (1 - t_) + t_ * t_ * kS * kS);
    for (int64_t j = 0; j < batch * dim; ++j) dx[j] = static_cast<float>(a * g[j]);
  }
  int64_t dim = 1;

 private:
  double t_ = 0;
};

}  // namespace

TEST_SUITE("nn_flow") {
  TEST_CASE("probability-flow log-likelihood: the Gaussian's exact density; Hutchinson against the exact trace") {
    ScalarGaussianField field;
    field.dim = 6;
    const int64_t batch = 5, D = field.dim;
    std::vector<float> x(static_cast<size_t>(batch * D));
    nk::Rng rng(21);
    for (auto& v : x) v = static_cast<float>(kMu + kS * rng.normal());
    auto error = [&](int64_t steps) {
      const nk::nn::LikelihoodResult r = nk::nn::log_likelihood(field, x.data(), batch, D, steps, 0, 1);
      double worst = 0;
      for (int64_t b = 0; b < batch; ++b) {
        double truth = 0;
        for (int64_t j = 0; j < D; ++j) {
          const double z = (x[b * D + j] - kMu) / kS;
          truth += -0.5 * z * z - std::log(kS) - 0.5 * std::log(2 * M_PI);
        }
        worst = std::max(worst, std::abs(r.log_density[b] - truth));
      }
      return worst;
    };
    const double e32 = error(32), e64 = error(64);
    INFO("largest log-density error: 32 steps " << e32 << ", 64 steps " << e64);
    CHECK(e64 < 5e-3);
    CHECK(e32 / e64 > 3.0);  // Heun: second order
    const nk::nn::LikelihoodResult exact = nk::nn::log_likelihood(field, x.data(), batch, D, 64, 0, 1);
    const nk::nn::LikelihoodResult hutch = nk::nn::log_likelihood(field, x.data(), batch, D, 64, 1, 1);
    for (int64_t b = 0; b < batch; ++b) {
      // A Jacobian proportional to I: Rademacher probes are exact (eps^T a I eps = a D).
      CHECK(hutch.log_density[b] == doctest::Approx(exact.log_density[b]).epsilon(1e-9));
    }
    CHECK(exact.forwards == 2 * 64);
    CHECK(exact.backwards == 2 * 64 * D);
    CHECK(hutch.backwards == 2 * 64);

    // A small U-Net: the exact trace (one VJP per value) against central
    // differences of the velocity, and Hutchinson's mean against the exact trace.
    nk::nn::UNetConfig config;
    config.image = {4, 4, 2};
    config.channels = {4, 8};
    config.groups = 2;
    config.time_dim = 8;
    nk::nn::UNet<float> net = nk::nn::UNet<float>::build(config);
    net.init(5, 1.0);
    const int64_t d = config.image.size();
    nk::nn::UNetField unet(net, 1);
    std::vector<float> p(static_cast<size_t>(d)), v(p.size()), up(p.size()), down(p.size());
    for (auto& value : p) value = static_cast<float>(rng.normal());
    const float t = 0.4f;
    const double trace = nk::nn::divergence(unet, p.data(), t, 1, d, 0, 0)[0];
    double numeric = 0;
    for (int64_t k = 0; k < d; ++k) {
      const float saved = p[k], h = 1e-2f;
      p[k] = saved + h;
      unet.velocity(p.data(), t, 1, up.data());
      p[k] = saved - h;
      unet.velocity(p.data(), t, 1, down.data());
      p[k] = saved;
      numeric += (up[k] - down[k]) / (2.0 * h);
    }
    INFO("exact trace " << trace << ", central differences " << numeric);
    CHECK(std::abs(trace - numeric) < 2e-2 * std::max(1.0, std::abs(trace)));
    const int64_t probes = 4000;
    std::vector<double> estimates;
    for (int64_t i = 0; i < probes; ++i) estimates.push_back(nk::nn::divergence(unet, p.data(), t, 1, d, 1, 100 + i)[0]);
    double mean = 0, var = 0;
    for (double e : estimates) mean += e / probes;
    for (double e : estimates) var += (e - mean) * (e - mean) / (probes - 1);
    const double se = std::sqrt(var / probes);
    INFO("Hutchinson mean " << mean << " +- " << se << ", exact " << trace);
    CHECK(std::abs(mean - trace) < 4 * se + 1e-6);
    CHECK(se > 0);  // a real estimator: its single probes scatter
  }

  TEST_CASE("samplers on the exact Gaussian velocity: Euler first order, Heun second order, the SDE's marginals") {
    const double e40 = map_error(nk::nn::Solver::euler, 40), e80 = map_error(nk::nn::Solver::euler, 80);
    const double h40 = map_error(nk::nn::Solver::heun, 40), h80 = map_error(nk::nn::Solver::heun, 80);
    MESSAGE("map error: Euler 40 steps " << e40 << ", 80 steps " << e80 << "; Heun " << h40 << ", " << h80);
    CHECK(e40 / e80 == doctest::Approx(2.0).epsilon(0.15));
    CHECK(h40 / h80 > 3.2);
    CHECK(h40 < e40 / 20);
    CHECK(h40 < 5e-3);
    // The SDE: same marginals (mean mu, deviation s at t = 1) for any gamma.
    for (double gamma : {0.5, 2.0}) {
      const int64_t n = 20000;
      std::vector<float> x(n);
      nk::Rng rng(8);
      for (auto& v : x) v = static_cast<float>(rng.normal());
      const int64_t evaluations = nk::nn::integrate(analytic(), x.data(), n, 1, 400, nk::nn::Solver::sde, gamma, 9);
      CHECK(evaluations == 400);
      double mean = 0, sq = 0;
      for (float v : x) mean += v;
      mean /= n;
      for (float v : x) sq += (v - mean) * (v - mean);
      const double sd = std::sqrt(sq / (n - 1));
      INFO("gamma " << gamma << ": mean " << mean << ", deviation " << sd);
      CHECK(std::abs(mean - kMu) < 0.015);
      CHECK(std::abs(sd - kS) < 0.015);
    }
  }

  TEST_CASE("flow-matching training reaches the Gaussian's smallest loss; same seed, same weights") {
    nk::nn::UNetConfig config;
    config.image = {8, 8, 1};
    config.channels = {8, 16};
    config.groups = 4;
    config.time_dim = 16;
    const int64_t n = 4096;
    std::vector<float> data(static_cast<size_t>(n * 64));
    nk::Rng rng(11);
    for (auto& v : data) v = static_cast<float>(kMu + kS * rng.normal());
    nk::nn::UNet<float> net = nk::nn::UNet<float>::build(config);
    net.init(3, 0.0);
    nk::nn::UNet<float> ema;
    nk::nn::FlowTraining training;
    training.steps = 400;
    training.batch = 32;
    training.learning_rate = 2e-3;
    training.warmup = 20;
    training.ema = 0.99;
    training.seed = 4;
    const double floor = smallest_loss(), before = nk::nn::flow_loss(net, data.data(), nullptr, 1024, 99);
    int64_t reports = 0;
    nk::nn::train_flow(net, &ema, data.data(), nullptr, n, training, 100, [&](const nk::nn::FlowReport& r) {
      ++reports;
      CHECK(std::isfinite(r.loss));
    });
    const double after = nk::nn::flow_loss(net, data.data(), nullptr, 1024, 99);
    const double after_ema = nk::nn::flow_loss(ema, data.data(), nullptr, 1024, 99);
    MESSAGE("flow loss per value: smallest " << floor << ", before " << before << ", after " << after << " (EMA "
                                             << after_ema << ")");
    CHECK(reports == 4);
    CHECK(before > 1.5 * floor);
    CHECK(after < 1.06 * floor);
    CHECK(after_ema < 1.06 * floor);
    // The learned velocity against the exact one on the path: x_t = (1 - t) x0 + t x1.
    nk::nn::UNetWorkspace<float> ws(ema, 4);
    std::vector<float> x(4 * 64), t = {0.1f, 0.4f, 0.7f, 0.95f};
    for (int64_t b = 0; b < 4; ++b)
      for (int64_t j = 0; j < 64; ++j) x[b * 64 + j] = static_cast<float>((1 - t[b]) * rng.normal() + t[b] * (kMu + kS * rng.normal()));
    nk::nn::forward(ema, x.data(), t.data(), static_cast<const float*>(nullptr), 4, ws);
    double err = 0, norm = 0;
    for (int64_t b = 0; b < 4; ++b)
      for (int64_t j = 0; j < 64; ++j) {
        const double want = exact_velocity(x[b * 64 + j], t[b]);
        err += std::pow(ws.output()[b * 64 + j] - want, 2);
        norm += want * want;
      }
    MESSAGE("relative error of the learned velocity " << std::sqrt(err / norm));
    CHECK(std::sqrt(err / norm) < 0.25);  // excess loss 3% of the floor: about 0.18
    // Determinism: the same seed gives the same weights.
    training.steps = 5;
    nk::nn::UNet<float> a = nk::nn::UNet<float>::build(config), b = nk::nn::UNet<float>::build(config);
    a.init(3, 0.0);
    b.init(3, 0.0);
    nk::nn::train_flow(a, nullptr, data.data(), nullptr, n, training, 100, nullptr);
    nk::nn::train_flow(b, nullptr, data.data(), nullptr, n, training, 100, nullptr);
    CHECK(a.parts[2].layers[2].weight == b.parts[2].layers[2].weight);
  }
}

// Guided sampling (nk/nn/guidance.hpp) with an exact Gaussian prior (a mean
// per value, one deviation s) and a linear extractor f(x) = A x: the fiber
// {x : A x = A x_q} is an affine subspace and the prior's law on it is
// Gaussian with mean mu + S A^T (A S A^T)^-1 (f_q - A mu) and covariance
// S - S A^T (A S A^T)^-1 A S (S = s^2 I). NDTM's control cost is isotropic,
// so its fixed point is that law only where S is; with a deviation per value
// it lands nearer the Euclidean projection (printed, not checked).
namespace {

class GaussianField : public nk::nn::FlowField {
 public:
  GaussianField(std::vector<double> mu, std::vector<double> s) : mu_(std::move(mu)), s_(std::move(s)) {}
  void velocity(const float* x, float t, int64_t batch, float* v) override {
    t_ = t;
    const auto d = static_cast<int64_t>(mu_.size());
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t j = 0; j < d; ++j) v[b * d + j] = static_cast<float>(mu_[j] + slope(j) * (x[b * d + j] - t * mu_[j]));
  }
  void velocity_vjp(const float* g, int64_t batch, float* dx) override {
    const auto d = static_cast<int64_t>(mu_.size());
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t j = 0; j < d; ++j) dx[b * d + j] = static_cast<float>(slope(j) * g[b * d + j]);
  }

 private:
  double slope(int64_t j) const {
    const double t = t_, s2 = s_[j] * s_[j];
    return (t * s2 - (1 - t)) / ((1 - t) * (1 - t) + t * t * s2);
  }
  std::vector<double> mu_, s_;
  double t_ = 0;
};

// c(x) = ||A x - f_q||^2 / ||f_q||^2.
class LinearFiber : public nk::nn::TerminalCost {
 public:
  LinearFiber(Eigen::MatrixXd a, Eigen::VectorXd fq) : a_(std::move(a)), fq_(std::move(fq)) {}
  void evaluate(const float* x, int64_t batch, double* cost, float* grad) override {
    const int64_t d = a_.cols();
    const double norm = fq_.squaredNorm();
    for (int64_t b = 0; b < batch; ++b) {
      Eigen::VectorXd xb(d);
      for (int64_t j = 0; j < d; ++j) xb[j] = x[b * d + j];
      const Eigen::VectorXd r = a_ * xb - fq_;
      cost[b] = r.squaredNorm() / norm;
      if (grad) {
        const Eigen::VectorXd g = 2 * a_.transpose() * r / norm;
        for (int64_t j = 0; j < d; ++j) grad[b * d + j] = static_cast<float>(g[j]);
      }
    }
  }
  double mismatch(const float* x) const {
    Eigen::VectorXd xb(a_.cols());
    for (int64_t j = 0; j < a_.cols(); ++j) xb[j] = x[j];
    return (a_ * xb - fq_).norm() / fq_.norm();
  }

 private:
  Eigen::MatrixXd a_;
  Eigen::VectorXd fq_;
};

}  // namespace

TEST_SUITE("nn_flow") {
  TEST_CASE("guidance with an exact Gaussian prior and a linear extractor: NDTM lands in the fiber at its conditional law") {
    const int64_t d = 16, f = 4, n = 2000;
    nk::Rng rng(21);
    std::vector<double> mu(d), s(d);
    for (int64_t j = 0; j < d; ++j) mu[j] = rng.normal() * 0.5, s[j] = 0.6;
    Eigen::MatrixXd a(f, d);
    for (int64_t i = 0; i < f; ++i)
      for (int64_t j = 0; j < d; ++j) a(i, j) = rng.normal() / std::sqrt(static_cast<double>(d));
    Eigen::VectorXd xq(d), mu_v(d), s2(d);
    for (int64_t j = 0; j < d; ++j) xq[j] = mu[j] + s[j] * rng.normal(), mu_v[j] = mu[j], s2[j] = s[j] * s[j];
    const Eigen::VectorXd fq = a * xq;
    const Eigen::MatrixXd S = s2.asDiagonal();
    const Eigen::MatrixXd gain = S * a.transpose() * (a * S * a.transpose()).inverse();
    const Eigen::VectorXd exact_mean = mu_v + gain * (fq - a * mu_v);
    const Eigen::MatrixXd exact_cov = S - gain * a * S;
    GaussianField prior(mu, s);
    LinearFiber fiber(a, fq);
    auto run = [&](nk::nn::Guide guide, std::vector<float>& x) {
      x.assign(static_cast<size_t>(n * d), 0.0f);
      nk::Rng noise(22);
      for (auto& v : x) v = static_cast<float>(noise.normal());
      nk::nn::GuideConfig config;
      config.guide = guide;
      // The last steps' control scale sets the precision: 0.01 reaches 1e-3 here
      // (the default 0.05 suits clipped images, 1.5e-3 here), and so does the
      // Adam rate: eta 0.03 gives 5e-4 here, 0.06 1.2e-3 (the images' default is 0.1)
      // (tuned on clipped Fashion-MNIST, where it reveals more of the fibers).
      config.kappa_min = 0.01;
      config.eta = 0.03;
      const nk::nn::GuideCounts counts = nk::nn::guided_sample(prior, fiber, x.data(), n, d, config);
      std::vector<double> mm(static_cast<size_t>(n));
      for (int64_t b = 0; b < n; ++b) mm[b] = fiber.mismatch(x.data() + b * d);
      std::nth_element(mm.begin(), mm.begin() + n / 2, mm.end());
      return std::make_pair(mm[n / 2], counts);
    };
    std::vector<float> xn, xd, x0;
    const auto [ndtm, counts] = run(nk::nn::Guide::ndtm, xn);
    const auto [dps, dps_counts] = run(nk::nn::Guide::dps, xd);
    const auto [none, none_counts] = run(nk::nn::Guide::none, x0);
    CHECK(counts.forwards == 40 * 5);
    CHECK(counts.backwards == 40 * 4);
    CHECK(dps_counts.backwards == 40);
    CHECK(none_counts.backwards == 0);
    Eigen::VectorXd mean = Eigen::VectorXd::Zero(d);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t j = 0; j < d; ++j) mean[j] += xn[b * d + j] / static_cast<double>(n);
    Eigen::MatrixXd cov = Eigen::MatrixXd::Zero(d, d);
    for (int64_t b = 0; b < n; ++b) {
      Eigen::VectorXd r(d);
      for (int64_t j = 0; j < d; ++j) r[j] = xn[b * d + j] - mean[j];
      cov += r * r.transpose() / static_cast<double>(n - 1);
    }
    const double mean_error = (mean - exact_mean).cwiseAbs().maxCoeff() / s2.cwiseSqrt().maxCoeff();
    const double cov_error = (cov - exact_cov).norm() / exact_cov.norm();
    MESSAGE("median relative mismatch: ndtm " << ndtm << ", dps " << dps << ", none " << none << "; ndtm mean error "
                                              << mean_error << " (in prior deviations), covariance error " << cov_error
                                              << " (relative Frobenius)");
    CHECK(ndtm <= 1e-3);
    CHECK(dps > ndtm);
    CHECK(none > 0.2);
    CHECK(mean_error < 0.1);
    CHECK(cov_error < 0.25);
  }
}
