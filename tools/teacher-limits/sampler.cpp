// sampler.cpp - HMC with unit mass and a fixed number of leapfrog steps; the
// step is found by doubling/halving from the start and adapted by dual
// averaging (Hoffman and Gelman) during warm-up, then jittered by +-10% while
// sampling; statistics of the posterior mean by batch means.
#include "teacher-limits/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "nk/kernels/cuda_call.hpp"
#include "nk/progress.hpp"
#include "nk/timer.hpp"

namespace tl {

Posterior::Posterior(const Data& data, nk::DeviceKind device)
    : data_(data),
      committee_(data.teacher.activation, data.teacher.k(), data.teacher.d()),
      X_(to_float(data.train_X)) {
  if (device != nk::DeviceKind::cuda) return;
  const auto& gpu = nk::kernels::cuda_family<nk_cuda_committee>("hmc");
  const Activation act(data.teacher.activation);
  nk::kernels::cuda_call("hmc (committee on the GPU)", gpu.create, X_.data(), data.train_y.data(),
                         static_cast<long>(X_.rows()), static_cast<long>(X_.cols()),
                         static_cast<long>(data.teacher.k()), static_cast<int>(data.teacher.activation), act.scale(),
                         &gpu_);
}

Posterior::~Posterior() {
  if (!gpu_) return;
  char error[256];
  nk::kernels::cuda_family<nk_cuda_committee>("hmc").destroy(gpu_, error, sizeof error);
}

double Posterior::potential(const Matrix& W, Matrix* grad) {
  nk::Stopwatch clock;
  const double delta = data_.teacher.noise;
  double loss = 0;
  if (gpu_) {
    Matrix& gW = grad ? *grad : gpu_grad_;
    gW.resize(W.rows(), W.cols());
    nk::kernels::cuda_call("hmc (committee on the GPU)", nk::kernels::cuda_family<nk_cuda_committee>("hmc").half_sse,
                           gpu_, W.data(), data_.teacher.v.data(), &loss, gW.data());
  } else {
    loss = committee_.half_sse(X_.data(), data_.train_y.data(), X_.rows(), W, data_.teacher.v, grad, nullptr);
  }
  if (grad) {
    *grad = W + *grad / delta;
    ++gradients_;
  }
  seconds_ += clock.seconds();
  return 0.5 * W.squaredNorm() + loss / delta;
}

double corrected_error(const Matrix& means, const std::vector<double>& counts, const Vector& f_star, int64_t skip) {
  const int64_t B = means.rows();
  double total = 0;
  int64_t used = 0;
  Vector mean = Vector::Zero(means.cols());
  for (int64_t b = 0; b < B; ++b) {
    if (b == skip || counts[b] <= 0) continue;
    mean += counts[b] * means.row(b).transpose();
    total += counts[b];
    ++used;
  }
  mean /= total;
  Vector variance = Vector::Zero(means.cols());
  if (used >= 2) {
    for (int64_t b = 0; b < B; ++b) {
      if (b == skip || counts[b] <= 0) continue;
      const double w = counts[b] / total;
      variance += (w * w) * (means.row(b).transpose() - mean).array().square().matrix();
    }
    variance *= static_cast<double>(used) / static_cast<double>(used - 1);
  }
  return ((f_star - mean).array().square() - variance.array()).mean();
}

namespace {

// Dual averaging of log step towards the target acceptance (gamma 0.05, t0 10, kappa 0.75).
class DualAveraging {
 public:
  DualAveraging(double step, double target) : mu_(std::log(10 * step)), log_step_(std::log(step)), target_(target) {}
  double step() const { return std::exp(log_step_); }
  double final_step() const { return t_ > 0 ? std::exp(log_bar_) : step(); }
  void update(double acceptance) {
    ++t_;
    const double t = t_;
    h_bar_ = (1 - 1 / (t + 10)) * h_bar_ + (target_ - acceptance) / (t + 10);
    log_step_ = mu_ - std::sqrt(t) / 0.05 * h_bar_;
    const double eta = std::pow(t, -0.75);
    log_bar_ = eta * log_step_ + (1 - eta) * log_bar_;
  }

 private:
  double mu_, log_step_, log_bar_ = 0, h_bar_ = 0, target_;
  int64_t t_ = 0;
};

Matrix normal_matrix(int64_t rows, int64_t cols, nk::Rng& rng) {
  Matrix M(rows, cols);
  for (int64_t i = 0; i < M.size(); ++i) M.data()[i] = rng.normal();
  return M;
}

// One chain's state and its leapfrog trajectory under a diagonal metric that
// is constant along each row of W (one inverse mass per feature).
class Chain {
 public:
  Chain(Posterior& posterior, Matrix start, nk::Rng rng)
      : post_(posterior), W_(std::move(start)), inv_mass_(Vector::Ones(W_.rows())), rng_(rng) {
    U_ = post_.potential(W_, &grad_);
  }

  // One HMC transition with 'step'; returns the acceptance probability.
  double transition(double step, int leapfrog) {
    const Matrix p0 = momentum();
    const double accept = trajectory(p0, step, leapfrog);
    if (rng_.uniform() < accept) {
      std::swap(W_, Wn_);
      std::swap(grad_, gn_);
      U_ = Un_;
    }
    return accept;
  }

  // The doubling/halving search for a first step whose one-step acceptance crosses 1/2.
  double initial_step() {
    double step = 0.1;
    const Matrix p0 = momentum();
    double accept = trajectory(p0, step, 1);
    const double direction = accept > 0.5 ? 1 : -1;
    for (int it = 0; it < 60; ++it) {
      if (direction > 0 ? !(accept > 0.5) : accept > 0.5) break;
      step *= direction > 0 ? 2 : 0.5;
      accept = trajectory(p0, step, 1);
    }
    return step;
  }

  void set_inverse_mass(const Vector& inv_mass) { inv_mass_ = inv_mass; }
  const Matrix& W() const { return W_; }
  nk::Rng& rng() { return rng_; }

 private:
  // p ~ N(0, M): row r scaled by 1/sqrt(inv_mass_r).
  Matrix momentum() {
    Matrix p = normal_matrix(W_.rows(), W_.cols(), rng_);
    p.array().colwise() /= inv_mass_.array().sqrt();
    return p;
  }
  double kinetic(const Matrix& p) const { return 0.5 * (p.rowwise().squaredNorm().array() * inv_mass_.array()).sum(); }

  double trajectory(const Matrix& p0, double step, int leapfrog) {
    const double H0 = U_ + kinetic(p0);
    Wn_ = W_;
    gn_ = grad_;
    p_ = p0 - 0.5 * step * gn_;
    for (int l = 1; l <= leapfrog; ++l) {
      Wn_.array() += step * (p_.array().colwise() * inv_mass_.array());
      Un_ = post_.potential(Wn_, &gn_);
      if (!std::isfinite(Un_)) return 0;
      p_ -= (l < leapfrog ? step : 0.5 * step) * gn_;
    }
    const double H1 = Un_ + kinetic(p_);
    if (!std::isfinite(H1)) return 0;
    return std::min(1.0, std::exp(H0 - H1));
  }

  Posterior& post_;
  Matrix W_, grad_, Wn_, gn_, p_;
  Vector inv_mass_;
  double U_ = 0, Un_ = 0;
  nk::Rng rng_;
};

// The warm-up's metric windows (Stan's scheme): 15% step adaptation alone,
// then windows doubling in length whose samples give each row's variance, then
// 10% step adaptation under the last metric. Returns the windows' end points.
std::vector<int64_t> metric_windows(int64_t warmup) {
  std::vector<int64_t> ends;
  if (warmup < 40) return ends;
  const int64_t begin = warmup * 15 / 100, end = warmup - warmup / 10;
  int64_t start = begin, length = std::max<int64_t>(10, (end - begin) / 7);
  while (start < end) {
    int64_t stop = start + length;
    if (end - stop < 2 * length) stop = end;
    ends.push_back(stop);
    start = stop;
    length *= 2;
  }
  return ends;
}

// Per-row variance of W over a window: the mean over the row's entries of their variance (Welford).
class RowVariance {
 public:
  void reset(const Matrix& like) {
    count_ = 0;
    mean_ = Matrix::Zero(like.rows(), like.cols());
    m2_ = mean_;
  }
  void add(const Matrix& W) {
    ++count_;
    const Matrix delta = W - mean_;
    mean_ += delta / static_cast<double>(count_);
    m2_.array() += delta.array() * (W - mean_).array();
  }
  // Shrunk towards the median row (weight 5 samples), as Stan shrinks its estimate.
  Vector inverse_mass() const {
    const double n = static_cast<double>(count_);
    Vector var = m2_.rowwise().mean() / std::max(1.0, n - 1);
    std::vector<double> sorted(var.data(), var.data() + var.size());
    std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
    const double median = std::max(sorted[sorted.size() / 2], 1e-12);
    return ((n * var.array() + 5 * median) / (n + 5)).matrix();
  }
  int64_t count() const { return count_; }

 private:
  int64_t count_ = 0;
  Matrix mean_, m2_;
};

}  // namespace

HmcResult sample_posterior(const Data& data, const HmcConfig& config, const nk::Rng& rng, const std::string& label) {
  const Teacher& t = data.teacher;
  const int64_t m = data.test_X.rows(), k = t.k(), S = config.samples;
  const int64_t per_chain = std::max<int64_t>(1, std::min<int64_t>(config.batches, S));
  Posterior post(data, config.device);
  const MatrixF test_X = to_float(data.test_X);

  Matrix batch_means = Matrix::Zero(config.chains * per_chain, m);
  std::vector<double> counts(static_cast<size_t>(batch_means.rows()), 0.0);
  Vector prediction(m);
  HmcResult r;
  r.overlap.assign(static_cast<size_t>(k), 0.0);
  double gibbs = 0, acceptance = 0;
  nk::Progress progress(label, config.chains * (config.warmup + S));

  for (int c = 0; c < config.chains; ++c) {
    nk::Rng chain_rng = rng.split(static_cast<uint64_t>(c));
    Matrix start = config.informed ? t.W : normal_matrix(k, t.d(), chain_rng);
    Chain chain(post, std::move(start), chain_rng.split(1));
    auto adapt = std::make_unique<DualAveraging>(chain.initial_step(), config.target_acceptance);
    double step = adapt->step();
    const std::vector<int64_t> windows = metric_windows(config.warmup);
    const int64_t first_window = config.warmup * 15 / 100;
    size_t window = 0;
    RowVariance variance;
    variance.reset(t.W);
    for (int64_t it = 0; it < config.warmup + S; ++it) {
      progress.update(c * (config.warmup + S) + it);
      if (it < config.warmup) {
        adapt->update(chain.transition(adapt->step(), config.leapfrog));
        step = adapt->final_step();
        if (window < windows.size() && it >= first_window) {
          variance.add(chain.W());
          if (it + 1 == windows[window]) {
            chain.set_inverse_mass(variance.inverse_mass());
            adapt = std::make_unique<DualAveraging>(chain.initial_step(), config.target_acceptance);
            variance.reset(t.W);
            ++window;
          }
        }
        continue;
      }
      acceptance += chain.transition(step * (0.9 + 0.2 * chain.rng().uniform()), config.leapfrog);
      const int64_t s = it - config.warmup, b = c * per_chain + s * per_chain / S;
      post.committee().predict(test_X.data(), m, chain.W(), t.v, prediction.data());
      batch_means.row(b) += prediction.transpose();
      counts[b] += 1;
      gibbs += (data.test_f - prediction).squaredNorm() / static_cast<double>(m);
      const std::vector<double> q = matched_overlaps(t.W, chain.W());
      for (int64_t i = 0; i < k; ++i) r.overlap[i] += q[i];
    }
    r.step += step / config.chains;
  }
  progress.finish();

  const double total = static_cast<double>(config.chains) * static_cast<double>(S);
  for (int64_t b = 0; b < batch_means.rows(); ++b)
    if (counts[b] > 0) batch_means.row(b) /= counts[b];
  r.pred_test = Vector::Zero(m);
  for (int64_t b = 0; b < batch_means.rows(); ++b) r.pred_test += (counts[b] / total) * batch_means.row(b).transpose();
  r.eps_bo = corrected_error(batch_means, counts, data.test_f);
  // Jackknife over batches.
  const int64_t B = batch_means.rows();
  if (B >= 3) {
    std::vector<double> leave(static_cast<size_t>(B));
    double mean = 0;
    for (int64_t b = 0; b < B; ++b) mean += (leave[b] = corrected_error(batch_means, counts, data.test_f, b)) / B;
    double ss = 0;
    for (double e : leave) ss += (e - mean) * (e - mean);
    r.eps_bo_se = std::sqrt(ss * (B - 1) / B);
  } else {
    r.eps_bo_se = std::numeric_limits<double>::quiet_NaN();
  }
  r.eps_gibbs = gibbs / total;
  r.acceptance = acceptance / total;
  for (double& q : r.overlap) q /= total;
  r.gradients = post.gradients();
  r.seconds = post.gradient_seconds();
  return r;
}

}  // namespace tl
