// aldrift.cpp - the independence-MH kernel against its dense N x N matrix
// (ties, zero-probability and never-proposed strings included); pi is
// invariant and the law of a stored sample approaches pi as the chains
// lengthen; simulated chains against the propagated law; model densities,
// sampling and the weighted Markov fit against direct counts; the result does
// not depend on the thread count. In R^n: the KDE integrates to 1, the
// Gaussian density and sampler agree with the closed form, SOO's first
// splits on a 1-D function, the envelopes hold, the log fit.
#include <doctest/doctest.h>

#include <Eigen/LU>
#include <cmath>
#include <map>
#include <omp.h>

#include "aldrift/continuous.hpp"
#include "aldrift/global.hpp"
#include "aldrift/imh.hpp"
#include "aldrift/model.hpp"
#include "aldrift/problem.hpp"

using namespace ald;

namespace {

/// m points in R^2: N(0, 1) and N(1, 0.5^2) coordinates, row-major.
std::vector<double> two_normals(nk::Rng& rng, int m) {
  std::vector<double> x;
  for (int j = 0; j < m; ++j) {
    x.push_back(rng.normal());
    x.push_back(0.5 * rng.normal() + 1);
  }
  return x;
}

/// The midpoint rule of a density over [x0, x1] x [y0, y1] with step h.
double mass_2d(const Density& q, double x0, double x1, double y0, double y1, double h) {
  double mass = 0;
  for (double x = x0; x < x1; x += h)
    for (double y = y0; y < y1; y += h) {
      const double p[2] = {x + h / 2, y + h / 2};
      mass += std::exp(q.log_density(p)) * h * h;
    }
  return mass;
}

std::vector<double> normalised_log(std::vector<double> p) {
  double z = 0;
  for (double v : p) z += v;
  for (double& v : p) v = v > 0 ? std::log(v / z) : -INFINITY;
  return p;
}

/// mu P with P built as a dense matrix from its definition.
std::vector<double> dense_step(const std::vector<double>& q, const std::vector<double>& pi, const std::vector<double>& mu) {
  const size_t N = q.size();
  std::vector<double> out(N, 0.0);
  for (size_t x = 0; x < N; ++x) {
    double stay = 1.0;
    for (size_t y = 0; y < N; ++y) {
      if (y == x) continue;
      double a = 0;
      if (pi[y] > 0 || pi[x] > 0) {
        if (pi[x] <= 0) a = 1;  // leaving a zero-target state: always accepted
        else if (q[y] > 0) a = std::min(1.0, pi[y] * q[x] / (pi[x] * q[y]));
      } else {
        a = 1;
      }
      out[y] += mu[x] * q[y] * a;
      stay -= q[y] * a;
    }
    out[x] += mu[x] * stay;
  }
  return out;
}

Problem small_problem(int A, int n, uint64_t seed) {
  Problem p;
  p.A = A;
  p.n = n;
  p.N = count_states(A, n);
  nk::Rng rng(seed);
  p.init.resize(A);
  p.trans.resize(A * A);
  auto fill = [&](double* row) {
    double z = 0;
    for (int a = 0; a < A; ++a) z += row[a] = 0.2 + rng.uniform();
    for (int a = 0; a < A; ++a) row[a] /= z;
  };
  fill(p.init.data());
  for (int a = 0; a < A; ++a) fill(&p.trans[a * A]);
  p.cost.resize(p.N);
  for (auto& c : p.cost) c = std::floor(rng.uniform() * 4);  // integer costs: ties in w
  return p;
}

}  // namespace

TEST_SUITE("aldrift") {
  TEST_CASE("the sorted kernel step equals the dense matrix, with ties and zeros") {
    nk::Rng rng(5);
    const size_t N = 40;
    std::vector<double> q(N), pi(N), mu(N);
    for (size_t s = 0; s < N; ++s) {
      q[s] = 1 + std::floor(rng.uniform() * 3);
      pi[s] = q[s] * (1 + std::floor(rng.uniform() * 3));  // w in {1, 2, 3}: many ties
      mu[s] = rng.uniform();
    }
    pi[3] = 0;  // never a target
    q[7] = 0;   // never proposed (w = infinity)
    mu[7] = 0;
    const auto lq = normalised_log(q), lpi = normalised_log(pi), lmu = normalised_log(mu);
    const IndependenceKernel P(lq, lpi);
    const auto qn = exp_all(lq), pin = exp_all(lpi), mun = exp_all(lmu);
    const auto fast = P.step(mun), dense = dense_step(qn, pin, mun);
    for (size_t s = 0; s < N; ++s) CHECK(fast[s] == doctest::Approx(dense[s]).epsilon(1e-12));
    double mass = 0;
    for (double v : fast) mass += v;
    CHECK(mass == doctest::Approx(1.0).epsilon(1e-12));
    double cov = 0;
    for (size_t s = 0; s < N; ++s)
      if (pin[s] > 0 && qn[s] > 0) cov = std::max(cov, pin[s] / qn[s]);
    CHECK(P.coverage() == INFINITY);  // state 7 has pi > 0 and q = 0
    (void)cov;
  }

  TEST_CASE("pi is invariant and the stored-sample law approaches pi with more steps") {
    const Problem p = small_problem(3, 5, 11);
    const auto lprior = Model::from_prior(p).log_prob_all();
    const auto lpi = log_target(p, lprior, 1.5);
    const IndependenceKernel P(lprior, lpi);  // the prior as proposal
    const auto pi = exp_all(lpi);
    const auto next = P.step(pi);
    for (size_t s = 0; s < pi.size(); ++s) CHECK(next[s] == doctest::Approx(pi[s]).epsilon(1e-12));
    double last = 1.0;
    for (int steps : {1, 2, 4, 8, 16, 32}) {
      const double tv = total_variation(sample_law(P, P.q(), steps, 0), pi);
      CHECK(tv < last);
      last = tv;
    }
    CHECK(last < 0.05);
    // Geometric rate 1 - 1/M bounds one step's TV: ||q P^t - pi|| <= (1 - 1/M)^t.
    const double M = P.coverage();
    CHECK(total_variation(sample_law(P, P.q(), 6, 5), pi) <= std::pow(1 - 1 / M, 6) + 1e-12);
  }

  TEST_CASE("simulated chains follow the propagated law") {
    const Problem p = small_problem(2, 4, 3);
    const auto lprior = Model::from_prior(p).log_prob_all();
    const double T = 2.0;
    const Model q = Model::from_prior(p);
    const int steps = 3, burn = 1;
    const ChainRun run = run_chains(p, q, T, 200000, steps, burn, nk::Rng(9));
    CHECK(run.evaluations == 200000 * (steps + 1));
    std::vector<double> freq(p.N, 0.0);
    const size_t m = run.samples.size() / p.n;
    for (size_t i = 0; i < m; ++i) freq[encode(&run.samples[i * p.n], p.A, p.n)] += 1.0 / m;
    const IndependenceKernel P(q.log_prob_all(), log_target(p, lprior, T));
    const auto law = sample_law(P, P.q(), steps, burn);
    for (int64_t s = 0; s < p.N; ++s) CHECK(std::abs(freq[s] - law[s]) < 0.003);
  }

  TEST_CASE("model densities, sampling and log_prob_all agree") {
    const Problem p = small_problem(3, 4, 21);
    for (Learner kind : {Learner::markov, Learner::markov_h, Learner::table}) {
      // A fitted model of each family from prior draws.
      const Model prior = Model::from_prior(p);
      nk::Rng rng(4);
      std::vector<int> draws(3000 * p.n);
      for (int i = 0; i < 3000; ++i) prior.sample(rng, &draws[i * p.n]);
      const Model m = fit(kind, p.A, p.n, draws, {}, 0.5);
      const auto all = m.log_prob_all();
      double z = 0;
      std::vector<int> s(p.n);
      for (int64_t i = 0; i < p.N; ++i) {
        decode(i, p.A, p.n, s.data());
        CHECK(m.log_prob(s.data()) == doctest::Approx(all[i]).epsilon(1e-12));
        z += std::exp(all[i]);
      }
      CHECK(z == doctest::Approx(1.0).epsilon(1e-12));
      std::vector<double> freq(p.N, 0.0);
      const int draws_n = 200000;
      for (int i = 0; i < draws_n; ++i) {
        m.sample(rng, s.data());
        freq[encode(s.data(), p.A, p.n)] += 1.0 / draws_n;
      }
      CHECK(total_variation(freq, exp_all(all)) < 0.03);
    }
  }

  TEST_CASE("the weighted markov fit is add-alpha normalised counts") {
    // Strings of length 3 over {0,1}: 010 (weight 2), 011 (weight 1), 110 (weight 1).
    const std::vector<int> s{0, 1, 0, 0, 1, 1, 1, 1, 0};
    const std::vector<double> w{2, 1, 1};
    const double alpha = 0.5;
    const Model m = fit(Learner::markov, 2, 3, s, w, alpha);
    // Weights scale to sum to 3: 1.5, 0.75, 0.75.
    CHECK(m.init[0] == doctest::Approx((2.25 + alpha) / (3 + 2 * alpha)));
    // Position 0 -> 1 from symbol 0: 0->1 twice (2.25), 0->0 never.
    CHECK(m.row(0, 0)[1] == doctest::Approx((2.25 + alpha) / (2.25 + 2 * alpha)));
    // Position 1 -> 2 from symbol 1: 1->0 with 1.5 + 0.75, 1->1 with 0.75.
    CHECK(m.row(1, 1)[0] == doctest::Approx((2.25 + alpha) / (3 + 2 * alpha)));
    const Model h = fit(Learner::markov_h, 2, 3, s, {}, 0.0);
    // Homogeneous counts over both positions: from 1: 1->0 twice, 1->1 twice.
    CHECK(h.row(0, 1)[0] == doctest::Approx(0.5));
    CHECK(h.row(0, 0)[1] == doctest::Approx(1.0));
  }

  TEST_CASE("chains give the same samples with any thread count") {
    const Problem p = small_problem(2, 6, 8);
    const Model q = Model::from_prior(p);
    const int before = omp_get_max_threads();
    omp_set_num_threads(1);
    const ChainRun one = run_chains(p, q, 3.0, 257, 5, 2, nk::Rng(1));
    omp_set_num_threads(2);
    const ChainRun two = run_chains(p, q, 3.0, 257, 5, 2, nk::Rng(1));
    omp_set_num_threads(before);
    CHECK(one.samples == two.samples);
    CHECK(one.acceptance == two.acceptance);
  }

  TEST_CASE("the over-smoothed KDE integrates to 1 (2-D quadrature)") {
    nk::Rng rng(2);
    const std::vector<double> centres = two_normals(rng, 30);
    Objective f = make_objective(Fn::rastrigin, 2, 1.0, {0, 0});
    const auto q = fit_density(ContinuousLearner::kde, centres, 2, 1.0, f, LearnerOptions{});
    CHECK(mass_2d(*q, -8, 8, -6, 8, 0.02) == doctest::Approx(1.0).epsilon(1e-4));
  }

  TEST_CASE("the product learner: one KDE per coordinate, basin-capped with wide kernels; integrates to 1, samples follow it") {
    nk::Rng rng(4);
    const std::vector<double> centres = two_normals(rng, 30);
    Objective f = make_objective(Fn::rastrigin, 2, 10.0, {0, 0});
    LearnerOptions o;
    o.wide_share = 0.2;
    const double T = 3.0;
    const auto q = fit_density(ContinuousLearner::product, centres, 2, T, f, o);
    const auto* pk = dynamic_cast<const ProductKdeDensity*>(q.get());
    REQUIRE(pk != nullptr);
    // The narrow kernels are capped at the upper envelope's basin at T.
    const double basin = std::sqrt((1 + o.eta) / (1 / (kPriorSd * kPriorSd) + 2 * T * f.c2));
    CHECK(pk->bandwidth()[0] == doctest::Approx(basin));
    // The density by hand at one point: the product over coordinates of the two-scale mixtures.
    Eigen::VectorXd mean;
    Eigen::MatrixXd cov;
    weighted_moments(centres, 2, {}, mean, cov);
    const double x[2] = {0.4, 0.9};
    double expected = 0;
    for (int i = 0; i < 2; ++i) {
      const double wide = o.bandwidth * 1.06 * std::pow(30.0, -0.2) * std::sqrt(cov(i, i));
      const double narrow = std::min(wide, basin);
      double p = 0;
      for (int j = 0; j < 30; ++j) {
        const double u = (x[i] - centres[2 * j + i]) / narrow, v = (x[i] - centres[2 * j + i]) / wide;
        p += ((1 - o.wide_share) * std::exp(-0.5 * u * u) / narrow + o.wide_share * std::exp(-0.5 * v * v) / wide) /
             (30 * std::sqrt(2 * M_PI));
      }
      expected += std::log(p);
    }
    CHECK(q->log_density(x) == doctest::Approx(expected).epsilon(1e-10));
    // Mass 1 by quadrature: the midpoint rule is spectrally accurate for Gaussians, so a step of
    // about one narrow kernel's sd (0.035) is enough.
    CHECK(mass_2d(*q, -6, 6, -4, 6, 0.03) == doctest::Approx(1.0).epsilon(1e-4));
    // Draws: each coordinate's mean is the centres' mean, its variance the centres' plus the kernels'.
    std::vector<double> rows(2 * 200000);
    for (int i = 0; i < 200000; ++i) q->sample(rng, &rows[2 * i]);
    Eigen::VectorXd m;
    Eigen::MatrixXd c;
    weighted_moments(rows, 2, {}, m, c);
    for (int i = 0; i < 2; ++i) {
      const double wide = o.bandwidth * 1.06 * std::pow(30.0, -0.2) * std::sqrt(cov(i, i));
      const double narrow = std::min(wide, basin);
      const double centres_var = cov(i, i);  // weighted_moments divides by m
      CHECK(m(i) == doctest::Approx(mean(i)).epsilon(0.02));
      CHECK(c(i, i) == doctest::Approx(centres_var + (1 - o.wide_share) * narrow * narrow + o.wide_share * wide * wide)
                           .epsilon(0.02));
    }
    CHECK(std::fabs(c(0, 1)) < 0.02);  // coordinates drawn independently
    CHECK_THROWS(parse_continuous_learner("products"));
  }

  TEST_CASE("Gaussian density: closed form, and sample moments") {
    Eigen::VectorXd mean(2);
    mean << 1.0, -2.0;
    Eigen::MatrixXd cov(2, 2);
    cov << 2.0, 0.6, 0.6, 0.5;
    const GaussianDensity g(mean, cov);
    const double x[2] = {0.3, -1.1};
    const Eigen::Vector2d r(x[0] - 1.0, x[1] + 2.0);
    const double expected = -std::log(2 * M_PI) - 0.5 * std::log(cov.determinant()) - 0.5 * r.dot(cov.inverse() * r);
    CHECK(g.log_density(x) == doctest::Approx(expected).epsilon(1e-12));
    nk::Rng rng(3);
    std::vector<double> rows(2 * 200000);
    for (int i = 0; i < 200000; ++i) g.sample(rng, &rows[2 * i]);
    Eigen::VectorXd m;
    Eigen::MatrixXd c;
    weighted_moments(rows, 2, {}, m, c);
    CHECK((m - mean).norm() < 0.01);
    CHECK((c - cov).norm() < 0.02);
  }

  TEST_CASE("SOO's first splits on a 1-D function") {
    // d = (x - 0.3)^2 (rastrigin with A = 0) on [-9, 9]: the root, its two
    // side children, then the best cell of each depth swept from the top.
    const Objective f = make_objective(Fn::rastrigin, 1, 0.0, {0.3});
    Tracker track(f, 9, 0.0, false);
    std::vector<double> points;
    track.on_eval = [&](const double* x, double) { points.push_back(x[0]); };
    GlobalOptions o;
    run_soo(track, o);
    const std::vector<double> expected{0, -6, 6, -2, 2, 4, 8, -2.0 / 3, 2.0 / 3};
    REQUIRE(points.size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i) CHECK(points[i] == doctest::Approx(expected[i]).epsilon(1e-12));
    // Run on: it converges to x* at the budget.
    Tracker longer(f, 400, 1e-9, false);
    run_soo(longer, o);
    CHECK(longer.best() < 1e-6);
    CHECK(std::abs(longer.best_x()[0] - 0.3) < 1e-3);
  }

  TEST_CASE("the envelopes hold: c1 |z|^2 <= d <= c2 |z|^2") {
    nk::Rng rng(4);
    for (Fn fn : {Fn::rastrigin, Fn::levy}) {
      for (int n : {1, 2, 7}) {
        std::vector<double> xs(n);
        for (auto& v : xs) v = rng.uniform() * 4 - 2;
        const Objective f = make_objective(fn, n, 1.0, xs);
        for (int k = 0; k < 2000; ++k) {
          std::vector<double> x(n);
          double z2 = 0;
          const double scale = std::pow(10.0, -4 + 5 * rng.uniform());
          for (int i = 0; i < n; ++i) {
            const double z = scale * rng.normal();
            x[i] = xs[i] + z;
            z2 += z * z;
          }
          const double d = f(x.data());
          CHECK(d >= f.c1 * z2 * (1 - 1e-9) - 1e-15);
          CHECK(d <= f.c2 * z2 * (1 + 1e-9) + 1e-15);
        }
      }
    }
  }

  TEST_CASE("the log fit: evals = a + b ln(1/eps)") {
    std::array<int64_t, kCurvePoints> reach{};
    for (int k = 0; k < kCurvePoints; ++k) reach[k] = 100 + static_cast<int64_t>(std::llround(50 * std::log(1.0 / curve_eps(k))));
    const auto fit = log_fit(reach);
    CHECK(fit[1] == doctest::Approx(50).epsilon(2e-3));  // integers: rounding
    CHECK(fit[0] == doctest::Approx(100).epsilon(1e-2));
    CHECK(fit[2] > 0.9999);
    reach.fill(-1);
    reach[0] = 5;
    CHECK(std::isnan(log_fit(reach)[2]));
  }
}

// ---- experiment C: the text costs and the importance-sampling reference ----

#include <filesystem>
#include <fstream>

#include "aldrift/lm.hpp"
#include "aldrift/lm_cost.hpp"
#include "test_support.hpp"

namespace {

void put_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

/// A WordNet folder: animal.n.01 > dog.n.01 > puppy.n.01 (hyponym), mouse.n.01
/// under animal by an instance pointer, cat under entity only; index lines
/// for every first lemma; noun.exc maps "mice" to "mouse".
void tiny_wordnet(const std::string& root) {
  std::filesystem::create_directories(root);
  const std::string license = "  1 license header  \n";
  put_file(root + "/data.noun", license +
                                    "00000100 03 n 01 entity 0 000 | that which exists  \n"
                                    "00000200 05 n 01 animal 0 001 @ 00000100 n 0000 | a living organism  \n"
                                    "00000300 05 n 02 dog 0 domestic_dog 0 001 @ 00000200 n 0000 | a canine  \n"
                                    "00000400 05 n 01 puppy 0 001 @ 00000300 n 0000 | a young dog  \n"
                                    "00000500 05 n 01 mouse 0 001 @i 00000200 n 0000 | a rodent  \n"
                                    "00000600 05 n 01 cat 0 001 @ 00000100 n 0000 | a feline  \n");
  put_file(root + "/index.noun", license +
                                     "animal n 1 1 @ 1 0 00000200  \n"
                                     "cat n 1 1 @ 1 0 00000600  \n"
                                     "dog n 1 1 @ 1 0 00000300  \n"
                                     "entity n 1 0 1 0 00000100  \n"
                                     "mouse n 1 1 @ 1 0 00000500  \n"
                                     "puppy n 1 1 @ 1 0 00000400  \n");
  for (const char* pos : {"verb", "adj", "adv"}) put_file(root + "/data." + pos, license), put_file(root + "/index." + pos, license);
  put_file(root + "/noun.exc", "mice mouse\n");
}

}  // namespace

TEST_SUITE("aldrift lm") {
  TEST_CASE("letter share and words") {
    CHECK(letter_share("Eel tree", 'e') == doctest::Approx(4.0 / 7.0));
    CHECK(letter_share("abc", 'e') == 0.0);
    CHECK(letter_share("123 !?", 'e') == 1.0);  // no letters: the worst cost, not a free lipogram
    CHECK(words_of("Dogs, mice & a PUPPY's toy") == std::vector<std::string>{"dogs", "mice", "a", "puppy", "s", "toy"});
  }

  TEST_CASE("wordnet cost: transitive hyponyms, instance pointers, plurals and exceptions") {
    nk::test::ScratchDir dir;
    tiny_wordnet(dir.file("wn"));
    const TextCost cost = TextCost::parse("wordnet:animal.n.01", dir.file("wn"));
    CHECK(cost.hyponyms() == std::unordered_set<std::string>{"dog", "puppy", "mouse"});  // not "domestic dog", not animal itself
    const std::vector<double> d = cost({"dogs and mice", "a cat", "puppies", "", "Puppy"});
    CHECK(d[0] == doctest::Approx(1.0 / 3.0));
    CHECK(d[1] == 1.0);
    CHECK(d[2] == 0.0);  // ies -> y
    CHECK(d[3] == 1.0);  // no words
    CHECK(d[4] == 0.0);
    CHECK(nk::test::exit_code([&] { TextCost::parse("wordnet:unicorn.n.01", dir.file("wn")); }) == 2);
    CHECK(nk::test::exit_code([&] { TextCost::parse("wordnet:animal.n.01", dir.file("missing")); }) == 4);
    CHECK(nk::test::exit_code([&] { TextCost::parse("letter:ee"); }) == 2);
    CHECK(nk::test::exit_code([&] { TextCost::parse("vowels"); }) == 2);
  }

  TEST_CASE("cmd cost: one string per line in, one number per line out") {
    const TextCost length = TextCost::parse("cmd:awk '{ print length($0) }'");
    CHECK(length({"abc", "two\nlines", ""}) == std::vector<double>{3, 9, 0});  // newlines sent as spaces
    CHECK(nk::test::exit_code([&] { TextCost::parse("cmd:echo 1")({"a", "b"}); }) == 3);          // too few lines
    CHECK(nk::test::exit_code([&] { TextCost::parse("cmd:awk '{ print \"x\" }'")({"a"}); }) == 3);  // not a number
    CHECK(nk::test::exit_code([&] { TextCost::parse("cmd:exit 7")({"a"}); }) == 1);
  }

  TEST_CASE("importance estimate: E_pi[d], KL(pi || L) and log Z against direct sums") {
    nk::Rng rng(3);
    std::vector<double> d(5000);
    for (double& x : d) x = rng.uniform() * rng.uniform();
    const double T = 7.0;
    double z = 0, zd = 0;
    for (double x : d) z += std::exp(-T * x), zd += std::exp(-T * x) * x;
    const double mean = zd / z, log_z = std::log(z / static_cast<double>(d.size()));
    const IsEstimate e = importance_estimate(d, T);
    CHECK(e.mean_cost == doctest::Approx(mean).epsilon(1e-12));
    CHECK(e.log_z == doctest::Approx(log_z).epsilon(1e-12));
    CHECK(e.kl == doctest::Approx(-T * mean - log_z).epsilon(1e-10));
    CHECK(e.kl > 0);
    CHECK(e.ess < static_cast<double>(d.size()));
    // T = 0: pi = L, KL 0, every draw counts.
    const IsEstimate flat = importance_estimate(d, 0.0);
    CHECK(flat.kl == doctest::Approx(0.0));
    CHECK(flat.ess == doctest::Approx(static_cast<double>(d.size())));
    // The standard errors shrink like 1 / sqrt(N).
    const IsEstimate half = importance_estimate(std::vector<double>(d.begin(), d.begin() + 1250), T);
    CHECK(half.mean_cost_se / e.mean_cost_se == doctest::Approx(2.0).epsilon(0.15));
  }
}
