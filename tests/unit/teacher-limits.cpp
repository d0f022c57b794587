// teacher-limits.cpp - Gauss-Hermite moments; each activation centred with
// unit variance and K' the derivative of K; the channel table against the
// linear channel's closed form and the small-SNR limit F = s K'(q); he3's
// universal jump at lambda = 4/3 with q = 1/2; teacher outputs and data rows.
#include <doctest/doctest.h>

#include <cmath>

#include "teacher-limits/activation.hpp"
#include "teacher-limits/model.hpp"
#include "teacher-limits/quadrature.hpp"
#include "teacher-limits/state_evolution.hpp"

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
}
