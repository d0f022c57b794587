// test_snn.cpp - nk::snn's input gradient (what invariance-audit audits a
// spiking network with): BPTT from the logits or from the last hidden
// layer's firing rates down to the pixels equals central finite differences
// when the spikes are smooth (the 'sigmoid' surrogate: the forward pass is
// then differentiable and BPTT exact), for dense and conv networks, both
// resets; the rate-coded gradient sums the coded input's over the steps.
#include <doctest/doctest.h>

#include <cmath>

#include "nk/rng.hpp"
#include "nk/snn/snn.hpp"

namespace {

using nk::snn::Config;
using nk::snn::Matrix;
using nk::snn::Network;
using nk::snn::Output;
using nk::snn::Workspace;

Matrix random_matrix(int64_t rows, int64_t cols, nk::Rng& rng, double lo, double hi) {
  Matrix m(rows, cols);
  for (int64_t i = 0; i < m.size(); ++i) m.data()[i] = static_cast<float>(lo + (hi - lo) * rng.uniform());
  return m;
}

/// The output of the last forward(): logits, or spike counts / T.
Matrix output_of(const Network& net, const Workspace& ws, Output at) {
  return at == Output::logits ? ws.output_logits() : Matrix(ws.spike_counts() / static_cast<float>(net.config.steps));
}

/// <g, output(x)> in double.
double objective(const Network& net, const Matrix& x, const Matrix& g, Output at) {
  Workspace ws(net.config, x.rows());
  nk::Rng coding(9);
  nk::snn::forward(net, x, nullptr, ws, &coding);
  const Matrix out = output_of(net, ws, at);
  return (out.cast<double>().array() * g.cast<double>().array()).sum();
}

/// input_gradient against central differences at every pixel; returns the
/// largest error relative to the gradient's largest entry.
double check_input_gradient(const Network& net, const Matrix& x, Output at, nk::Rng& rng) {
  Workspace ws(net.config, x.rows());
  nk::Rng coding(9);
  nk::snn::forward(net, x, nullptr, ws, &coding);
  const int64_t width = output_of(net, ws, at).cols();
  const Matrix g = random_matrix(x.rows(), width, rng, -1.0, 1.0);
  Matrix grad;
  nk::snn::input_gradient(net, ws, at, g, grad);
  REQUIRE(grad.rows() == x.rows());
  REQUIRE(grad.cols() == x.cols());
  const float eps = 1e-2f;
  double worst = 0, largest = 0;
  for (int64_t i = 0; i < x.size(); ++i) {
    Matrix plus = x, minus = x;
    plus.data()[i] += eps;
    minus.data()[i] -= eps;
    const double fd = (objective(net, plus, g, at) - objective(net, minus, g, at)) / (2.0 * eps);
    worst = std::max(worst, std::abs(fd - grad.data()[i]));
    largest = std::max(largest, std::abs(fd));
  }
  INFO("largest |fd| " << largest << ", worst error " << worst);
  CHECK(largest > 1e-3);
  return worst / largest;
}

Network smooth(Config c, uint64_t seed) {
  c.surrogate = nk::snn::Surrogate::sigmoid;
  c.slope = 3.0f;
  c.steps = 5;
  c.beta = 0.8f;
  c.threshold = 0.7f;
  nk::Rng rng(seed);
  Network net = Network::init(c, rng);
  for (auto& b : net.bias) b.setConstant(0.2f);
  return net;
}

}  // namespace

TEST_SUITE("snn") {
  TEST_CASE("the input gradient equals central differences: dense networks, logits and rates, both resets") {
    nk::Rng rng(4);
    for (const auto& sizes : {std::vector<int64_t>{12, 6, 3}, std::vector<int64_t>{10, 5, 4, 3}}) {
      for (const auto reset : {nk::snn::Reset::subtract, nk::snn::Reset::zero}) {
        Config c;
        c.sizes = sizes;
        c.reset = reset;
        const Network net = smooth(c, 7);
        const Matrix x = random_matrix(3, sizes[0], rng, 0.0, 1.0);
        for (const Output at : {Output::logits, Output::rates}) {
          INFO("layers " << sizes.size() << (at == Output::logits ? " logits" : " rates"));
          CHECK(check_input_gradient(net, x, at, rng) < 2e-3);
        }
      }
    }
  }

  TEST_CASE("the input gradient equals central differences: conv networks (one and two blocks, two input channels)") {
    nk::Rng rng(5);
    struct Case {
      int64_t height, width, in_channels;
      std::vector<int64_t> channels;
      nk::snn::Reset reset;
    };
    for (const Case& k : {Case{4, 4, 1, {3}, nk::snn::Reset::subtract}, Case{4, 8, 2, {2, 3}, nk::snn::Reset::zero}}) {
      Config c;
      c.set_conv(k.height, k.width, k.in_channels, k.channels, 3);
      c.reset = k.reset;
      const Network net = smooth(c, 8);
      const Matrix x = random_matrix(2, c.sizes[0], rng, 0.0, 1.0);
      for (const Output at : {Output::logits, Output::rates}) {
        INFO("blocks " << k.channels.size() << (at == Output::logits ? " logits" : " rates"));
        CHECK(check_input_gradient(net, x, at, rng) < 2e-3);
      }
    }
  }

  TEST_CASE("rate coding: the input gradient is the coded input's summed over the steps (straight through the draws)") {
    // The coded input's gradient at step t is gV0[t] W0, with gV0 what the
    // training backward hands its sink for layer 0; from the cross-entropy's
    // logit gradient (softmax - one-hot) / B, input_gradient must give the
    // sum over t of those rows.
    Config c;
    c.sizes = {6, 5, 3};
    c.coding = nk::snn::Coding::rate;
    const Network net = smooth(c, 9);
    nk::Rng rng(6);
    const Matrix x = random_matrix(2, 6, rng, 0.2, 0.8);
    const std::vector<int64_t> labels = {2, 0};
    Workspace ws(net.config, 2);
    nk::Rng coding(9);
    nk::snn::forward(net, x, labels.data(), ws, &coding);
    Matrix g = ws.output_probabilities();
    for (int64_t r = 0; r < 2; ++r) g(r, labels[static_cast<size_t>(r)]) -= 1.0f;
    g /= 2.0f;
    Matrix expected = Matrix::Zero(2, 6);
    nk::snn::backward(net, labels.data(), ws, [&](int64_t layer, const Eigen::Ref<const Matrix>& gv, const Eigen::Ref<const Matrix>&) {
      if (layer != 0) return;
      REQUIRE(gv.rows() == net.config.steps * 2);
      for (int64_t t = 0; t < net.config.steps; ++t) expected += gv.middleRows(t * 2, 2) * net.weight[0];
    });
    Matrix grad;
    nk::snn::input_gradient(net, ws, Output::logits, g, grad);
    CHECK(expected.cwiseAbs().maxCoeff() > 1e-4f);
    CHECK((grad - expected).cwiseAbs().maxCoeff() <= 1e-5f * (1.0f + expected.cwiseAbs().maxCoeff()));
    // A g of the wrong width is refused.
    Matrix out;
    CHECK_THROWS_AS(nk::snn::input_gradient(net, ws, Output::logits, Matrix::Zero(2, 4), out), std::invalid_argument);
  }
}
