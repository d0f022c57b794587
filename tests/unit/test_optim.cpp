// test_optim.cpp - Adam and AdamW.
#include <doctest/doctest.h>

#include "nk/optim.hpp"

TEST_SUITE("optim") {
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
