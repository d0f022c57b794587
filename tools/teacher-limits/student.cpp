// student.cpp - Adam students through the committee's blocked gradient, and
// the random-features ridge baseline.
#include "teacher-limits/student.hpp"

#include <Eigen/Cholesky>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>

#include "nk/log.hpp"
#include "nk/nn/optim.hpp"
#include "teacher-limits/committee.hpp"

namespace tl {

int64_t validation_rows(int64_t n, double share) {
  if (n < 2) return 0;
  return std::clamp<int64_t>(std::llround(share * static_cast<double>(n)), 1, n - 1);
}

namespace {

struct Split {
  MatrixF train_X, val_X, test_X;
  Vector train_y, val_y;
};

Split split(const Data& data, double share) {
  const int64_t n = data.train_X.rows(), nv = validation_rows(n, share), nt = n - nv;
  Split s;
  s.train_X = data.train_X.topRows(nt).cast<float>();
  s.train_y = data.train_y.head(nt);
  s.val_X = data.train_X.bottomRows(nv).cast<float>();
  s.val_y = data.train_y.tail(nv);
  s.test_X = data.test_X.cast<float>();
  return s;
}

double mse(Committee& net, const MatrixF& X, const Vector& y, const Matrix& W, const Vector& a, Vector& out) {
  out.resize(X.rows());
  net.predict(X.data(), X.rows(), W, a, out.data());
  return (y - out).squaredNorm() / static_cast<double>(std::max<int64_t>(1, X.rows()));
}

// One run: Adam on the mean squared loss from a seeded start, keeping the
// parameters of least validation error (or of least training loss without a
// validation split), stopped after 'patience' epochs without improvement.
StudentFit run(const Data& data, const Split& s, int64_t width, double rate, const AdamTraining& t, nk::Rng rng) {
  const int64_t d = data.teacher.d(), nt = s.train_X.rows(), B = std::min(t.batch, nt);
  Committee net(data.teacher.activation, width, d);
  Matrix W(width, d);
  Vector a(width);
  for (int64_t i = 0; i < W.size(); ++i) W.data()[i] = rng.normal();
  for (int64_t j = 0; j < width; ++j) a[j] = rng.normal() / std::sqrt(static_cast<double>(width));
  if (t.teacher_readout) a = data.teacher.v.head(width);

  const int64_t P = width * d + width;
  Eigen::VectorXd params(P), grad(P);
  nk::AdamConfig config;
  config.learning_rate = rate;
  nk::Adam adam(P, config);
  Matrix gW(width, d);
  Vector ga(width), out;
  MatrixF Xb(B, d);
  Vector yb(B);
  std::vector<int64_t> order(static_cast<size_t>(nt));
  std::iota(order.begin(), order.end(), 0);

  StudentFit best;
  best.val_mse = std::numeric_limits<double>::infinity();
  const bool validate = s.val_X.rows() > 0;
  int64_t since = 0;
  for (int64_t epoch = 1; epoch <= t.epochs && since < t.patience; ++epoch) {
    // Cosine decay of the rate over the epoch budget.
    adam.set_learning_rate(rate * 0.5 *
                           (1 + std::cos(std::numbers::pi * static_cast<double>(epoch - 1) / static_cast<double>(t.epochs))));
    nk::shuffle(order, rng);
    double train_loss = 0;
    for (int64_t b = 0; b + B <= nt; b += B) {
      for (int64_t r = 0; r < B; ++r) {
        Xb.row(r) = s.train_X.row(order[b + r]);
        yb[r] = s.train_y[order[b + r]];
      }
      train_loss += net.half_sse(Xb.data(), yb.data(), B, W, a, &gW, &ga);
      params.head(width * d) = Eigen::Map<const Eigen::VectorXd>(W.data(), width * d);
      params.tail(width) = a;
      grad.head(width * d) = Eigen::Map<const Eigen::VectorXd>(gW.data(), width * d) / static_cast<double>(B);
      grad.tail(width) = ga / static_cast<double>(B);
      if (t.teacher_readout) grad.tail(width).setZero();
      adam.step(params, grad);
      W = Eigen::Map<const Matrix>(params.data(), width, d);
      a = params.tail(width);
    }
    const double score = validate ? mse(net, s.val_X, s.val_y, W, a, out) : 2 * train_loss / static_cast<double>(nt);
    spdlog::debug("adam: width {} lr {} epoch {}: training loss {:.5g}, validation mse {:.5g}", width, rate, epoch,
                  2 * train_loss / static_cast<double>(nt), score);
    if (!std::isfinite(score)) break;
    if (score < best.val_mse) {
      best.val_mse = score;
      best.W = W;
      best.a = a;
      best.epochs = epoch;
      since = 0;
    } else {
      ++since;
    }
  }
  if (best.W.size() == 0) {  // diverged in the first epoch
    best.W = W;
    best.a = a;
  }
  best.learning_rate = rate;
  return best;
}

}  // namespace

StudentFit train_student(const Data& data, int64_t width, const AdamTraining& t, const nk::Rng& rng) {
  const Split s = split(data, t.validation);
  Committee net(data.teacher.activation, width, data.teacher.d());
  StudentFit best;
  best.val_mse = std::numeric_limits<double>::infinity();
  // Test predictions of every restart, per learning rate: the ensemble is
  // the mean prediction of the restarts at the rate of the kept student.
  std::vector<Vector> mean_prediction(t.learning_rates.size(), Vector::Zero(s.test_X.rows()));
  size_t best_rate = 0;
  Vector out;
  for (size_t l = 0; l < t.learning_rates.size(); ++l)
    for (int r = 0; r < t.restarts; ++r) {
      StudentFit fit = run(data, s, width, t.learning_rates[l], t, rng.split(l * 1000 + static_cast<uint64_t>(r)));
      out.resize(s.test_X.rows());
      net.predict(s.test_X.data(), s.test_X.rows(), fit.W, fit.a, out.data());
      mean_prediction[l] += out / static_cast<double>(t.restarts);
      if (fit.val_mse < best.val_mse || best.W.size() == 0) best = std::move(fit), best_rate = l;
    }
  best.eps = mse(net, s.test_X, data.test_f, best.W, best.a, out);
  best.eps_ensemble = (data.test_f - mean_prediction[best_rate]).squaredNorm() / static_cast<double>(std::max<int64_t>(1, s.test_X.rows()));
  best.overlap = matched_overlaps(data.teacher.W, best.W);
  return best;
}

double random_features_ridge(const Data& data, int64_t features, double validation_share, const nk::Rng& rng) {
  const int64_t d = data.teacher.d(), n = data.train_X.rows(), nv = validation_rows(n, validation_share), nt = n - nv;
  const Activation act(data.teacher.activation);
  nk::Rng r = rng;
  Matrix F(features, d);
  for (int64_t i = 0; i < F.size(); ++i) F.data()[i] = r.normal();
  F /= std::sqrt(static_cast<double>(d));
  auto phi = [&](const Matrix& X, int64_t begin, int64_t rows) {
    Matrix P = X.middleRows(begin, rows) * F.transpose();
    for (int64_t i = 0; i < P.size(); ++i) P.data()[i] = act(P.data()[i]);
    return P;
  };
  // The Gram matrix in blocks of rows, so that n x features never exists at once.
  Matrix G = Matrix::Zero(features, features);
  Vector b = Vector::Zero(features);
  for (int64_t begin = 0; begin < nt; begin += 4096) {
    const int64_t rows = std::min<int64_t>(4096, nt - begin);
    const Matrix P = phi(data.train_X, begin, rows);
    G.noalias() += P.transpose() * P;
    b.noalias() += P.transpose() * data.train_y.segment(begin, rows);
  }
  const double scale = G.diagonal().mean();
  Vector best_c;
  double best_val = std::numeric_limits<double>::infinity();
  for (int e = -6; e <= 4; ++e) {
    const double lambda = std::pow(10.0, e);
    Matrix A = G;
    A.diagonal().array() += lambda * scale;
    const Vector c = A.ldlt().solve(b);
    const double val = nv > 0 ? (data.train_y.tail(nv) - phi(data.train_X, nt, nv) * c).squaredNorm() : 0;
    if (val < best_val || best_c.size() == 0) {
      best_val = val;
      best_c = c;
    }
  }
  const Matrix Pt = phi(data.test_X, 0, data.test_X.rows());
  return (data.test_f - Pt * best_c).squaredNorm() / static_cast<double>(data.test_X.rows());
}

}  // namespace tl
