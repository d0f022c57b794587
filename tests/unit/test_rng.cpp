// test_rng.cpp - seeded, splittable random streams.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "nk/rng.hpp"

TEST_SUITE("rng") {
  TEST_CASE("same seed, same stream; different seeds and splits differ") {
    nk::Rng a(7), b(7), c(8);
    for (int i = 0; i < 100; ++i) CHECK(a() == b());
    CHECK(nk::Rng(7)() != c());
    nk::Rng s1 = nk::Rng(7).split(1), s1_again = nk::Rng(7).split(1), s2 = nk::Rng(7).split(2);
    const uint64_t first = s1();
    CHECK(first == s1_again());
    CHECK(first != s2());
  }

  TEST_CASE("a split stream does not depend on the streams split before it") {
    nk::Rng parent(123);
    const uint64_t direct = parent.split(5)();
    nk::Rng other(123);
    for (uint64_t k = 0; k < 5; ++k) (void)other.split(k)();
    CHECK(other.split(5)() == direct);
  }

  TEST_CASE("uniform, normal and below have the right moments") {
    nk::Rng rng(2026);
    const int n = 200000;
    double sum = 0, sum_sq = 0, normal_sum = 0, normal_sq = 0;
    int64_t below_hits[3] = {0, 0, 0};
    for (int i = 0; i < n; ++i) {
      const double u = rng.uniform();
      REQUIRE(u >= 0.0);
      REQUIRE(u < 1.0);
      sum += u;
      sum_sq += u * u;
      const double z = rng.normal();
      normal_sum += z;
      normal_sq += z * z;
      ++below_hits[rng.below(3)];
    }
    CHECK(sum / n == doctest::Approx(0.5).epsilon(0.01));
    CHECK(sum_sq / n - std::pow(sum / n, 2) == doctest::Approx(1.0 / 12).epsilon(0.02));
    CHECK(std::abs(normal_sum / n) < 0.01);
    CHECK(normal_sq / n == doctest::Approx(1.0).epsilon(0.02));
    for (int64_t hits : below_hits) CHECK(hits == doctest::Approx(n / 3.0).epsilon(0.02));
    std::uniform_int_distribution<int> dice(1, 6);
    const int roll = dice(rng);
    CHECK(roll >= 1);
    CHECK(roll <= 6);
  }
}
