// invariance-audit.cpp - the extractors' vector-Jacobian products (planted
// mask-left and down4, a network cut at its penultimate layer) and the fiber
// loss's gradient in prior space against central differences; planted fibers
// in closed form.
#include <doctest/doctest.h>

#include <cmath>

#include "invariance-audit/extractor.hpp"
#include "invariance-audit/fiber.hpp"
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
}
