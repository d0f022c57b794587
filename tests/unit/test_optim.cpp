// test_optim.cpp - Adam and AdamW.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "nk/assignment.hpp"
#include "nk/rng.hpp"

#include "nk/nn/optim.hpp"

TEST_SUITE("optim") {
  TEST_CASE("max_assignment equals brute force over all permutations") {
    nk::Rng rng(4);
    for (int trial = 0; trial < 40; ++trial) {
      const int n = 1 + trial % 7;
      Eigen::MatrixXd s(n, n);
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) s(i, j) = trial % 3 == 0 ? double(rng.below(4)) : rng.normal();  // ties too
      std::vector<int> p(n);
      for (int i = 0; i < n; ++i) p[i] = i;
      double best = -1e300;
      do {
        double v = 0;
        for (int i = 0; i < n; ++i) v += s(i, p[i]);
        best = std::max(best, v);
      } while (std::next_permutation(p.begin(), p.end()));
      const std::vector<int> got = nk::max_assignment(s);
      std::vector<char> seen(n, 0);
      double v = 0;
      for (int i = 0; i < n; ++i) v += s(i, got[i]), seen[got[i]] = 1;
      for (char c : seen) CHECK(c == 1);  // a permutation
      CHECK(v == doctest::Approx(best).epsilon(1e-12));
    }
    CHECK_THROWS(nk::max_assignment(Eigen::MatrixXd::Zero(2, 3)));
    Eigen::MatrixXd bad = Eigen::MatrixXd::Zero(2, 2);
    bad(0, 1) = std::nan("");
    CHECK_THROWS(nk::max_assignment(bad));
    CHECK(nk::max_assignment(Eigen::MatrixXd(0, 0)).empty());
  }

  TEST_CASE("Adam minimises an ill-conditioned quadratic") {
    Eigen::VectorXd scale(3);
    scale << 1.0, 10.0, 100.0;
    Eigen::VectorXd target(3);
    target << 1.0, -2.0, 0.5;
    Eigen::VectorXd x = Eigen::VectorXd::Zero(3);
    nk::Adam adam(3, {.learning_rate = 0.05});
    for (int step = 0; step < 3000; ++step) {
      const Eigen::VectorXd grad = 2 * scale.cwiseProduct(x - target);
      adam.step(x, grad);
    }
    CHECK((x - target).norm() < 1e-3);
    CHECK(adam.steps() == 3000);
  }

  TEST_CASE("the first Adam step moves every coordinate by the learning rate") {
    Eigen::VectorXd x = Eigen::VectorXd::Zero(2);
    Eigen::VectorXd grad(2);
    grad << 1e-3, -5.0;
    nk::Adam adam(2, {.learning_rate = 0.1});
    adam.step(x, grad);
    CHECK(x(0) == doctest::Approx(-0.1).epsilon(1e-4));
    CHECK(x(1) == doctest::Approx(0.1).epsilon(1e-6));
  }

  TEST_CASE("AdamW decays weights even with a zero gradient") {
    Eigen::VectorXd x = Eigen::VectorXd::Constant(2, 1.0);
    nk::Adam adamw(2, {.learning_rate = 0.1, .weight_decay = 0.5});
    adamw.step(x, Eigen::VectorXd::Zero(2));
    CHECK(x(0) == doctest::Approx(0.95));
  }
}
