// proxy-certify.cpp - randomized smoothing and the proxy's calibration:
// statistics against scipy, CERTIFY on a linear model whose smoothed
// probabilities and radii are known in closed form, the CRC threshold against
// numpy, and the false-approval guarantee over many splits.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <limits>

#include "nk/h5.hpp"
#include "nk/nn/model_file.hpp"
#include "nk/rng.hpp"
#include "proxy-certify/classifier.hpp"
#include "proxy-certify/proxy.hpp"
#include "proxy-certify/smoothing.hpp"
#include "proxy-certify/stats.hpp"
#include "test_support.hpp"

namespace {

// A two-class linear model on vectors of D values, written as an nk-nn file.
std::string linear_model(const nk::test::ScratchDir& dir, const std::vector<float>& w0, const std::vector<float>& w1,
                         float b0, float b1) {
  const auto D = static_cast<int64_t>(w0.size());
  auto net = nk::nn::Network<float>::build({nk::nn::LayerSpec::parse("linear " + std::to_string(D) + " 2")}, {1, 1, D});
  net.init(0);
  net.layers[0].weight = w0;
  net.layers[0].weight.insert(net.layers[0].weight.end(), w1.begin(), w1.end());
  net.layers[0].bias = {b0, b1};
  const std::string path = dir.file("linear.h5");
  nk::h5::Writer out(path, nk::nn::kModelSchema);
  nk::nn::write_model(out, net, 2, 0.5);
  out.commit();
  return path;
}

}  // namespace

TEST_SUITE("proxy-certify") {
  TEST_CASE("Clopper-Pearson, Phi^-1, the binomial test and the CRC threshold against scipy and numpy") {
    nk::test::ScratchDir dir;
    const std::string path = dir.file("case.h5");
    std::vector<int64_t> k, n;
    std::vector<double> alpha, lower, upper;
    for (int64_t trials : {1, 2, 10, 100, 1000, 10000, 100000})
      for (int64_t successes : {int64_t{0}, int64_t{1}, trials / 2, trials - 1, trials})
        for (double a : {0.001, 0.025, 0.2}) {
          if (successes < 0 || successes > trials) continue;
          k.push_back(successes), n.push_back(trials), alpha.push_back(a);
          lower.push_back(pc::clopper_pearson_lower(successes, trials, a));
          upper.push_back(pc::clopper_pearson_upper(successes, trials, a));
        }
    std::vector<double> p{1e-12, 1e-6, 0.001, 0.1, 0.5, 0.7, 0.975, 0.999999, 1 - 1e-12}, q;
    for (double v : p) q.push_back(pc::normal_quantile(v));
    std::vector<int64_t> bk{0, 3, 5, 7, 10, 50, 62, 1000}, bt{10, 10, 10, 10, 10, 100, 100, 1500};
    std::vector<double> pv;
    for (size_t i = 0; i < bk.size(); ++i) pv.push_back(pc::binomial_test_half(bk[i], bt[i]));
    nk::h5::Writer out(path, "test/1");
    const auto N = static_cast<int64_t>(k.size());
    out.write("/stats/successes", k.data(), {N}, "N");
    out.write("/stats/trials", n.data(), {N}, "N");
    out.write("/stats/alpha", alpha.data(), {N}, "N");
    out.write("/stats/lower", lower.data(), {N}, "N");
    out.write("/stats/upper", upper.data(), {N}, "N");
    out.write("/stats/p", p.data(), {static_cast<int64_t>(p.size())}, "P");
    out.write("/stats/quantile", q.data(), {static_cast<int64_t>(q.size())}, "P");
    out.write("/stats/k", bk.data(), {static_cast<int64_t>(bk.size())}, "B");
    out.write("/stats/t", bt.data(), {static_cast<int64_t>(bt.size())}, "B");
    out.write("/stats/pvalue", pv.data(), {static_cast<int64_t>(pv.size())}, "B");
    nk::Rng rng(4);
    for (int c = 0; c < 12; ++c) {
      const int64_t m = 5 + static_cast<int64_t>(rng.below(400));
      std::vector<double> scores(static_cast<size_t>(m)), losses(static_cast<size_t>(m));
      const double bound = c % 3 == 0 ? 1.0 : 1 + 10 * rng.uniform();
      for (int64_t i = 0; i < m; ++i) {
        scores[i] = std::round(rng.normal() * 20) / 4;  // ties on purpose
        losses[i] = rng.uniform() < 0.3 + 0.05 * (scores[i] < 0) ? bound * (c % 2 ? 1.0 : rng.uniform()) : 0.0;
      }
      const double target = 0.02 + 0.1 * rng.uniform();
      const double lambda = pc::crc_lambda(scores, losses, bound, target);
      const std::string at = "/crc/" + std::to_string(c) + "/";
      out.write(at + "scores", scores.data(), {m}, "N");
      out.write(at + "losses", losses.data(), {m}, "N");
      out.write(at + "bound", &bound, {}, "");
      out.write(at + "target", &target, {}, "");
      out.allow_nonfinite(at + "lambda");
      out.write(at + "lambda", &lambda, {}, "");
    }
    out.commit();
    const std::string command = "/usr/bin/python3 " NK_SOURCE_DIR "/tests/unit/proxy_certify_reference.py " + path;
    CHECK(std::system(command.c_str()) == 0);
    CHECK(pc::largest_certifiable_radius(1000, 0.001, 1.0) == doctest::Approx(2.46).epsilon(0.01));
  }

  TEST_CASE("CERTIFY on a linear two-class model: binomial counts, radius above the exact one at rate <= alpha") {
    // f(x) = argmax(w_c . x + b_c): under N(x, sigma^2 I) class 0 wins with
    // probability Phi(m(x) / (sigma ||w0 - w1||)), m = (w0 - w1).x + b0 - b1,
    // and the smoothed classifier's exact L2 radius is |m(x)| / ||w0 - w1||.
    nk::test::ScratchDir dir;
    const int64_t D = 6, items = 300, n = 2000;
    const double sigma = 0.5, alpha = 0.01;
    const std::vector<float> w0{1.0f, -0.5f, 0.25f, 0.0f, 2.0f, -1.0f}, w1{-0.5f, 0.5f, 0.0f, 1.0f, 0.5f, 0.0f};
    const float b0 = 0.1f, b1 = -0.2f;
    pc::ModelOptions options;
    options.model = linear_model(dir, w0, w1, b0, b1);
    auto model = pc::open_classifier(options, {1, 1, D}, 512);
    pc::Smoother smoother(*model, sigma, 17, 512);
    double norm = 0;
    for (int64_t d = 0; d < D; ++d) norm += (w0[d] - w1[d]) * (w0[d] - w1[d]);
    norm = std::sqrt(norm);
    nk::Rng rng(8);
    double chi2 = 0;
    int64_t over = 0, certified = 0;
    for (int64_t i = 0; i < items; ++i) {
      std::vector<float> x(static_cast<size_t>(D));
      for (auto& v : x) v = static_cast<float>(rng.normal() * 0.3);
      double m = b0 - b1;
      for (int64_t d = 0; d < D; ++d) m += (w0[d] - w1[d]) * x[d];
      const double p0 = pc::normal_cdf(m / (sigma * norm));
      const pc::Certificate c = pc::certify(smoother, x.data(), i, 100, n, alpha);
      const double p_sel = c.selected == 0 ? p0 : 1 - p0;
      chi2 += std::pow(static_cast<double>(c.count) - n * p_sel, 2) / (n * p_sel * (1 - p_sel) + 1e-12);
      if (c.pred >= 0) {
        ++certified;
        const double exact = std::abs(m) / norm;
        over += c.radius > exact || c.pred != (m > 0 ? 0 : 1);
      }
    }
    INFO("chi2 " << chi2 << " on " << items << " items; " << over << " of " << certified << " radii above the exact one");
    // chi2 with 300 degrees of freedom: mean 300, sd 24.5.
    CHECK(chi2 < 300 + 5 * 24.5);
    CHECK(chi2 > 300 - 5 * 24.5);
    CHECK(certified > items / 2);
    // At most alpha per certificate: P(Bin(300, 0.01) > 9) < 0.001.
    CHECK(over <= 9);
  }

  TEST_CASE("noise streams: counts do not depend on the batch size") {
    nk::test::ScratchDir dir;
    pc::ModelOptions options;
    options.model = linear_model(dir, {1, 2, 3}, {3, 2, 1}, 0, 0);
    auto model = pc::open_classifier(options, {1, 1, 3}, 700);
    const std::vector<float> x{0.1f, 0.2f, 0.25f};
    pc::Smoother a(*model, 1.0, 5, 700), b(*model, 1.0, 5, 33);
    const std::vector<int64_t> ca = a.counts(x.data(), 7, pc::Phase::estimation, 1000);
    CHECK(ca == b.counts(x.data(), 7, pc::Phase::estimation, 1000));
    CHECK(ca != b.counts(x.data(), 8, pc::Phase::estimation, 1000));
  }

  TEST_CASE("CUDA smoothing counts match the CPU's (same noise streams; an MLP and a CNN)") {
    if (!nk::test::cuda_or_skip()) return;
    nk::test::ScratchDir dir;
    const std::vector<std::vector<std::string>> nets = {
        {"flatten", "linear 784 64", "relu", "linear 64 10"},
        {"conv2d 1 8 3 1 1", "relu", "maxpool 2", "conv2d 8 16 3 2 1", "relu", "flatten", "linear 784 10"}};
    for (const auto& lines : nets) {
      std::vector<nk::nn::LayerSpec> specs;
      for (const auto& line : lines) specs.push_back(nk::nn::LayerSpec::parse(line));
      auto net = nk::nn::Network<float>::build(specs, {28, 28, 1});
      net.init(5);
      const std::string path = dir.file("net.h5");
      {
        nk::h5::Writer out(path, nk::nn::kModelSchema);
        nk::nn::write_model(out, net, 10, 0.25);
        out.commit();
      }
      pc::ModelOptions options;
      options.model = path;
      auto model = pc::open_classifier(options, {28, 28, 1}, 1000);
      pc::Smoother cpu(*model, 0.25, 9, 1000), gpu(*model, 0.25, 9, 1000, nk::DeviceKind::cuda);
      REQUIRE(gpu.on_gpu());
      nk::Rng rng(3);
      for (int64_t item = 0; item < 4; ++item) {
        std::vector<float> x(784);
        for (auto& v : x) v = static_cast<float>(rng.uniform());
        const int64_t n = 5000;
        const std::vector<int64_t> a = cpu.counts(x.data(), item, pc::Phase::estimation, n);
        const std::vector<int64_t>& b = gpu.counts(x.data(), item, pc::Phase::estimation, n);
        int64_t differ = 0, total = 0;
        for (size_t c = 0; c < a.size(); ++c) differ += std::abs(a[c] - b[c]), total += b[c];
        INFO(lines[0] << ", item " << item << ": " << differ << " of " << n << " copies counted differently");
        CHECK(total == n);
        CHECK(differ <= n / 500 + 2);  // only near-ties may flip (float rounding)
      }
    }
  }
}
