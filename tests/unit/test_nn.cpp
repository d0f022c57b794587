// test_nn.cpp - nk::nn: every layer's backward against central finite
// differences in float64, forward and backward against torch (Debian's
// python3-torch, tests/unit/nn_reference.py), the model file, the trainer.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>

#include "nk/h5.hpp"
#include "nk/nn/model_file.hpp"
#include "nk/nn/network.hpp"
#include "nk/nn/train.hpp"
#include "nk/rng.hpp"
#include "test_support.hpp"

namespace {

using nk::nn::LayerSpec;
using nk::nn::Network;

// Every layer kind once, in a chain that fits an 8x8x2 input.
const std::vector<std::string> kEveryLayer = {
    "conv2d 2 4 3 2 1", "relu",      "maxpool 2", "upsample 2", "groupnorm 2 4",   "silu",     "batchnorm 4", "avgpool 2",
    "flatten",          "linear 16 7", "layernorm 7", "gelu",   "tanh",           "linear 7 3"};

std::vector<LayerSpec> specs_of(const std::vector<std::string>& lines) {
  std::vector<LayerSpec> specs;
  for (const auto& line : lines) specs.push_back(LayerSpec::parse(line));
  return specs;
}

// Random parameters everywhere (norm weights and biases too, so their
// gradients are not degenerate); running variances positive.
template <class T>
Network<T> random_network(const std::vector<std::string>& lines, nk::nn::Shape input, uint64_t seed) {
  Network<T> net = Network<T>::build(specs_of(lines), input);
  net.init(seed);
  nk::Rng rng(seed + 1);
  for (auto& layer : net.layers) {
    for (auto& w : layer.weight) w = static_cast<T>(rng.normal() * 0.7);
    for (auto& b : layer.bias) b = static_cast<T>(rng.normal() * 0.3);
    for (auto& m : layer.running_mean) m = static_cast<T>(rng.normal() * 0.2);
    for (auto& v : layer.running_var) v = static_cast<T>(0.5 + rng.uniform());
  }
  return net;
}

template <class T>
std::vector<T> randn(size_t n, uint64_t seed) {
  nk::Rng rng(seed);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(rng.normal());
  return v;
}

double dot_loss(Network<double>& net, const std::vector<double>& x, const std::vector<double>& r, int64_t batch) {
  nk::nn::Workspace<double> ws(net, batch);
  nk::nn::forward(net, x.data(), batch, ws);
  double loss = 0;
  for (size_t j = 0; j < r.size(); ++j) loss += ws.output()[j] * r[j];
  return loss;
}

void check_finite_differences(const std::vector<std::string>& lines, nk::nn::Shape input) {
  const int64_t batch = 3;
  Network<double> net = random_network<double>(lines, input, 11);
  std::vector<double> x = randn<double>(static_cast<size_t>(batch * input.size()), 12);
  const std::vector<double> r = randn<double>(static_cast<size_t>(batch * net.output().size()), 13);
  nk::nn::Workspace<double> ws(net, batch);
  nk::nn::Gradients<double> grads;
  grads.resize(net);
  std::vector<double> dx(x.size());
  nk::nn::forward(net, x.data(), batch, ws);
  nk::nn::backward(net, r.data(), batch, ws, &grads, dx.data());
  const double h = 1e-6;
  double worst = 0, scale = 1e-12;
  auto probe = [&](double& value, double analytic) {
    const double saved = value;
    value = saved + h;
    const double up = dot_loss(net, x, r, batch);
    value = saved - h;
    const double down = dot_loss(net, x, r, batch);
    value = saved;
    const double numeric = (up - down) / (2 * h);
    worst = std::max(worst, std::abs(numeric - analytic));
    scale = std::max(scale, std::abs(numeric));
  };
  for (size_t j = 0; j < x.size(); j += 3) probe(x[j], dx[j]);
  for (size_t i = 0; i < net.layers.size(); ++i) {
    for (size_t j = 0; j < net.layers[i].weight.size(); j += 2) probe(net.layers[i].weight[j], grads.weight[i][j]);
    for (size_t j = 0; j < net.layers[i].bias.size(); ++j) probe(net.layers[i].bias[j], grads.bias[i][j]);
  }
  INFO("largest |numeric - analytic| " << worst << " against gradients up to " << scale);
  CHECK(worst <= 1e-6 * scale);
}

}  // namespace

TEST_SUITE("nn") {
  TEST_CASE("layer lines: parse, print back, refuse what is not a layer") {
    for (const auto& line : kEveryLayer) CHECK(LayerSpec::parse(line).text() == line);
    CHECK_THROWS_WITH_AS(LayerSpec::parse("conv3d 1 2 3"), "unknown layer 'conv3d'", std::invalid_argument);
    CHECK_THROWS_AS(LayerSpec::parse("conv2d 1 2 3"), std::invalid_argument);
    CHECK_THROWS_AS(LayerSpec::parse("linear 4 -1"), std::invalid_argument);
    CHECK_THROWS_AS(LayerSpec::parse("linear 4 0"), std::invalid_argument);
    CHECK_THROWS_AS(LayerSpec::parse("maxpool 2x"), std::invalid_argument);
    CHECK_THROWS_AS(LayerSpec::parse("linear 4 99999999999"), std::invalid_argument);
    CHECK_THROWS_AS(Network<float>::build(specs_of({"flatten", "linear 10 3"}), {3, 3, 1}), std::invalid_argument);
    CHECK_THROWS_AS(Network<float>::build(specs_of({"linear 9 3"}), {3, 3, 1}), std::invalid_argument);
    CHECK_THROWS_AS(Network<float>::build(specs_of({"maxpool 4"}), {3, 3, 1}), std::invalid_argument);
    CHECK_THROWS_AS(Network<float>::build(specs_of({"groupnorm 3 4"}), {3, 3, 4}), std::invalid_argument);
  }

  TEST_CASE("every layer's weight and input gradients match central differences (float64)") {
    check_finite_differences(kEveryLayer, {8, 8, 2});
    // Strided, unpadded and padded convolutions on odd sizes; an MLP on vectors.
    check_finite_differences({"conv2d 3 2 2 1 0", "tanh", "conv2d 2 3 3 2 2", "flatten", "linear 36 2"}, {5, 7, 3});
    check_finite_differences({"linear 6 5", "relu", "layernorm 5", "linear 5 4"}, {1, 1, 6});
  }

  TEST_CASE("forward, input and weight gradients match torch (float32 against float64 autograd)") {
    nk::test::ScratchDir dir;
    const std::string path = dir.file("nn_case.h5");
    const int64_t batch = 5;
    const Network<float> net = random_network<float>(kEveryLayer, {8, 8, 2}, 21);
    const std::vector<float> x = randn<float>(static_cast<size_t>(batch * 128), 22);
    const std::vector<float> dy = randn<float>(static_cast<size_t>(batch * 3), 23);
    nk::nn::Workspace<float> ws(net, batch);
    nk::nn::Gradients<float> grads;
    grads.resize(net);
    std::vector<float> dx(x.size());
    nk::nn::forward(net, x.data(), batch, ws);
    nk::nn::backward(net, dy.data(), batch, ws, &grads, dx.data());
    {
      nk::h5::Writer out(path, nk::nn::kModelSchema);
      nk::nn::write_model(out, net, 3, std::nullopt);
      out.write("/case/x", x.data(), {batch, 8, 8, 2}, "N,H,W,C");
      out.write("/case/dy", dy.data(), {batch, 3}, "N,K");
      out.write("/case/y", ws.output(), {batch, 3}, "N,K");
      out.write("/case/dx", dx.data(), {batch, 8, 8, 2}, "N,H,W,C");
      for (size_t i = 0; i < net.layers.size(); ++i) {
        const std::string at = "/case/grads/" + std::to_string(i) + "/";
        if (!grads.weight[i].empty()) out.write(at + "weight", grads.weight[i].data(), net.layers[i].weight_shape(), "");
        if (!grads.bias[i].empty()) out.write(at + "bias", grads.bias[i].data(), net.layers[i].bias_shape(), "");
      }
      out.commit();
    }
    const std::string command = "/usr/bin/python3 " NK_SOURCE_DIR "/tests/unit/nn_reference.py " + path;
    CHECK(std::system(command.c_str()) == 0);
  }

  TEST_CASE("float convolutions on the direct paths (fixed widths 16, 24, 48, 96, any other; the input gradient as a flipped convolution) equal float64") {
    // float64 networks take the column-matrix path throughout: an independent reference.
    for (const auto& [c_in, c_out] : std::vector<std::pair<int, int>>{{16, 24}, {24, 48}, {48, 96}, {5, 7}, {96, 16}, {3, 40}}) {
      const std::vector<std::string> lines = {"conv2d " + std::to_string(c_in) + " " + std::to_string(c_out) + " 3 1 1", "silu",
                                              "groupnorm 1 " + std::to_string(c_out)};
      const nk::nn::Shape input{6, 7, c_in};
      const int64_t batch = 2;
      Network<double> ref = random_network<double>(lines, input, 21);
      Network<float> net = Network<float>::build(specs_of(lines), input);
      net.init(21);
      for (size_t l = 0; l < net.layers.size(); ++l) {
        for (size_t k = 0; k < net.layers[l].weight.size(); ++k) net.layers[l].weight[k] = static_cast<float>(ref.layers[l].weight[k] * 0.2);
        for (size_t k = 0; k < net.layers[l].bias.size(); ++k) net.layers[l].bias[k] = static_cast<float>(ref.layers[l].bias[k]);
        for (size_t k = 0; k < ref.layers[l].weight.size(); ++k) ref.layers[l].weight[k] = net.layers[l].weight[k];
        for (size_t k = 0; k < ref.layers[l].bias.size(); ++k) ref.layers[l].bias[k] = net.layers[l].bias[k];
      }
      const std::vector<double> xd = randn<double>(static_cast<size_t>(batch * input.size()), 22);
      const std::vector<double> gd = randn<double>(static_cast<size_t>(batch * net.output().size()), 23);
      const std::vector<float> xf(xd.begin(), xd.end()), gf(gd.begin(), gd.end());
      nk::nn::Workspace<double> wsd(ref, batch);
      nk::nn::Workspace<float> wsf(net, batch);
      std::vector<double> dxd(xd.size());
      std::vector<float> dxf(xf.size());
      nk::nn::forward(ref, xd.data(), batch, wsd);
      nk::nn::forward(net, xf.data(), batch, wsf);
      nk::nn::backward(ref, gd.data(), batch, wsd, static_cast<nk::nn::Gradients<double>*>(nullptr), dxd.data());
      nk::nn::backward(net, gf.data(), batch, wsf, static_cast<nk::nn::Gradients<float>*>(nullptr), dxf.data());
      double worst_y = 0, worst_dx = 0, top_dx = 0;
      for (size_t j = 0; j < gd.size(); ++j) worst_y = std::max(worst_y, std::abs(wsf.output()[j] - wsd.output()[j]));
      for (size_t j = 0; j < dxd.size(); ++j) {
        worst_dx = std::max(worst_dx, std::abs(dxf[j] - dxd[j]));
        top_dx = std::max(top_dx, std::abs(dxd[j]));
      }
      INFO(c_in << " -> " << c_out << ": forward error " << worst_y << ", input gradient error " << worst_dx << " of " << top_dx);
      CHECK(worst_y < 1e-4);
      CHECK(worst_dx < 1e-4 * (1 + top_dx));
    }
  }

  TEST_CASE("inference pass: fused conv2d + relu (+ maxpool) equals the layer-by-layer forward") {
    for (const auto& lines : std::vector<std::vector<std::string>>{
             {"conv2d 1 8 3 1 1", "relu", "maxpool 2", "conv2d 8 16 3 1 1", "relu", "maxpool 2", "flatten", "linear 256 5"},
             {"conv2d 2 12 3 2 1", "relu", "conv2d 12 4 2 1 0", "relu", "maxpool 3", "flatten", "linear 4 3"},
             {"conv2d 2 32 3 1 0", "relu", "flatten", "linear 1152 2"}}) {
      const nk::nn::Shape input = lines[0] == "conv2d 1 8 3 1 1" ? nk::nn::Shape{17, 18, 1} : nk::nn::Shape{8, 8, 2};
      const Network<float> net = random_network<float>(lines, input, 41);
      const int64_t batch = 7;
      const std::vector<float> x = randn<float>(static_cast<size_t>(batch * input.size()), 42);
      nk::nn::Workspace<float> a(net, batch), b(net, batch);
      nk::nn::forward(net, x.data(), batch, a, nk::nn::Pass::training);
      nk::nn::forward(net, x.data(), batch, b, nk::nn::Pass::inference);
      const int64_t n = batch * net.output().size();
      double worst = 0, scale = 0;
      for (int64_t j = 0; j < n; ++j) {
        worst = std::max(worst, static_cast<double>(std::abs(a.output()[j] - b.output()[j])));
        scale = std::max(scale, static_cast<double>(std::abs(a.output()[j])));
      }
      INFO(lines[0] << ": " << worst << " of " << scale);
      CHECK(worst <= 1e-5 * scale);
    }
  }

  TEST_CASE("model file: round trip, and every malformed file is exit 3 naming the dataset") {
    nk::test::ScratchDir dir;
    const Network<float> net = random_network<float>(kEveryLayer, {8, 8, 2}, 31);
    auto write = [&](const std::string& name, const std::function<void(nk::h5::Writer&)>& edit) {
      nk::h5::Writer out(dir.file(name), nk::nn::kModelSchema);
      nk::nn::write_model(out, net, 3, 0.25);
      if (edit) edit(out);
      out.commit();
      return dir.file(name);
    };
    const nk::nn::ModelFile back = nk::nn::read_model(write("good.h5", nullptr));
    CHECK(back.classes == 3);
    CHECK(back.sigma.value() == 0.25);
    REQUIRE(back.network.layers.size() == net.layers.size());
    for (size_t i = 0; i < net.layers.size(); ++i) {
      CHECK(back.network.layers[i].weight == net.layers[i].weight);
      CHECK(back.network.layers[i].running_var == net.layers[i].running_var);
    }
    auto refused = [&](const std::string& path, const std::string& dataset) {
      try {
        nk::nn::read_model(path);
      } catch (const nk::Error& e) {
        INFO(e.what());
        CHECK(e.code() == nk::Exit::input);
        CHECK(std::string(e.what()).find(dataset) != std::string::npos);
        return;
      }
      FAIL("accepted " << path);
    };
    // Files built by hand: another arch line, a transposed weight, a NaN.
    auto hand = [&](const std::string& name, const std::vector<std::string>& arch, const std::vector<int64_t>& wshape,
                    float first) {
      nk::h5::Writer out(dir.file(name), nk::nn::kModelSchema);
      out.write_strings("/model/arch", arch, "L");
      out.attr("/model", "input", std::string("1,1,4"));
      std::vector<float> w(static_cast<size_t>(wshape[0] * wshape[1]), 0.5f), b(3, 0.f);
      w[0] = first;
      out.allow_nonfinite("/model/params/000/weight");
      out.write("/model/params/000/weight", w.data(), wshape, "");
      out.write("/model/params/000/bias", b.data(), {3}, "");
      out.commit();
      return dir.file(name);
    };
    CHECK_NOTHROW(nk::nn::read_model(hand("ok.h5", {"linear 4 3"}, {3, 4}, 0.f)));
    refused(hand("unknown.h5", {"linear 4 3", "softplus"}, {3, 4}, 0.f), "/model/arch");
    refused(hand("transposed.h5", {"linear 4 3"}, {4, 3}, 0.f), "/model/params/000/weight");
    refused(hand("nan.h5", {"linear 4 3"}, {3, 4}, std::nanf("")), "/model/params/000/weight");
    refused(hand("chain.h5", {"linear 4 3", "linear 4 2"}, {3, 4}, 0.f), "/model/arch");
    refused(write("classes.h5", [](nk::h5::Writer& out) { out.attr("/model", "classes", int64_t{7}); }), "/model");
  }

  TEST_CASE("trainer: a CNN with noise augmentation learns two classes; same seed, same weights") {
    const int64_t n = 256;
    std::vector<float> x(static_cast<size_t>(n * 36));
    std::vector<int64_t> y(static_cast<size_t>(n));
    nk::Rng rng(5);
    for (int64_t i = 0; i < n; ++i) {
      y[i] = i % 2;
      for (int64_t p = 0; p < 36; ++p) {
        const bool left = (p % 6) < 3;
        x[i * 36 + p] = static_cast<float>((left == (y[i] == 1) ? 0.8 : 0.2) + 0.1 * rng.normal());
      }
    }
    auto run = [&] {
      Network<float> net = Network<float>::build(specs_of({"conv2d 1 4 3 1 1", "relu", "maxpool 2", "flatten", "linear 36 2"}), {6, 6, 1});
      net.init(3);
      nk::nn::ClassifierTraining config;
      config.epochs = 8;
      config.batch = 32;
      config.learning_rate = 0.01;
      config.noise_sigma = 0.25;
      config.seed = 9;
      nk::nn::train_classifier(net, x.data(), y.data(), n, config, nullptr);
      return net;
    };
    const Network<float> a = run(), b = run();
    const std::vector<int64_t> predicted = nk::nn::predict_classes(a, x.data(), n);
    int64_t right = 0;
    for (int64_t i = 0; i < n; ++i) right += predicted[i] == y[i];
    CHECK(right >= n * 95 / 100);
    CHECK(a.layers[0].weight == b.layers[0].weight);
  }
}
