// test_nn_unet.cpp - nk::nn's U-Net (time embedding, residual blocks, down-
// and up-sampling, skip concatenation, conditioning): input, condition and
// parameter gradients against central differences in float64; forward and
// every gradient against torch (tests/unit/unet_reference.py, an independent
// rebuild of the program in torch.nn.functional); the file round trip and its
// refusals.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <functional>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/nn/model_file.hpp"
#include "nk/nn/unet.hpp"
#include "nk/rng.hpp"
#include "test_support.hpp"

namespace {

using nk::nn::UNet;
using nk::nn::UNetConfig;

UNetConfig tiny(int64_t cond_dim) {
  UNetConfig c;
  c.image = {8, 8, 2};
  c.channels = {4, 8};
  c.groups = 2;
  c.time_dim = 6;
  c.cond_dim = cond_dim;
  return c;
}

// Random parameters everywhere, norm weights and biases too.
template <class T>
UNet<T> random_unet(const UNetConfig& config, uint64_t seed) {
  UNet<T> net = UNet<T>::build(config);
  net.init(seed);
  nk::Rng rng(seed + 1);
  for (auto& part : net.parts)
    for (auto& layer : part.layers) {
      for (auto& w : layer.weight) w = static_cast<T>(rng.normal() * 0.5);
      for (auto& b : layer.bias) b = static_cast<T>(rng.normal() * 0.3);
    }
  return net;
}

template <class T>
std::vector<T> randn(size_t n, uint64_t seed, double scale = 1.0) {
  nk::Rng rng(seed);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(rng.normal() * scale);
  return v;
}

}  // namespace

TEST_SUITE("nn_unet") {
  TEST_CASE("configuration: text round trip; widths, groups and sides that do not fit are refused") {
    const UNetConfig c = tiny(3);
    const UNetConfig back = UNetConfig::parse(c.text(), c.image);
    CHECK(back.channels == c.channels);
    CHECK(back.text() == c.text());
    UNetConfig bad = tiny(0);
    bad.channels = {4, 5};  // 5 is not a multiple of the 2 groups
    CHECK_THROWS_AS(UNet<float>::build(bad), std::invalid_argument);
    bad = tiny(0);
    bad.channels = {4, 8, 8, 8};  // 8 / 2^3 = 1: fits; a fifth level would not
    CHECK_NOTHROW(UNet<float>::build(bad));
    bad.channels = {4, 8, 8, 8, 8};
    CHECK_THROWS_AS(UNet<float>::build(bad), std::invalid_argument);
    bad = tiny(0);
    bad.groups = 3;
    CHECK_THROWS_AS(UNet<float>::build(bad), std::invalid_argument);
    CHECK_THROWS_AS(UNetConfig::parse("channels=4,8 groups=2", {8, 8, 1}), std::invalid_argument);
    CHECK_THROWS_AS(UNetConfig::parse("channels=4,x groups=2 time_dim=6 cond_dim=0", {8, 8, 1}), std::invalid_argument);
    // The default prior: 28 -> 14 -> 7, about a million parameters.
    const UNet<float> prior = UNet<float>::build(UNetConfig{});
    MESSAGE("default U-Net: " << prior.parameter_count() << " parameters, " << prior.forward_macs() / 1e6
                              << " M multiply-adds per image");
    CHECK(prior.parameter_count() > 500000);
    CHECK(prior.parameter_count() < 3000000);
  }

  TEST_CASE("U-Net gradients (input, condition, every part's parameters) match central differences (float64)") {
    const int64_t batch = 2;
    UNet<double> net = random_unet<double>(tiny(3), 41);
    std::vector<double> x = randn<double>(static_cast<size_t>(batch * 128), 42);
    std::vector<double> cond = randn<double>(static_cast<size_t>(batch * 3), 43);
    const std::vector<double> t = {0.13, 0.71};
    const std::vector<double> r = randn<double>(x.size(), 44);
    nk::nn::UNetWorkspace<double> ws(net, batch);
    nk::nn::UNetGradients<double> grads;
    grads.resize(net);
    std::vector<double> dx(x.size()), dcond(cond.size());
    nk::nn::forward(net, x.data(), t.data(), cond.data(), batch, ws);
    nk::nn::backward(net, r.data(), ws, &grads, dx.data(), dcond.data());
    auto loss = [&]() {
      nk::nn::UNetWorkspace<double> w(net, batch);
      nk::nn::forward(net, x.data(), t.data(), cond.data(), batch, w);
      double s = 0;
      for (size_t j = 0; j < r.size(); ++j) s += w.output()[j] * r[j];
      return s;
    };
    const double h = 1e-6;
    double worst = 0, scale = 1e-12;
    int64_t probes = 0;
    auto probe = [&](double& value, double analytic) {
      const double saved = value;
      value = saved + h;
      const double up = loss();
      value = saved - h;
      const double down = loss();
      value = saved;
      const double numeric = (up - down) / (2 * h);
      worst = std::max(worst, std::abs(numeric - analytic));
      scale = std::max(scale, std::abs(numeric));
      ++probes;
    };
    for (size_t j = 0; j < x.size(); j += 5) probe(x[j], dx[j]);
    for (size_t j = 0; j < cond.size(); ++j) probe(cond[j], dcond[j]);
    for (size_t p = 0; p < net.parts.size(); ++p) {
      auto& layers = net.parts[p].layers;
      for (size_t i = 0; i < layers.size(); ++i) {
        for (size_t j = 0; j < layers[i].weight.size(); j += 11) probe(layers[i].weight[j], grads.parts[p].weight[i][j]);
        for (size_t j = 0; j < layers[i].bias.size(); j += 3) probe(layers[i].bias[j], grads.parts[p].bias[i][j]);
      }
    }
    INFO(probes << " probes; largest |numeric - analytic| " << worst << " against gradients up to " << scale);
    CHECK(probes > 300);
    CHECK(worst <= 1e-6 * scale);
  }

  TEST_CASE("U-Net forward and gradients match torch (float32 against float64 autograd)") {
    nk::test::ScratchDir dir;
    const std::string path = dir.file("unet_case.h5");
    const int64_t batch = 3;
    UNetConfig config;
    config.image = {8, 8, 1};
    config.channels = {8, 16, 16};
    config.groups = 4;
    config.time_dim = 16;
    config.cond_dim = 5;
    const UNet<float> net = random_unet<float>(config, 51);
    const std::vector<float> x = randn<float>(static_cast<size_t>(batch * 64), 52);
    const std::vector<float> cond = randn<float>(static_cast<size_t>(batch * 5), 53);
    const std::vector<float> t = {0.0f, 0.37f, 0.999f};
    const std::vector<float> dv = randn<float>(x.size(), 54);
    nk::nn::UNetWorkspace<float> ws(net, batch);
    nk::nn::UNetGradients<float> grads;
    grads.resize(net);
    std::vector<float> dx(x.size()), dcond(cond.size());
    nk::nn::forward(net, x.data(), t.data(), cond.data(), batch, ws);
    nk::nn::backward(net, dv.data(), ws, &grads, dx.data(), dcond.data());
    {
      nk::h5::Writer out(path, "nk-test.unet/1");
      nk::nn::write_unet(out, net, "/prior");
      out.write("/case/x", x.data(), {batch, 8, 8, 1}, "N,H,W,C");
      out.write("/case/t", t.data(), {batch}, "N");
      out.write("/case/cond", cond.data(), {batch, 5}, "N,D");
      out.write("/case/dv", dv.data(), {batch, 8, 8, 1}, "N,H,W,C");
      out.write("/case/v", ws.output(), {batch, 8, 8, 1}, "N,H,W,C");
      out.write("/case/dx", dx.data(), {batch, 8, 8, 1}, "N,H,W,C");
      out.write("/case/dcond", dcond.data(), {batch, 5}, "N,D");
      for (size_t p = 0; p < net.parts.size(); ++p)
        for (size_t i = 0; i < net.parts[p].layers.size(); ++i) {
          const auto& L = net.parts[p].layers[i];
          const std::string at = "/case/grads/" + net.names[p] + "/" + std::to_string(i) + "/";
          if (!L.weight.empty()) out.write(at + "weight", grads.parts[p].weight[i].data(), L.weight_shape(), "");
          if (!L.bias.empty()) out.write(at + "bias", grads.parts[p].bias[i].data(), L.bias_shape(), "");
        }
      out.commit();
    }
    const std::string command = "/usr/bin/python3 " NK_SOURCE_DIR "/tests/unit/unet_reference.py " + path;
    CHECK(std::system(command.c_str()) == 0);
  }

  TEST_CASE("U-Net file: round trip; a part of other layers or a NaN weight is exit 3 naming the dataset") {
    nk::test::ScratchDir dir;
    const UNet<float> net = random_unet<float>(tiny(0), 61);
    {
      nk::h5::Writer out(dir.file("u.h5"), "nk-test.unet/1");
      nk::nn::write_unet(out, net, "/prior");
      out.commit();
    }
    const UNet<float> back = nk::nn::read_unet(nk::h5::File::open(dir.file("u.h5")), "/prior");
    REQUIRE(back.parts.size() == net.parts.size());
    for (size_t p = 0; p < net.parts.size(); ++p)
      for (size_t i = 0; i < net.parts[p].layers.size(); ++i) CHECK(back.parts[p].layers[i].weight == net.parts[p].layers[i].weight);
    auto refused = [&](const std::string& name, const std::function<void(nk::h5::Writer&)>& edit, const std::string& dataset) {
      {
        nk::h5::Writer out(dir.file(name), "nk-test.unet/1");
        edit(out);
        out.commit();
      }
      try {
        nk::nn::read_unet(nk::h5::File::open(dir.file(name)), "/prior");
      } catch (const nk::Error& e) {
        INFO(e.what());
        CHECK(e.code() == nk::Exit::input);
        CHECK(std::string(e.what()).find(dataset) != std::string::npos);
        return;
      }
      FAIL("accepted " << name);
    };
    // The parts of one U-Net under the attributes of another.
    auto parts_of = [](nk::h5::Writer& out, const UNet<float>& u, const std::string& config) {
      for (size_t p = 0; p < u.parts.size(); ++p) nk::nn::write_network(out, u.parts[p], "/prior/parts/" + u.names[p]);
      out.attr("/prior", "unet", config);
      out.attr("/prior", "image", u.config().image.text());
    };
    refused("config.h5", [&](nk::h5::Writer& out) { parts_of(out, net, "channels=4,8 groups=3 time_dim=6 cond_dim=0"); },
            "/prior");
    UNetConfig wider = tiny(0);
    wider.channels = {4, 16};
    UNet<float> w = UNet<float>::build(wider);
    w.init(2);
    refused("part.h5", [&](nk::h5::Writer& out) { parts_of(out, w, tiny(0).text()); }, "/prior/parts/");
    UNet<float> nan = net;
    nan.parts[1].layers[0].weight[0] = std::nanf("");  // part "in"
    refused("nan.h5", [&](nk::h5::Writer& out) {
      out.allow_nonfinite("/prior/parts/" + nan.names[1] + "/params/000/weight");
      nk::nn::write_unet(out, nan, "/prior");
    }, "/prior/parts/" + nan.names[1] + "/params/000/weight");
  }
}
