// speedscale-sim.cpp - the fast YDS equals the textbook one; OA equals YDS
// when everything is released at once; every algorithm's schedule passes the
// exact EDF check; the classic competitive bounds hold on every instance; the
// speed-prediction rule keeps its consistency and robustness bounds.
#include <doctest/doctest.h>

#include <cmath>

#include "nk/rng.hpp"
#include "speedscale-sim/speedscale.hpp"

using namespace ss;

namespace {

/// Random instances of several shapes: integer times with many ties, Poisson
/// arrivals with lognormal work, nested windows, identical windows.
Instance random_instance(nk::Rng& rng, int64_t n, int shape) {
  Instance inst{"t", {}, {}, {}};
  double t = 0;
  for (int64_t j = 0; j < n; ++j) {
    double r = 0, d = 0, w = 0;
    switch (shape) {
      case 0:  // small integers: ties everywhere
        r = static_cast<double>(rng.below(10));
        d = r + 1 + static_cast<double>(rng.below(6));
        w = 1 + static_cast<double>(rng.below(5));
        break;
      case 1:  // Poisson
        t += -std::log(1 - rng.uniform());
        r = t;
        w = std::exp(0.5 * rng.normal());
        d = r + w * std::exp(1 + 0.7 * rng.normal());
        break;
      case 2:  // nested around a centre
        r = -static_cast<double>(j + 1) * rng.uniform();
        d = static_cast<double>(j + 1) * rng.uniform() + 1e-3;
        w = rng.uniform() + 0.01;
        break;
      default:  // common release
        r = 0;
        d = 0.1 + 10 * rng.uniform();
        w = rng.uniform() + 0.01;
        break;
    }
    inst.release.push_back(r);
    inst.deadline.push_back(d);
    inst.work.push_back(w);
  }
  return inst;
}

double rel(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-300); }

}  // namespace

TEST_SUITE("speedscale-sim") {
  TEST_CASE("the fast YDS equals the textbook YDS, job by job") {
    nk::Rng rng(11);
    for (int trial = 0; trial < 3000; ++trial) {
      const Instance inst = random_instance(rng, 1 + static_cast<int64_t>(rng.below(40)), trial % 4);
      std::vector<double> naive_speed;
      const Profile naive = yds_naive(inst, &naive_speed);
      const std::vector<double> fast_speed = yds_job_speeds(inst);
      for (int64_t j = 0; j < inst.size(); ++j) REQUIRE(rel(fast_speed[j], naive_speed[j]) < 1e-9);
      const Profile fast = envelope(inst, fast_speed);
      REQUIRE(rel(energy(fast, 3), energy(naive, 3)) < 1e-9);
      const Check check = edf_check(inst, fast);
      REQUIRE(check.feasible);
    }
  }

  TEST_CASE("YDS on a hand-solved instance") {
    // [0,4) w=4 and [1,2) w=3: [1,2) runs at 3, the rest of job 0 at 4/3 on the other 3 units.
    Instance inst{"h", {0, 1}, {4, 2}, {4, 3}};
    const std::vector<double> s = yds_job_speeds(inst);
    CHECK(s[0] == doctest::Approx(4.0 / 3));
    CHECK(s[1] == doctest::Approx(3.0));
    CHECK(energy(yds(inst), 3) == doctest::Approx(27 + 3 * std::pow(4.0 / 3, 3)));
  }

  TEST_CASE("OA equals YDS when every job is released at time 0") {
    nk::Rng rng(12);
    for (int trial = 0; trial < 500; ++trial) {
      const Instance inst = random_instance(rng, 1 + static_cast<int64_t>(rng.below(60)), 3);
      REQUIRE(rel(energy(oa(inst), 3), energy(yds(inst), 3)) < 1e-9);
    }
  }

  TEST_CASE("every schedule is feasible and the classic bounds hold") {
    nk::Rng rng(13);
    for (double alpha : {2.0, 3.0}) {
      OnlineParams p;
      p.alpha = alpha;
      const double avr_bound = std::pow(2, alpha - 1) * std::pow(alpha, alpha);
      const double oa_bound = std::pow(alpha, alpha);
      for (int trial = 0; trial < 1500; ++trial) {
        const Instance inst = random_instance(rng, 1 + static_cast<int64_t>(rng.below(30)), trial % 4);
        const double opt = energy(yds(inst), alpha);
        const Prediction pred = oracle_prediction(inst, 0.5, "", rng(), alpha);
        for (const std::string& name : algorithm_names()) {
          const Profile s = run_algorithm(name, inst, &pred, p);
          const Check check = edf_check(inst, s);
          INFO(name << " trial " << trial << " alpha " << alpha);
          REQUIRE(check.feasible);
          const double ratio = energy(s, alpha) / opt;
          REQUIRE(ratio >= 1 - 1e-9);
          if (name == "avr") REQUIRE(ratio <= avr_bound);
          if (name == "oa") REQUIRE(ratio <= oa_bound);
        }
      }
    }
  }

  TEST_CASE("the EDF check finds a profile that is too slow") {
    Instance inst{"s", {0, 0}, {1, 2}, {1, 1}};
    Profile slow{{0, 2}, {0.9}};
    const Check check = edf_check(inst, slow);
    CHECK_FALSE(check.feasible);
    CHECK(check.late_jobs == 2);
    Profile enough{{0, 2}, {1.0}};
    CHECK(edf_check(inst, enough).feasible);
    // A gap before the first piece is idle time.
    Profile late_start{{0.5, 2}, {1.5}};
    CHECK(edf_check(inst, late_start).feasible == false);
  }

  TEST_CASE("a perfect speed prediction costs at most (1+eps)^alpha x OPT while the budget holds") {
    nk::Rng rng(14);
    int bound_free = 0;
    for (double eps : {0.0, 0.1}) {
      OnlineParams p;
      p.eps = eps;
      for (int trial = 0; trial < 600; ++trial) {
        const Instance inst = random_instance(rng, 1 + static_cast<int64_t>(rng.below(40)), trial % 4);
        const Profile opt_profile = yds(inst);
        const double opt = energy(opt_profile, 3);
        Profile s;
        const FollowStats stats = follow(
            inst, [&](double t) { return opt_profile.at(t); },
            [&](double t) {
              const auto it = std::upper_bound(opt_profile.t.begin(), opt_profile.t.end(), t);
              return it == opt_profile.t.end() ? INFINITY : *it;
            },
            p, s);
        REQUIRE(edf_check(inst, s).feasible);
        if (!stats.budget_bound) {
          ++bound_free;
          REQUIRE(energy(s, 3) <= std::pow(1 + eps, 3) * opt * (1 + 1e-9));
        }
        // With an unlimited budget the bound is unconditional.
        OnlineParams trusting = p;
        trusting.gamma = 1e300;
        const Prediction perfect{opt_profile, yds_job_speeds(inst), inst.work};
        const Profile always = run_algorithm("pred-dynamic", inst, &perfect, trusting);
        REQUIRE(energy(always, 3) <= std::pow(1 + eps, 3) * opt * (1 + 1e-9));
        const Profile by_jobs = run_algorithm("pred-jobspeed", inst, &perfect, trusting);
        REQUIRE(energy(by_jobs, 3) <= std::pow(1 + eps, 3) * opt * (1 + 1e-9));
      }
    }
    MESSAGE("runs where the trust budget never bound: " << bound_free << " of 2400");
    CHECK(bound_free > 100);  // the conditional bound above was exercised
  }

  TEST_CASE("garbage predictions stay within the proven robustness constant") {
    nk::Rng rng(15);
    OnlineParams p;
    const double a = p.alpha;
    const double robust = std::pow(2, a - 1) * (std::pow(2, a - 1) * (p.hard_factor * p.gamma + 1) + std::pow(a, a));
    double worst = 0;
    for (int trial = 0; trial < 900; ++trial) {
      const Instance inst = random_instance(rng, 1 + static_cast<int64_t>(rng.below(40)), trial % 4);
      const double opt = energy(yds(inst), a);
      for (const char* bad : {"zero", "x10", "random"}) {
        const Prediction pred = oracle_prediction(inst, 0, bad, rng(), a);
        for (const char* name : {"pred-dynamic", "pred-offline", "pred-jobspeed"}) {
          const Profile s = run_algorithm(name, inst, &pred, p);
          REQUIRE(edf_check(inst, s).feasible);
          const double ratio = energy(s, a) / opt;
          worst = std::max(worst, ratio);
          REQUIRE(ratio <= robust);
        }
      }
    }
    MESSAGE("worst ratio with garbage predictions: " << worst << " (proven bound " << robust << ")");
  }

  TEST_CASE("LAS with exact work predictions is optimal") {
    nk::Rng rng(16);
    OnlineParams p;
    for (int trial = 0; trial < 300; ++trial) {
      const Instance inst = random_instance(rng, 1 + static_cast<int64_t>(rng.below(30)), trial % 4);
      REQUIRE(rel(energy(las(inst, inst.work, p), 3), energy(yds(inst), 3)) < 1e-8);
    }
  }

  TEST_CASE("AVR is the sum of densities and a profile sum adds pointwise") {
    Instance inst{"a", {0, 1}, {2, 3}, {2, 4}};
    const Profile s = avr(inst);
    CHECK(s.at(0.5) == doctest::Approx(1.0));
    CHECK(s.at(1.5) == doctest::Approx(3.0));
    CHECK(s.at(2.5) == doctest::Approx(2.0));
    const Profile twice = add(s, s);
    CHECK(twice.at(1.5) == doctest::Approx(6.0));
    CHECK(relative_error(twice, s, 3) == doctest::Approx(1.0));
  }

  TEST_CASE("the fast YDS scales to 20000 jobs") {
    nk::Rng rng(17);
    const Instance inst = random_instance(rng, 20000, 1);
    const Profile s = yds(inst);
    CHECK(edf_check(inst, s).feasible);
  }
}
