// spike-sft.cpp - the LIF network: BPTT equals finite differences (smooth
// spikes, both resets, direct and rate coding, one and two hidden layers),
// the forward pass follows the LIF equations step by step, and training
// learns a separable problem.
#include <doctest/doctest.h>

#include <Eigen/SVD>
#include <cmath>

#include "nk/rng.hpp"
#include "nk/nn/optim.hpp"
#include "nk/snn/snn.hpp"
#include "spike-sft/spike_sft.hpp"
#include "spike-sft/align.hpp"
#include "spike-sft/base_currents.hpp"

using namespace snn;

namespace {

double loss_of(const Network& net, const Matrix& x, const std::vector<int64_t>& y, uint64_t seed) {
  Workspace ws(net.config, x.rows());
  nk::Rng rng(seed);
  return forward(net, x, y.data(), ws, &rng).loss;
}

Matrix random_inputs(int64_t rows, int64_t cols, nk::Rng& rng) {
  Matrix x(rows, cols);
  for (int64_t i = 0; i < x.size(); ++i) x.data()[i] = static_cast<float>(rng.uniform());
  return x;
}

/// BPTT's gradient of every 'stride'-th weight and of every bias against
/// central finite differences of the loss (rate coding: the same draws);
/// returns the number of entries checked.
int check_bptt(const Network& net, const Matrix& x, const std::vector<int64_t>& y, int64_t stride) {
  Workspace ws(net.config, x.rows());
  nk::Rng coding_rng(5);
  forward(net, x, y.data(), ws, &coding_rng);
  std::vector<Matrix> gw;
  std::vector<Vector> gb;
  for (size_t l = 0; l < net.weight.size(); ++l) {
    gw.push_back(Matrix::Zero(net.weight[l].rows(), net.weight[l].cols()));
    gb.push_back(Vector::Zero(net.bias[l].size()));
  }
  backward(net, y.data(), ws, gw, gb);
  const float eps = 2e-3f;
  int checked = 0;
  for (size_t l = 0; l < net.weight.size(); ++l) {
    for (int64_t i = 0; i < net.weight[l].size(); i += stride) {
      Network plus = net, minus = net;
      plus.weight[l].data()[i] += eps;
      minus.weight[l].data()[i] -= eps;
      const double fd = (loss_of(plus, x, y, 5) - loss_of(minus, x, y, 5)) / (2.0 * eps);
      ++checked;
      INFO("layer " << l << " weight " << i << ": fd " << fd << " bptt " << gw[l].data()[i]);
      CHECK(std::abs(fd - gw[l].data()[i]) <= 2e-3 + 2e-2 * std::abs(fd));
    }
    for (int64_t i = 0; i < net.bias[l].size(); ++i) {
      Network plus = net, minus = net;
      plus.bias[l][i] += eps;
      minus.bias[l][i] -= eps;
      const double fd = (loss_of(plus, x, y, 5) - loss_of(minus, x, y, 5)) / (2.0 * eps);
      ++checked;
      INFO("layer " << l << " bias " << i);
      CHECK(std::abs(fd - gb[l][i]) <= 2e-3 + 2e-2 * std::abs(fd));
    }
  }
  return checked;
}

}  // namespace

TEST_SUITE("spike-sft") {
  TEST_CASE("the low-rank step equals singular value thresholding by a dense SVD, on the masked entries only") {
    for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{30, 70}, {70, 30}, {12, 12}}) {
      INFO(rows << "x" << cols);
      nk::Rng rng(static_cast<uint64_t>(rows * 100 + cols));
      snn::Matrix base(rows, cols), w(rows, cols);
      for (int64_t e = 0; e < base.size(); ++e) {
        base.data()[e] = static_cast<float>(rng.normal());
        // A sparse delta: about one entry in five has moved.
        w.data()[e] = base.data()[e] + (rng.below(5) == 0 ? static_cast<float>(0.3 * rng.normal()) : 0.0f);
      }
      std::vector<int32_t> index;  // the mask: every third entry (moved or not)
      for (int32_t e = 0; e < static_cast<int32_t>(w.size()); e += 3) index.push_back(e);
      const double rho = 0.4;
      const Eigen::MatrixXd delta = (w - base).cast<double>();
      const Eigen::BDCSVD<Eigen::MatrixXd> svd(delta, Eigen::ComputeThinU | Eigen::ComputeThinV);
      const Eigen::VectorXd s = (svd.singularValues().array() - rho * svd.singularValues()[0]).max(0.0);
      const Eigen::MatrixXd expected = svd.matrixU() * s.asDiagonal() * svd.matrixV().transpose();
      CHECK(s.minCoeff() == 0.0);  // some directions are removed
      snn::Matrix shrunk = w;
      spike::shrink_singular_values(shrunk, base, index, rho);
      double worst = 0;
      for (int64_t e = 0; e < w.size(); ++e) {
        const bool masked = e % 3 == 0;
        const double want = masked ? base.data()[e] + expected.data()[(e % cols) * rows + e / cols] : w.data()[e];
        worst = std::max(worst, std::abs(static_cast<double>(shrunk.data()[e]) - want));
      }
      CHECK(worst < 1e-5);
    }
  }

  TEST_CASE("cached base currents plus the sparse or low-rank delta equal the dense first layer, and forward takes them") {
    Config c;
    c.sizes = {40, 24, 5};
    c.steps = 4;
    nk::Rng rng(31);
    const Network base = Network::init(c, rng);
    const Matrix examples = random_inputs(50, 40, rng);
    spike::BaseCurrents cache(base, examples);
    CHECK(cache.bytes() == 50 * 24 * 4);
    // A sparse delta: the mask (every 7th entry, some still unmoved) and
    // entries that moved under an earlier mask.
    Network adapted = base;
    std::vector<int32_t> mask;
    for (int32_t e = 0; e < static_cast<int32_t>(adapted.weight[0].size()); e += 7) {
      mask.push_back(e);
      if (e % 3 != 0) adapted.weight[0].data()[e] += static_cast<float>(rng.normal());
    }
    for (int32_t e = 3; e < static_cast<int32_t>(adapted.weight[0].size()); e += 50) adapted.weight[0].data()[e] -= 0.5f;
    cache.set_support(adapted.weight[0], base.weight[0], mask);
    std::vector<int64_t> rows;  // 45 examples, some twice: a tile of 32 and a rest of 13
    for (int64_t r = 0; r < 45; ++r) rows.push_back(r * 17 % 50);
    Matrix x(static_cast<Eigen::Index>(rows.size()), 40), x_t(40, static_cast<Eigen::Index>(rows.size())), got(static_cast<Eigen::Index>(rows.size()), 24);
    for (size_t r = 0; r < rows.size(); ++r) x.row(static_cast<Eigen::Index>(r)) = examples.row(rows[r]);
    x_t = x.transpose();
    // Entries that move after set_support (within the mask) are read at their current value.
    adapted.weight[0].data()[mask[5]] += 0.25f;
    cache.sparse_currents(rows.data(), x_t, adapted.weight[0], base.weight[0], got);
    Matrix want = x * adapted.weight[0].transpose();
    want.rowwise() += base.bias[0].transpose();
    CHECK((got - want).cwiseAbs().maxCoeff() < 1e-5f);
    // LoRA: Delta = U V^T.
    Eigen::MatrixXf u(24, 3), v(40, 3);
    for (int64_t e = 0; e < u.size(); ++e) u.data()[e] = static_cast<float>(rng.normal());
    for (int64_t e = 0; e < v.size(); ++e) v.data()[e] = static_cast<float>(0.2 * rng.normal());
    cache.low_rank_currents(rows.data(), x, u, v, got);
    Matrix lora = base.weight[0] + u * v.transpose();
    want = x * lora.transpose();
    want.rowwise() += base.bias[0].transpose();
    CHECK((got - want).cwiseAbs().maxCoeff() < 1e-5f);
    // forward() with the given currents runs the network on them.
    Network low_rank = base;
    low_rank.weight[0] = lora;
    const std::vector<int64_t> y(rows.size(), 1);
    Workspace given(c, x.rows()), dense(c, x.rows());
    const BatchStats a = forward(low_rank, x, y.data(), given, nullptr, &got);
    const BatchStats b = forward(low_rank, x, y.data(), dense, nullptr);
    CHECK(given.currents(0) == got);
    CHECK((given.currents(0) - dense.currents(0)).cwiseAbs().maxCoeff() < 1e-5f);
    CHECK(a.loss == doctest::Approx(b.loss).epsilon(1e-3));
    // Only a dense first layer under direct coding takes them.
    Config rate = c;
    rate.coding = Coding::rate;
    CHECK_FALSE(spike::BaseCurrents::applies(rate));
    Network rated = base;
    rated.config = rate;
    Workspace wr(rate, x.rows());
    nk::Rng coding(1);
    CHECK_THROWS_AS(forward(rated, x, y.data(), wr, &coding, &got), std::invalid_argument);
  }

  TEST_CASE("the masked gradient's sampled dot products equal float64 dot products of the factors' rows") {
    nk::Rng rng(41);
    for (const int64_t steps : {int64_t{37}, int64_t{128}}) {  // a rest after the vector blocks, and none
      INFO(steps << " rows of steps and examples");
      const int64_t out = 9, in = 13;
      Matrix gv_t(out, steps), x_t(in, steps);
      for (int64_t e = 0; e < gv_t.size(); ++e) gv_t.data()[e] = static_cast<float>(rng.normal());
      for (int64_t e = 0; e < x_t.size(); ++e) x_t.data()[e] = static_cast<float>(rng.uniform());
      std::vector<int32_t> index;
      for (int32_t e = 1; e < out * in; e += 4) index.push_back(e);
      std::vector<float> grad(index.size(), -1.0f);
      spike::sampled_dots(0, 5, index.data(), in, gv_t.data(), x_t.data(), steps, grad.data());
      spike::sampled_dots(5, static_cast<int64_t>(index.size()), index.data(), in, gv_t.data(), x_t.data(), steps, grad.data());
      double worst = 0;
      for (size_t e = 0; e < index.size(); ++e) {
        const int64_t i = index[e] / in, j = index[e] % in;
        const double want = gv_t.row(i).cast<double>().dot(x_t.row(j).cast<double>());
        worst = std::max(worst, std::abs(want - static_cast<double>(grad[e])));
      }
      CHECK(worst < 1e-4);
    }
  }

  TEST_CASE("neuron alignment undoes a permutation of hidden neurons, and a permutation keeps the function") {
    Config c;
    c.sizes = {20, 16, 12, 5};
    c.steps = 4;
    nk::Rng rng(8);
    const Network a = Network::init(c, rng);
    // Permute both hidden layers.
    spike::Alignment shuffle;
    for (int64_t h = 0; h < c.hidden_layers(); ++h) {
      std::vector<int> p(static_cast<size_t>(c.sizes[static_cast<size_t>(h) + 1]));
      for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<int>(i);
      for (size_t i = p.size(); i > 1; --i) std::swap(p[i - 1], p[rng.below(i)]);
      shuffle.perm.push_back(p);
    }
    Network b = a;
    spike::permute_neurons(b, shuffle);
    const Matrix x = random_inputs(7, 20, rng);
    const std::vector<int64_t> y = {0, 1, 2, 3, 4, 0, 1};
    CHECK(loss_of(b, x, y, 3) == doctest::Approx(loss_of(a, x, y, 3)).epsilon(1e-6));
    CHECK(b.weight[0] != a.weight[0]);
    const spike::Alignment al = spike::match_neurons(a, b);
    CHECK(!al.identity());
    spike::permute_neurons(b, al);
    for (size_t l = 0; l < a.weight.size(); ++l) {
      CHECK(b.weight[l] == a.weight[l]);
      CHECK(b.bias[l] == a.bias[l]);
    }
    // Matching a network to itself is the identity (a no-op).
    CHECK(spike::match_neurons(a, a).identity());
  }

  TEST_CASE("BPTT equals central finite differences with smooth spikes (both resets, both codings, 1-2 hidden layers)") {
    struct Case {
      std::vector<int64_t> sizes;
      Reset reset;
      Coding coding;
    };
    for (const Case& k : {Case{{6, 5, 3}, Reset::subtract, Coding::direct}, Case{{6, 5, 3}, Reset::zero, Coding::direct},
                          Case{{5, 4, 4, 3}, Reset::subtract, Coding::rate}, Case{{5, 4, 4, 3}, Reset::zero, Coding::direct}}) {
      Config c;
      c.sizes = k.sizes;
      c.steps = 5;
      c.beta = 0.8f;
      c.threshold = 0.7f;
      c.reset = k.reset;
      c.coding = k.coding;
      c.surrogate = Surrogate::sigmoid;
      c.slope = 3.0f;
      nk::Rng rng(11);
      Network net = Network::init(c, rng);
      for (auto& b : net.bias) b.setConstant(0.2f);
      const Matrix x = random_inputs(4, c.sizes[0], rng);
      CHECK(check_bptt(net, x, {0, 2, 1, 2}, 3) > 20);
    }
  }

  TEST_CASE("forward follows the LIF equations step by step (spikes, subtract and zero reset)") {
    for (Reset reset : {Reset::subtract, Reset::zero}) {
      Config c;
      c.sizes = {1, 1, 2};
      c.steps = 6;
      c.beta = 0.5f;
      c.threshold = 1.0f;
      c.reset = reset;
      nk::Rng rng(1);
      Network net = Network::init(c, rng);
      net.weight[0](0, 0) = 0.8f;
      net.bias[0][0] = 0.0f;
      Matrix x(1, 1);
      x(0, 0) = 1.0f;
      Workspace ws(c, 1);
      const std::vector<int64_t> y = {0};
      const BatchStats s = forward(net, x, y.data(), ws, nullptr);
      // By hand: I = 0.8 each step; V = 0.5 U + 0.8; spike when V > 1.
      float u = 0;
      int spikes = 0;
      for (int t = 0; t < 6; ++t) {
        const float v = 0.5f * u + 0.8f;
        const bool fired = v > 1.0f;
        spikes += fired;
        u = reset == Reset::subtract ? v - (fired ? 1.0f : 0.0f) : (fired ? 0.0f : v);
      }
      CHECK(spikes > 0);
      CHECK(s.rate[0] == doctest::Approx(spikes / 6.0));
    }
  }

  TEST_CASE("Adam on BPTT gradients learns a separable problem with binary spikes") {
    Config c;
    c.sizes = {8, 32, 2};
    c.steps = 6;
    nk::Rng rng(3);
    Network net = Network::init(c, rng);
    const int64_t n = 256;
    Matrix x(n, 8);
    std::vector<int64_t> y(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      y[static_cast<size_t>(i)] = i % 2;
      for (int64_t j = 0; j < 8; ++j) x(i, j) = static_cast<float>(0.3 * rng.uniform() + ((j < 4) == (i % 2 == 0) ? 0.6 : 0.0));
    }
    Eigen::VectorXd theta = net.flat();
    nk::AdamConfig config;
    config.learning_rate = 5e-3;
    nk::Adam adam(theta.size(), config);
    Workspace ws(c, n);
    DenseGradient gradient(net);
    BatchStats s;
    for (int step = 0; step < 150; ++step) {
      s = forward(net, x, y.data(), ws, &rng);
      gradient.compute(net, y.data(), ws);
      adam.step(theta, gradient.flat());
      net.set_flat(theta);
    }
    CHECK(s.correct >= n * 95 / 100);
  }

  TEST_CASE("conv-LIF-pool: BPTT equals finite differences (both resets, both codings, one and two blocks)") {
    struct Case {
      int64_t height, width, in_channels;
      std::vector<int64_t> channels;
      Reset reset;
      Coding coding;
    };
    for (const Case& k : {Case{4, 4, 1, {3}, Reset::subtract, Coding::direct}, Case{4, 8, 2, {2, 3}, Reset::zero, Coding::direct},
                          Case{4, 4, 2, {2, 2}, Reset::subtract, Coding::rate}}) {
      Config c;
      c.set_conv(k.height, k.width, k.in_channels, k.channels, 3);
      c.steps = 4;
      c.beta = 0.8f;
      c.threshold = 0.7f;
      c.reset = k.reset;
      c.coding = k.coding;
      c.surrogate = Surrogate::sigmoid;
      c.slope = 3.0f;
      nk::Rng rng(21);
      Network net = Network::init(c, rng);
      for (auto& b : net.bias) b.setConstant(0.2f);
      for (int64_t l = 0; l < c.layers(); ++l) {
        CHECK(net.weight[static_cast<size_t>(l)].rows() == c.weight_rows(l));
        CHECK(net.weight[static_cast<size_t>(l)].cols() == c.weight_cols(l));
      }
      CHECK(check_bptt(net, random_inputs(3, c.sizes[0], rng), {0, 2, 1}, 2) > 20);
    }
  }

  TEST_CASE("a conv-LIF-pool block equals the MLP with its convolution as a dense matrix and the pooling folded into the readout") {
    const int64_t height = 4, width = 6, in_ch = 2, maps = 3, classes = 4;
    Config c;
    c.set_conv(height, width, in_ch, {maps}, classes);
    c.steps = 5;
    nk::Rng rng(4);
    Network conv = Network::init(c, rng);
    for (int64_t m = 0; m < maps; ++m) conv.bias[0][m] = 0.1f * static_cast<float>(m);
    conv.bias[1].setConstant(0.05f);
    // The same network written out: hidden unit (y, x, m) is row (y*W + x)*M + m.
    Config d;
    d.sizes = {height * width * in_ch, height * width * maps, classes};
    d.steps = c.steps;
    Network mlp = Network::init(d, rng);
    mlp.weight[0].setZero();
    for (int64_t y = 0; y < height; ++y)
      for (int64_t x = 0; x < width; ++x)
        for (int64_t m = 0; m < maps; ++m) {
          const int64_t unit = (y * width + x) * maps + m;
          mlp.bias[0][unit] = conv.bias[0][m];
          for (int64_t dy = -1; dy <= 1; ++dy)
            for (int64_t dx = -1; dx <= 1; ++dx) {
              if (y + dy < 0 || y + dy >= height || x + dx < 0 || x + dx >= width) continue;
              for (int64_t ch = 0; ch < in_ch; ++ch)
                mlp.weight[0](unit, ((y + dy) * width + x + dx) * in_ch + ch) = conv.weight[0](m, ch * 9 + (dy + 1) * 3 + dx + 1);
            }
        }
    // Readout unit m * P + p (pooled position p = y2 * W/2 + x2) averages its four positions.
    mlp.weight[1].setZero();
    mlp.bias[1] = conv.bias[1];
    const int64_t positions = (height / 2) * (width / 2);
    for (int64_t k = 0; k < classes; ++k)
      for (int64_t y = 0; y < height; ++y)
        for (int64_t x = 0; x < width; ++x)
          for (int64_t m = 0; m < maps; ++m)
            mlp.weight[1](k, (y * width + x) * maps + m) = 0.25f * conv.weight[1](k, m * positions + (y / 2) * (width / 2) + x / 2);
    const Matrix x = random_inputs(5, c.sizes[0], rng);
    const std::vector<int64_t> y = {0, 1, 2, 3, 0};
    Workspace wc(c, 5), wm(d, 5);
    const BatchStats a = forward(conv, x, y.data(), wc, nullptr), b = forward(mlp, x, y.data(), wm, nullptr);
    CHECK(a.rate[0] > 0.0);
    CHECK(a.rate[0] == doctest::Approx(b.rate[0]).epsilon(1e-6));
    CHECK(a.loss == doctest::Approx(b.loss).epsilon(1e-5));
    CHECK(a.correct == b.correct);
  }

  TEST_CASE("conv networks refuse images that do not halve evenly") {
    Config c;
    CHECK_THROWS_AS(c.set_conv(6, 6, 1, {4, 4}, 10), std::invalid_argument);
    CHECK_NOTHROW(c.set_conv(28, 28, 1, {8, 16}, 10));
    CHECK(c.sizes == std::vector<int64_t>{784, 8 * 14 * 14, 16 * 7 * 7, 10});
    CHECK(c.parameter_count() == 8 * (9 + 1) + 16 * (72 + 1) + 10 * (784 + 1));
  }

  TEST_CASE("channel alignment of conv networks: a permutation keeps the function, matching undoes it") {
    Config c;
    c.set_conv(8, 8, 1, {6, 5}, 4);
    c.steps = 4;
    nk::Rng rng(9);
    const Network a = Network::init(c, rng);
    spike::Alignment shuffle;
    for (int64_t h = 0; h < c.hidden_layers(); ++h) {
      std::vector<int> p(static_cast<size_t>(c.channels[static_cast<size_t>(h)]));
      for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<int>(i);
      for (size_t i = p.size(); i > 1; --i) std::swap(p[i - 1], p[rng.below(i)]);
      shuffle.perm.push_back(p);
    }
    Network b = a;
    spike::permute_neurons(b, shuffle);
    const Matrix x = random_inputs(6, c.sizes[0], rng);
    const std::vector<int64_t> y = {0, 1, 2, 3, 0, 1};
    CHECK(loss_of(b, x, y, 3) == doctest::Approx(loss_of(a, x, y, 3)).epsilon(1e-6));
    CHECK(b.weight[1] != a.weight[1]);
    const spike::Alignment al = spike::match_neurons(a, b);
    CHECK(!al.identity());
    spike::permute_neurons(b, al);
    for (size_t l = 0; l < a.weight.size(); ++l) {
      CHECK(b.weight[l] == a.weight[l]);
      CHECK(b.bias[l] == a.bias[l]);
    }
  }
}
