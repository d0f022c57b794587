// invariance-audit.cpp - the extractors' vector-Jacobian products (planted
// mask-left and down4, a network cut at its penultimate layer) and the fiber
// loss's gradient in prior space against central differences; planted fibers
// in closed form.
#include <doctest/doctest.h>

#include <cmath>

#include "invariance-audit/extractor.hpp"
#include "invariance-audit/fiber.hpp"
#include "invariance-audit/metrics.hpp"
#include "invariance-audit/planted.hpp"
#include "nk/h5.hpp"
#include "nk/nn/model_file.hpp"
#include "nk/rng.hpp"
#include "test_support.hpp"

namespace {

// Largest |numeric - analytic| of d(r . f(x))/dx over some pixels, relative to the largest gradient.
double vjp_error(ia::Extractor& e, uint64_t seed) {
  const int64_t d = e.input().size(), f = e.dim(), batch = 2;
  nk::Rng rng(seed);
  std::vector<float> x(static_cast<size_t>(batch * d)), r(static_cast<size_t>(batch * f)), out(r.size()), dx(x.size());
  for (auto& v : x) v = static_cast<float>(rng.uniform());
  for (auto& v : r) v = static_cast<float>(rng.normal());
  e.features(x.data(), batch, out.data());
  e.vjp(r.data(), batch, dx.data());
  auto dot = [&]() {
    e.features(x.data(), batch, out.data());
    double s = 0;
    for (size_t j = 0; j < r.size(); ++j) s += static_cast<double>(r[j]) * out[j];
    return s;
  };
  double worst = 0, scale = 1e-12;
  const float h = 1e-2f;  // every extractor here is piecewise linear in x: exact away from kinks
  for (int64_t j = 0; j < batch * d; j += 7) {
    const float saved = x[j];
    x[j] = saved + h;
    const double up = dot();
    x[j] = saved - h;
    const double down = dot();
    x[j] = saved;
    const double numeric = (up - down) / (2 * h);
    worst = std::max(worst, std::abs(numeric - dx[j]));
    scale = std::max(scale, std::abs(numeric));
  }
  return worst / scale;
}

}  // namespace

TEST_SUITE("invariance-audit") {
  TEST_CASE("planted extractors: features in closed form, VJPs against central differences") {
    const nk::nn::Shape s{8, 12, 2};
    auto mask = ia::open_extractor("planted:mask-left", s, 2);
    auto down = ia::open_extractor("planted:down4", s, 2);
    CHECK(mask->dim() == 8 * 6 * 2);
    CHECK(down->dim() == 2 * 3 * 2);
    std::vector<float> x(static_cast<size_t>(s.size()));
    for (int64_t j = 0; j < s.size(); ++j) x[j] = static_cast<float>(j % 17) / 17.0f;
    std::vector<float> f(static_cast<size_t>(down->dim()));
    down->features(x.data(), 1, f.data());
    double mean = 0;  // block (1, 2), channel 1: rows 4..7, columns 8..11
    for (int64_t y = 4; y < 8; ++y)
      for (int64_t c = 8; c < 12; ++c) mean += x[(y * 12 + c) * 2 + 1] / 16.0;
    CHECK(f[(1 * 3 + 2) * 2 + 1] == doctest::Approx(mean).epsilon(1e-6));
    std::vector<float> m(static_cast<size_t>(mask->dim()));
    mask->features(x.data(), 1, m.data());
    CHECK(m[0] == x[6 * 2]);  // row 0, column 6, channel 0
    CHECK(vjp_error(*mask, 1) < 1e-4);
    CHECK(vjp_error(*down, 2) < 1e-4);
    CHECK_THROWS_AS(ia::open_extractor("planted:down4", {10, 12, 1}, 1), nk::Error);
    CHECK_THROWS_AS(ia::open_extractor("planted:mirror", s, 1), nk::Error);
  }

  TEST_CASE("a network extractor cut at its penultimate layer; the fiber loss's gradient in prior space") {
    nk::test::ScratchDir dir;
    std::vector<nk::nn::LayerSpec> specs;
    for (const char* line : {"conv2d 1 4 3 1 1", "relu", "maxpool 2", "flatten", "linear 64 6", "tanh", "linear 6 3"}) {
      specs.push_back(nk::nn::LayerSpec::parse(line));
    }
    nk::nn::Network<float> net = nk::nn::Network<float>::build(specs, {8, 8, 1});
    net.init(3);
    {
      nk::h5::Writer out(dir.file("m.h5"), nk::nn::kModelSchema);
      nk::nn::write_model(out, net, 3, std::nullopt);
      out.commit();
    }
    auto pen = ia::open_extractor(dir.file("m.h5") + ":penultimate", {8, 8, 1}, 2);
    auto cut = ia::open_extractor(dir.file("m.h5") + ":2", {8, 8, 1}, 2);
    CHECK(pen->dim() == 6);
    CHECK(cut->dim() == 4 * 4 * 4);
    CHECK(vjp_error(*pen, 4) < 2e-2);  // relu and maxpool kinks: a few probes may straddle one
    CHECK_THROWS_AS(ia::open_extractor(dir.file("m.h5"), {8, 9, 1}, 1), nk::Error);
    // c(x) = ||f(p) - f(p_q)||^2 / ||f(p_q)||^2 with p = (x + 1)/2: gradient against central differences.
    nk::Rng rng(5);
    std::vector<float> query(64), x(2 * 64), grad(x.size());
    for (auto& v : query) v = static_cast<float>(rng.uniform());
    for (auto& v : x) v = static_cast<float>(rng.uniform() * 1.6 - 0.8);
    ia::FiberCost cost(*pen, query.data(), 2);
    double c[2];
    cost.evaluate(x.data(), 2, c, grad.data());
    double worst = 0, scale = 1e-12;
    for (int64_t j = 0; j < 128; j += 5) {
      const float saved = x[j], h = 1e-3f;
      double up[2], down[2];
      x[j] = saved + h;
      cost.evaluate(x.data(), 2, up, nullptr);
      x[j] = saved - h;
      cost.evaluate(x.data(), 2, down, nullptr);
      x[j] = saved;
      const double numeric = (up[j / 64] - down[j / 64]) / (2 * h);
      worst = std::max(worst, std::abs(numeric - grad[j]));
      scale = std::max(scale, std::abs(numeric));
    }
    INFO("largest error " << worst << " against " << scale);
    CHECK(worst < 2e-2 * scale);
    // The query itself is in its own fiber.
    std::vector<float> q_prior(64);
    for (int64_t j = 0; j < 64; ++j) q_prior[j] = 2 * query[j] - 1;
    cost.evaluate(q_prior.data(), 1, c, nullptr);
    CHECK(c[0] < 1e-10);
  }

  TEST_CASE("planted flip: blind to mirroring, its VJP against central differences; the revealed rules") {
    const nk::nn::Shape s{8, 12, 1};
    auto flip = ia::open_extractor("planted:flip:planted:down4", s, 2);
    CHECK(flip->name() == "planted:flip:planted:down4");
    CHECK(flip->dim() == 2 * 3);
    std::vector<float> x(static_cast<size_t>(s.size())), m(x.size()), fx(6), fm(6);
    nk::Rng rng(8);
    for (auto& v : x) v = static_cast<float>(rng.uniform());
    for (int64_t y = 0; y < 8; ++y)
      for (int64_t c = 0; c < 12; ++c) m[y * 12 + c] = x[y * 12 + 11 - c];
    flip->features(x.data(), 1, fx.data());
    flip->features(m.data(), 1, fm.data());
    for (int j = 0; j < 6; ++j) CHECK(fx[j] == doctest::Approx(fm[j]).epsilon(1e-6));
    CHECK(vjp_error(*flip, 9) < 1e-4);

    // mask-left: the right half kept within 2%, the left half 20% off.
    auto ml = ia::open_revealer("planted:mask-left", s);
    REQUIRE(ml);
    std::vector<float> q(x), sample(x);
    for (int64_t y = 0; y < 8; ++y)
      for (int64_t c = 0; c < 6; ++c) sample[y * 12 + c] = 1.0f - q[y * 12 + c];
    CHECK(ml->revealed(sample.data(), q.data()));
    CHECK_FALSE(ml->revealed(q.data(), q.data()));  // the query itself: nothing free moved
    sample[11] += 0.5f;                               // a fixed pixel off
    CHECK_FALSE(ml->revealed(sample.data(), q.data()));
    // down4: the same block means, a different residual.
    auto d4 = ia::open_revealer("planted:down4", s);
    std::vector<float> swapped(q);
    for (int64_t y = 0; y < 8; y += 2)
      for (int64_t c = 0; c < 12; ++c) std::swap(swapped[y * 12 + c], swapped[(y + 1) * 12 + c]);
    CHECK(d4->revealed(swapped.data(), q.data()));
    // flip: nearer the mirrored query.
    auto fr = ia::open_revealer("planted:flip:x.h5", s);
    CHECK(fr->revealed(m.data(), q.data()));
    CHECK_FALSE(fr->revealed(q.data(), q.data()));
    CHECK_FALSE(ia::open_revealer("model.h5:penultimate", s));
  }

  TEST_CASE("Frechet distance, density and coverage in closed form") {
    // b = 2 a + c: C_b = 4 C_a commutes with C_a, so the distance is
    // ||mu_a - mu_b||^2 + tr C_a (1 + 4 - 2 * 2).
    const int64_t n = 300, F = 5;
    nk::Rng rng(3);
    std::vector<float> a(static_cast<size_t>(n * F)), b(a.size());
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < F; ++k) {
        a[i * F + k] = static_cast<float>(rng.normal() * (1 + k) + (k == 0 ? 0.5 : 0.0) + 0.3 * (k > 0 ? a[i * F + k - 1] : 0));
        b[i * F + k] = 2 * a[i * F + k] + static_cast<float>(k);
      }
    std::vector<double> ma(F, 0.0), mb(F, 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < F; ++k) ma[k] += a[i * F + k] / double(n), mb[k] += b[i * F + k] / double(n);
    double mean2 = 0, trace = 0;
    for (int64_t k = 0; k < F; ++k) {
      mean2 += (ma[k] - mb[k]) * (ma[k] - mb[k]);
      for (int64_t i = 0; i < n; ++i) trace += std::pow(a[i * F + k] - ma[k], 2) / double(n - 1);
    }
    CHECK(ia::frechet_distance(a, n, b, n, F) == doctest::Approx(mean2 + trace).epsilon(1e-6));
    CHECK(ia::frechet_distance(a, n, a, n, F) == doctest::Approx(0.0).epsilon(1e-6));
    // Reals at 0..9 on a line, k = 1: every radius is 1. A fake at 0.5 lies in
    // the balls of 0 and 1, one at 20 in none.
    std::vector<float> real, fake{0.5f, 20.0f};
    for (int i = 0; i < 10; ++i) real.push_back(static_cast<float>(i));
    const ia::DensityCoverage dc = ia::density_coverage(real, 10, fake, 2, 1, 1);
    CHECK(dc.density == doctest::Approx(2.0 / 2.0));
    CHECK(dc.coverage == doctest::Approx(2.0 / 10.0));
  }
}
