// teacher-limits.cpp - Gauss-Hermite moments; each activation centred with
// unit variance and K' the derivative of K; the channel table against the
// linear channel's closed form and the small-SNR limit F = s K'(q); he3's
// universal jump at lambda = 4/3 with q = 1/2; teacher outputs and data rows;
// the committee's float32 loss and gradients against double loops checked by
// finite differences, for every activation and any thread count; Hungarian
// overlaps against brute force; the batch-means error correction.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <omp.h>

#include "teacher-limits/activation.hpp"
#include "teacher-limits/committee.hpp"
#include "teacher-limits/model.hpp"
#include "teacher-limits/quadrature.hpp"
#include "teacher-limits/sampler.hpp"
#include "teacher-limits/state_evolution.hpp"
#include "test_support.hpp"

using namespace tl;

TEST_SUITE("teacher-limits") {
  TEST_CASE("Gauss-Hermite integrates Gaussian moments exactly") {
    const Quadrature q = gauss_hermite(10);
    double m[5] = {0, 0, 0, 0, 0};
    for (int i = 0; i < q.size(); ++i)
      for (int p = 0; p < 5; ++p) m[p] += q.w[i] * std::pow(q.x[i], 2 * p);
    CHECK(m[0] == doctest::Approx(1).epsilon(1e-13));
    CHECK(m[1] == doctest::Approx(1).epsilon(1e-12));
    CHECK(m[2] == doctest::Approx(3).epsilon(1e-12));
    CHECK(m[3] == doctest::Approx(15).epsilon(1e-11));
    CHECK(m[4] == doctest::Approx(105).epsilon(1e-10));
  }

  TEST_CASE("activations are centred with unit variance; K(1) = 1, K' is dK/dq") {
    const Quadrature q = gauss_hermite(200);
    for (Act a : {Act::tanh, Act::relu_centered, Act::he2, Act::he3, Act::linear}) {
      CAPTURE(activation_name(a));
      const Activation s(a);
      double mean = 0, second = 0, mu1 = 0;
      for (int i = 0; i < q.size(); ++i) {
        mean += q.w[i] * s(q.x[i]);
        second += q.w[i] * s(q.x[i]) * s(q.x[i]);
        mu1 += q.w[i] * s(q.x[i]) * q.x[i];
      }
      CHECK(std::abs(mean) < 5e-3);  // relu's kink limits Gauss-Hermite
      CHECK(second == doctest::Approx(1).epsilon(2e-3));
      CHECK(mu1 == doctest::Approx(s.mu1()).epsilon(2e-3));
      CHECK(s.kernel(1) == doctest::Approx(1).epsilon(1e-6));
      CHECK(std::abs(s.kernel(0)) < 1e-9);
      CHECK(s.kernel_derivative(0) == doctest::Approx(s.mu1() * s.mu1()).epsilon(1e-6));
      for (double x : {0.2, 0.5, 0.8}) {
        const double h = 1e-5, numeric = (s.kernel(x + h) - s.kernel(x - h)) / (2 * h);
        CHECK(s.kernel_derivative(x) == doctest::Approx(numeric).epsilon(1e-5));
      }
    }
  }

  TEST_CASE("the channel table matches the linear channel's closed form s / (1 + s (1 - q))") {
    TeacherSpec spec;
    spec.d = 16;
    spec.v = {1.0};
    spec.activation = Act::linear;
    spec.noise = 0.05;  // the table reaches s = 21
    const StateEvolution se(spec);
    for (double s : {0.002, 0.1, 1.0, 10.0})
      for (double q : {0.0, 0.3, 0.7, 0.99}) {
        CAPTURE(s);
        CAPTURE(q);
        CHECK(se.channel(q, s) == doctest::Approx(s / (1 + s * (1 - q))).epsilon(2e-3));
      }
  }

  TEST_CASE("at small SNR the channel is F = s K'(q), and he3 jumps at lambda = 4/3 to q = 1/2") {
    TeacherSpec spec;
    spec.d = 16;
    spec.v = {1.0};
    spec.activation = Act::he3;
    spec.noise = 200;  // s = 0.005
    const StateEvolution se(spec);
    for (double q : {0.3, 0.6, 0.9}) CHECK(se.channel(q, 0.005) == doctest::Approx(0.005 * 3 * q * q).epsilon(0.03));
    const double s = 1e-4;  // the universal regime
    const FixedPoints below = se.fixed_points(1.3 / s, s), above = se.fixed_points(1.34 / s, s);
    CHECK(below.count == 1);
    CHECK(below.high == 0);
    CHECK(above.count == 2);
    CHECK(above.low == 0);
    CHECK(above.high == doctest::Approx(0.5 + 0.5 * std::sqrt(1 - 4 / (3 * 1.34))).epsilon(1e-3));
    CHECK(above.best == 0);  // metastable: the free entropy still prefers q = 0
    const FixedPoints far = se.fixed_points(3.0 / s, s);
    CHECK(far.best == far.high);
  }

  TEST_CASE("teacher outputs and nested data rows") {
    const Teacher t = make_teacher(8, 5, 1.0, Act::tanh, 0.1, 7);
    const Data a = make_data(t, 20, 4, 11), b = make_data(t, 30, 4, 11);
    CHECK(a.train_X == b.train_X.topRows(20));
    CHECK(a.train_y == b.train_y.head(20));
    const Activation s(Act::tanh);
    double f = 0;
    for (int i = 0; i < 5; ++i) f += t.v[i] * s(a.test_X.row(2).dot(t.W.row(i)) / std::sqrt(8.0));
    CHECK(a.test_f[2] == doctest::Approx(f).epsilon(1e-12));
    CHECK(t.v.norm() == doctest::Approx(1).epsilon(1e-12));
  }

  // The committee's loss in double by plain loops, and its analytic gradients.
  struct Reference {
    double loss;
    Matrix gW;
    Vector ga;
  };
  Reference reference_loss(const Matrix& X, const Vector& y, const Matrix& W, const Vector& a, Act act) {
    const Activation s(act);
    const double rd = 1 / std::sqrt(static_cast<double>(X.cols()));
    Reference r{0, Matrix::Zero(W.rows(), W.cols()), Vector::Zero(a.size())};
    for (int64_t mu = 0; mu < X.rows(); ++mu) {
      double f = 0;
      std::vector<double> z(static_cast<size_t>(W.rows()));
      for (int64_t j = 0; j < W.rows(); ++j) {
        z[j] = X.row(mu).dot(W.row(j)) * rd;
        f += a[j] * s(z[j]);
      }
      const double res = y[mu] - f;
      r.loss += 0.5 * res * res;
      for (int64_t j = 0; j < W.rows(); ++j) {
        r.ga[j] -= res * s(z[j]);
        r.gW.row(j) -= res * a[j] * s.derivative(z[j]) * rd * X.row(mu);
      }
    }
    return r;
  }

  TEST_CASE("the committee's float32 loss and gradients equal double loops checked by finite differences") {
    nk::Rng rng(21);
    const int64_t n = 333, d = 7, k = 5;  // 333 rows: uneven chunks and a partial block
    Matrix X(n, d), W(k, d);
    Vector y(n), a(k);
    for (int64_t i = 0; i < X.size(); ++i) X.data()[i] = rng.normal();
    for (int64_t i = 0; i < W.size(); ++i) W.data()[i] = rng.normal();
    for (int64_t i = 0; i < n; ++i) y[i] = rng.normal();
    for (int64_t i = 0; i < k; ++i) a[i] = rng.normal();
    const MatrixF Xf = to_float(X);
    for (Act act : {Act::tanh, Act::relu_centered, Act::he2, Act::he3, Act::linear}) {
      CAPTURE(activation_name(act));
      const Reference ref = reference_loss(X, y, W, a, act);
      // The analytic double gradients against central differences of the double loss.
      const double h = 1e-6;
      for (int64_t e : {int64_t{0}, int64_t{13}, int64_t{34}}) {
        Matrix Wp = W, Wm = W;
        Wp.data()[e] += h, Wm.data()[e] -= h;
        const double numeric = (reference_loss(X, y, Wp, a, act).loss - reference_loss(X, y, Wm, a, act).loss) / (2 * h);
        CHECK(ref.gW.data()[e] == doctest::Approx(numeric).epsilon(1e-5).scale(1));
      }
      for (int64_t j : {int64_t{0}, int64_t{4}}) {
        Vector ap = a, am = a;
        ap[j] += h, am[j] -= h;
        const double numeric = (reference_loss(X, y, W, ap, act).loss - reference_loss(X, y, W, am, act).loss) / (2 * h);
        CHECK(ref.ga[j] == doctest::Approx(numeric).epsilon(1e-5).scale(1));
      }
      // The float32 kernel against the double loops.
      Committee net(act, k, d);
      Matrix gW;
      Vector ga;
      const double loss = net.half_sse(Xf.data(), y.data(), n, W, a, &gW, &ga);
      CHECK(loss == doctest::Approx(ref.loss).epsilon(1e-4));
      const double scale = ref.gW.cwiseAbs().maxCoeff();
      CHECK((gW - ref.gW).cwiseAbs().maxCoeff() < 1e-4 * scale);
      CHECK((ga - ref.ga).cwiseAbs().maxCoeff() < 1e-4 * ref.ga.cwiseAbs().maxCoeff());
      // Outputs, and the same bits with one thread as with two.
      Vector out(n);
      net.predict(Xf.data(), n, W, a, out.data());
      const Activation sig(act);
      for (int64_t mu : {int64_t{0}, int64_t{17}, int64_t{332}}) {
        double f = 0;
        for (int64_t j = 0; j < k; ++j) f += a[j] * sig(X.row(mu).dot(W.row(j)) / std::sqrt(static_cast<double>(d)));
        CHECK(out[mu] == doctest::Approx(f).epsilon(1e-4).scale(1));
      }
      const int threads = omp_get_max_threads();
      omp_set_num_threads(1);
      Matrix gW1;
      const double loss1 = net.half_sse(Xf.data(), y.data(), n, W, a, &gW1, nullptr);
      omp_set_num_threads(std::max(2, threads));
      Matrix gW2;
      const double loss2 = net.half_sse(Xf.data(), y.data(), n, W, a, &gW2, nullptr);
      omp_set_num_threads(threads);
      CHECK(loss1 == loss2);
      CHECK(gW1 == gW2);
    }
  }

  TEST_CASE("the potential's gradient is W + dL/dW / Delta (finite differences)") {
    const Teacher t = make_teacher(6, 3, 1.0, Act::he3, 0.3, 5);
    const Data data = make_data(t, 50, 4, 6);
    Posterior post(data);
    Matrix W = t.W * 0.7, grad;
    post.potential(W, &grad);
    const double h = 1e-3;
    for (int64_t e : {int64_t{1}, int64_t{8}, int64_t{17}}) {
      Matrix Wp = W, Wm = W;
      Wp.data()[e] += h, Wm.data()[e] -= h;
      const double numeric = (post.potential(Wp, nullptr) - post.potential(Wm, nullptr)) / (2 * h);
      CHECK(grad.data()[e] == doctest::Approx(numeric).epsilon(2e-3));
    }
  }

  TEST_CASE("Hungarian overlaps equal the best permutation found by brute force") {
    nk::Rng rng(4);
    for (int64_t width : {int64_t{3}, int64_t{5}, int64_t{7}}) {
      CAPTURE(width);
      Matrix T(5, 4), S(width, 4);
      for (int64_t i = 0; i < T.size(); ++i) T.data()[i] = rng.normal();
      for (int64_t i = 0; i < S.size(); ++i) S.data()[i] = rng.normal();
      const std::vector<double> q = matched_overlaps(T, S);
      // Brute force over every injection of the 5 teacher rows into max(5, width) columns (extra ones score 0).
      std::vector<int> cols(static_cast<size_t>(std::max<int64_t>(5, width)));
      std::iota(cols.begin(), cols.end(), 0);
      double best = -1;
      do {
        double total = 0;
        for (int i = 0; i < 5; ++i)
          if (cols[i] < width)
            total += std::abs(T.row(i).dot(S.row(cols[i]))) / (T.row(i).norm() * S.row(cols[i]).norm());
        best = std::max(best, total);
      } while (std::next_permutation(cols.begin(), cols.end()));
      CHECK(std::accumulate(q.begin(), q.end(), 0.0) == doctest::Approx(best).epsilon(1e-12));
      CHECK(std::count(q.begin(), q.end(), 0.0) == std::max<int64_t>(0, 5 - width));
    }
  }

  TEST_CASE("the batch-means correction subtracts the variance of the mean") {
    // Two batches a, b at one test point, f* = 0: (a+b)^2/4 - (a-b)^2/4 = a b.
    Matrix means(2, 1);
    means << 3.0, 5.0;
    CHECK(corrected_error(means, {1, 1}, Vector::Zero(1)) == doctest::Approx(15.0));
    CHECK(corrected_error(means, {1, 1}, Vector::Zero(1), 0) == doctest::Approx(25.0));  // one batch: no correction
    // Unbiased: batches of an unbiased noisy estimate of f = 1 give (f* - f)^2 = 1 on average.
    nk::Rng rng(9);
    double total = 0;
    for (int rep = 0; rep < 2000; ++rep) {
      Matrix m(8, 3);
      for (int64_t i = 0; i < m.size(); ++i) m.data()[i] = 1 + 0.7 * rng.normal();
      total += corrected_error(m, std::vector<double>(8, 10.0), Vector::Zero(3));
    }
    CHECK(total / 2000 == doctest::Approx(1.0).epsilon(0.01));
  }

  TEST_CASE("the CUDA committee matches its CPU twin (d = 256; where a GPU exists)") {
    if (!nk::test::cuda_or_skip()) return;
    for (Act act : {Act::tanh, Act::relu_centered, Act::he2, Act::he3, Act::linear}) {
      CAPTURE(activation_name(act));
      const Teacher t = make_teacher(256, 64, 1.0, act, 0.1, 3);
      const Data data = make_data(t, 3000, 4, 8);
      Posterior cpu(data, nk::DeviceKind::cpu), gpu(data, nk::DeviceKind::cuda);
      const Matrix W = t.W * 0.9;
      Matrix g_cpu, g_gpu;
      const double u_cpu = cpu.potential(W, &g_cpu), u_gpu = gpu.potential(W, &g_gpu);
      CHECK(u_gpu == doctest::Approx(u_cpu).epsilon(1e-5));
      CHECK((g_gpu - g_cpu).cwiseAbs().maxCoeff() < 1e-4 * g_cpu.cwiseAbs().maxCoeff());
      CHECK(gpu.potential(W, nullptr) == u_gpu);  // a fixed summation order: the same bits again
    }
  }
}
