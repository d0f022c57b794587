// sae-buffer.cpp - the SAE's gradient equals finite differences in float64
// (TopK, BatchTopK, JumpReLU, aux-K), JumpReLU's threshold gradient is the
// straight-through formula, the selections match brute force, training keeps
// unit decoder rows and draws every buffer row B/U times (+-1), the law's fit
// recovers planted parameters and the sizing rule matches a linear scan.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>

#include "nk/rng.hpp"
#include "sae-buffer/activations.hpp"
#include "sae-buffer/law.hpp"
#include "sae-buffer/sae.hpp"
#include "sae-buffer/sae_buffer.hpp"
#include "sae-buffer/trainer.hpp"

using namespace sb;

namespace {

SaeT<double> random_sae(Arch arch, int64_t m, int64_t n, int64_t k, nk::Rng& rng) {
  SaeT<double> s = init_sae<double>(arch, m, n, k, rng);
  for (int64_t i = 0; i < s.enc.size(); ++i) s.enc.data()[i] = rng.normal();
  for (int64_t i = 0; i < s.dec.size(); ++i) s.dec.data()[i] = rng.normal() * 0.7;
  for (int64_t j = 0; j < n; ++j) s.b_enc[j] = 0.3 * rng.normal();
  for (int64_t c = 0; c < m; ++c) s.b_dec[c] = 0.2 * rng.normal();
  return s;
}

Matrix<double> random_rows(int64_t rows, int64_t m, nk::Rng& rng) {
  Matrix<double> x(rows, m);
  for (int64_t i = 0; i < x.size(); ++i) x.data()[i] = rng.normal();
  return x;
}

double loss_of(const SaeT<double>& s, const Matrix<double>& x, const LossConfig& c, const std::vector<char>& dead) {
  CodesT<double> codes;
  return loss_and_grad(s, x.data(), x.rows(), c, dead, static_cast<GradT<double>*>(nullptr), codes).total();
}

// Central differences of every entry of 'param' (a member of s) against 'analytic'.
template <class Block>
void check_block(SaeT<double>& s, Block& param, const Block& analytic, const Matrix<double>& x, const LossConfig& c,
                 const std::vector<char>& dead, const std::vector<int64_t>& only = {}) {
  const double h = 1e-6;
  for (int64_t i = 0; i < param.size(); ++i) {
    if (!only.empty() && std::find(only.begin(), only.end(), i) == only.end()) continue;
    const double saved = param.data()[i];
    param.data()[i] = saved + h;
    const double up = loss_of(s, x, c, dead);
    param.data()[i] = saved - h;
    const double down = loss_of(s, x, c, dead);
    param.data()[i] = saved;
    const double numeric = (up - down) / (2 * h);
    CHECK(analytic.data()[i] == doctest::Approx(numeric).epsilon(1e-5).scale(1.0));
  }
}

void check_all(SaeT<double>& s, const Matrix<double>& x, const LossConfig& c, const std::vector<char>& dead) {
  GradT<double> g;
  CodesT<double> codes;
  loss_and_grad(s, x.data(), x.rows(), c, dead, &g, codes);
  check_block(s, s.enc, g.enc, x, c, dead);
  check_block(s, s.dec, g.dec, x, c, dead);
  check_block(s, s.b_enc, g.b_enc, x, c, dead);
  check_block(s, s.b_dec, g.b_dec, x, c, dead);
}

// A synthetic source of 'rows' stored rows in dir/acts.h5 (dir is made), opened.
Activations generated(const std::filesystem::path& dir, const SyntheticSpec& spec, int64_t rows, uint64_t seed) {
  std::filesystem::create_directories(dir);
  GenOptions g;
  g.spec = spec;
  g.rows = rows;
  g.output = (dir / "acts.h5").string();
  nk::RunEnv env;
  env.seed = seed;
  gen(g, env);
  return Activations::open(g.output);
}

}  // namespace

TEST_SUITE("sae-buffer") {
  TEST_CASE("TopK and BatchTopK gradients equal central differences (float64)") {
    for (const Arch arch : {Arch::topk, Arch::batchtopk}) {
      nk::Rng rng(7);
      SaeT<double> s = random_sae(arch, 6, 16, 3, rng);
      const Matrix<double> x = random_rows(5, 6, rng);
      check_all(s, x, LossConfig{}, {});
    }
  }

  TEST_CASE("JumpReLU: gradients of W and b equal central differences; the threshold's is the straight-through formula") {
    nk::Rng rng(11);
    SaeT<double> s = random_sae(Arch::jumprelu, 6, 16, 3, rng);
    for (int64_t j = 0; j < 16; ++j) s.threshold[j] = 0.1 + 0.4 * rng.uniform();
    const Matrix<double> x = random_rows(7, 6, rng);
    LossConfig c;
    c.l0_coef = 0.05;
    c.bandwidth = 0.5;  // wide, so that several entries fall inside the kernel
    check_all(s, x, c, {});

    GradT<double> g;
    CodesT<double> codes;
    loss_and_grad(s, x.data(), x.rows(), c, {}, &g, codes);
    // the reference, entry by entry: pre, x_hat, dL/dz, the rectangle kernel
    const int64_t b = x.rows(), n = 16;
    Matrix<double> pre(b, n), x_hat(b, 6);
    for (int64_t r = 0; r < b; ++r) {
      x_hat.row(r) = s.b_dec.transpose();
      for (int64_t j = 0; j < n; ++j) {
        pre(r, j) = (x.row(r) - s.b_dec.transpose()).dot(s.enc.row(j)) + s.b_enc[j];
        if (pre(r, j) > s.threshold[j]) x_hat.row(r) += pre(r, j) * s.dec.row(j);
      }
    }
    int64_t inside = 0;
    for (int64_t j = 0; j < n; ++j) {
      double expected = 0;
      for (int64_t r = 0; r < b; ++r) {
        if (std::abs(pre(r, j) - s.threshold[j]) >= c.bandwidth / 2) continue;
        ++inside;
        const double dz = (2.0 / b) * (x_hat.row(r) - x.row(r)).dot(s.dec.row(j));
        expected += -(s.threshold[j] / c.bandwidth) * dz - c.l0_coef / b / c.bandwidth;
      }
      CHECK(g.threshold[j] == doctest::Approx(expected).epsilon(1e-10));
    }
    CHECK(inside > 5);
  }

  TEST_CASE("aux-K: the dead latents' gradient equals central differences of the aux term") {
    nk::Rng rng(5);
    SaeT<double> s = random_sae(Arch::topk, 6, 16, 3, rng);
    // Live latents 0..7 dominate the TopK selection; dead latents 8..15 have
    // positive pre-activations but are never selected, so their parameters
    // reach the loss only through the aux reconstruction.
    for (int64_t j = 0; j < 16; ++j) {
      s.enc.row(j) *= 0.05;
      s.b_enc[j] = j < 8 ? 3.0 + 0.1 * j : 0.5 + 0.05 * j;
    }
    const Matrix<double> x = random_rows(6, 6, rng);
    std::vector<char> dead(16, 0);
    for (int64_t j = 8; j < 16; ++j) dead[j] = 1;
    LossConfig c;
    c.aux_k = 2;
    c.aux_coef = 0.5;
    GradT<double> g;
    CodesT<double> codes;
    const LossParts parts = loss_and_grad(s, x.data(), x.rows(), c, dead, &g, codes);
    CHECK(parts.aux > 0);
    for (const int32_t j : codes.latent) CHECK(j < 8);
    std::vector<int64_t> dead_rows;
    for (int64_t j = 8; j < 16; ++j)
      for (int64_t col = 0; col < 6; ++col) dead_rows.push_back(j * 6 + col);
    check_block(s, s.enc, g.enc, x, c, dead, dead_rows);
    check_block(s, s.dec, g.dec, x, c, dead, dead_rows);
    check_block(s, s.b_enc, g.b_enc, x, c, dead, {8, 9, 10, 11, 12, 13, 14, 15});
  }

  TEST_CASE("TopK per row and BatchTopK over the batch match brute force, ties to the lower index") {
    nk::Rng rng(3);
    Matrix<float> pre(40, 50);
    for (int64_t i = 0; i < pre.size(); ++i) pre.data()[i] = static_cast<float>(std::round(rng.normal() * 4) / 4);  // many ties
    CodesT<float> codes;
    topk_rows(pre, 5, codes);
    for (int64_t r = 0; r < pre.rows(); ++r) {
      std::vector<int> idx(50);
      std::iota(idx.begin(), idx.end(), 0);
      std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return pre(r, a) > pre(r, b); });
      std::vector<int> expected;
      for (int i = 0; i < 5; ++i)
        if (pre(r, idx[i]) > 0) expected.push_back(idx[i]);
      std::sort(expected.begin(), expected.end());
      std::vector<int> got(codes.latent.begin() + codes.offsets[r], codes.latent.begin() + codes.offsets[r + 1]);
      CHECK(got == expected);
    }
    const float smallest = topk_batch(pre, 5, codes);
    std::vector<float> all(pre.data(), pre.data() + pre.size());
    std::sort(all.begin(), all.end(), std::greater<float>());
    CHECK(codes.nonzeros() == 200);
    CHECK(smallest == all[199]);
    double kept = 0, best = 0;
    for (const float v : codes.value) kept += v;
    for (int i = 0; i < 200; ++i) best += all[i];
    CHECK(kept == doctest::Approx(best));
  }

  TEST_CASE("buffers are seeded, sorted and nested") {
    const auto small = buffer_rows(1000, 100, false, 9), large = buffer_rows(1000, 300, false, 9);
    CHECK(std::is_sorted(small.begin(), small.end()));
    CHECK(std::adjacent_find(large.begin(), large.end()) == large.end());
    for (const int64_t r : small) CHECK(std::binary_search(large.begin(), large.end(), r));
    CHECK(buffer_rows(1000, 100, false, 10) != small);
    CHECK(buffer_rows(kUnboundedRows, 5, true, 9) == std::vector<int64_t>{0, 1, 2, 3, 4});
  }

  TEST_CASE("training: every buffer row is drawn B/U times (+-1), decoder rows keep unit norm, EV rises") {
    const auto dir = std::filesystem::temp_directory_path() / ("sb_unit_" + std::to_string(::getpid()));
    const Activations acts = generated(dir, {16, 48, 3, 1.1, 0.02, 0.3, 0}, 600, 4);
    REQUIRE(acts.synthetic());
    for (const Arch arch : {Arch::topk, Arch::batchtopk, Arch::jumprelu}) {
      TrainConfig c;
      c.arch = arch;
      c.latents = 64;
      c.k = 3;
      c.buffer = 100;
      c.budget = 2050;  // 20.5 epochs: 50 rows are drawn 21 times, 50 rows 20 times
      c.batch = 64;
      c.learning_rate = 3e-3;
      const TrainResult r = train_sae(acts, acts.stored_rows(), c, 1, "");
      CHECK(std::accumulate(r.usage.begin(), r.usage.end(), int64_t{0}) == 2050);
      CHECK(*std::max_element(r.usage.begin(), r.usage.end()) - *std::min_element(r.usage.begin(), r.usage.end()) <= 1);
      for (int64_t j = 0; j < r.sae.latents(); ++j) CHECK(r.sae.dec.row(j).norm() == doctest::Approx(1.0).epsilon(1e-5));
      CHECK(r.curve.mse.back() < 0.7 * r.curve.mse.front());
    }
    std::filesystem::remove_all(dir);
  }

  TEST_CASE("BatchTopK: after a short run the inference threshold keeps about k latents a row") {
    // The running mean's horizon is a tenth of the run (at most 100 steps);
    // a fixed 100-step horizon lags a 40-step run, whose threshold then
    // reflects the first steps' larger values.
    const auto dir = std::filesystem::temp_directory_path() / ("sb_unit_btk_" + std::to_string(::getpid()));
    const Activations acts = generated(dir, {32, 128, 4, 1.1, 0.02, 0.3, 0}, 4096, 9);
    auto inference_l0 = [&](double threshold_decay) {
      TrainConfig c;
      c.arch = Arch::batchtopk;
      c.latents = 256;
      c.k = 8;
      c.buffer = 4096;
      c.budget = 40 * 256;
      c.batch = 256;
      c.learning_rate = 1e-2;
      c.threshold_decay = threshold_decay;
      const TrainResult r = train_sae(acts, acts.stored_rows(), c, 1, "");
      const Matrix<float> x = acts.read_range(0, 4096);
      Matrix<float> pre;
      pre_activations(r.sae, x.data(), x.rows(), pre);
      CodesT<float> codes;
      encode(r.sae, pre, codes);
      return static_cast<double>(codes.nonzeros()) / static_cast<double>(x.rows());
    };
    const double l0 = inference_l0(0.0), lagged = inference_l0(0.99);
    MESSAGE("inference L0 ", l0, " (a 100-step horizon: ", lagged, ")");
    CHECK(l0 > 0.8 * 8);
    CHECK(l0 < 1.25 * 8);
    std::filesystem::remove_all(dir);
  }

  TEST_CASE("the law's fit recovers planted parameters from a grid with 1% noise; power laws fit worse") {
    const std::vector<double> truth = {0.05, 4.0, 0.35, 25.0};
    nk::Rng rng(2);
    std::vector<GridPoint> points;
    for (int u = 10; u <= 18; ++u)
      for (int b = 14; b <= 22; ++b)
        if (u <= b) {
          GridPoint p{std::ldexp(1.0, u), std::ldexp(1.0, b), 0, 0};
          p.fvu = predict_fvu(LawKind::law, truth, p) * (1 + 0.01 * rng.normal());
          points.push_back(p);
        }
    const LawFit f = fit_law(LawKind::law, points);
    CHECK(f.params[3] == doctest::Approx(truth[3]).epsilon(0.2));
    CHECK(f.params[2] == doctest::Approx(truth[2]).epsilon(0.1));
    CHECK(f.params[0] == doctest::Approx(truth[0]).epsilon(0.1));
    CHECK(fit_law(LawKind::power_b, points).loss > 2 * f.loss);
    CHECK(fit_law(LawKind::power_ub, points).loss > f.loss);
    CHECK_THROWS(fit_law(LawKind::law, std::vector<GridPoint>(points.begin(), points.begin() + 3)));
  }

  TEST_CASE("the sizing rule equals a linear scan") {
    LawFit f;
    f.kind = LawKind::law;
    f.params = {0.05, 4.0, 0.35, 25.0};
    for (const double tol : {0.001, 0.01, 0.05}) {
      const double B = 5000;
      const double target = (1 - tol) * (1 - predict_fvu(f.kind, f.params, {B, B, 0, 0}));
      int64_t scan = 1;
      while (1 - predict_fvu(f.kind, f.params, {static_cast<double>(scan), B, 0, 0}) < target) ++scan;
      CHECK(smallest_buffer(f, B, 0, tol) == scan);
    }
  }
}
