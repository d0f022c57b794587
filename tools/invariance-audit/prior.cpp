// prior.cpp - reading the prior file (prior.hpp).
#include "invariance-audit/prior.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "invariance-audit/command.hpp"
#include "invariance-audit/invariance_audit.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/shipped.hpp"

namespace ia {

std::string prior_path(const std::string& path) {
  return path.empty() ? nk::shipped_data("invariance-audit/prior.h5") : path;
}

nk::nn::UNet<float> read_prior(const std::string& path) {
  const std::string where = prior_path(path);
  const nk::h5::File file = nk::h5::File::open(where);
  file.require_schema(kPriorSchema);
  nk::nn::UNet<float> net = nk::nn::read_unet(file, "/prior");
  if (net.config().cond_dim != 0) {
    throw nk::input_error(where, "/prior", "is a conditional U-Net (cond_dim " + std::to_string(net.config().cond_dim) +
                                               "): a prior takes no condition");
  }
  return net;
}

nk::nn::UNet<float> build_unet(const std::string& channels, int64_t groups, int64_t time_dim, int64_t cond_dim,
                               nk::nn::Shape image, uint64_t seed) {
  nk::nn::UNetConfig config;
  try {
    config = nk::nn::UNetConfig::parse("channels=" + channels + " groups=" + std::to_string(groups) + " time_dim=" +
                                           std::to_string(time_dim) + " cond_dim=" + std::to_string(cond_dim),
                                       image);
  } catch (const std::invalid_argument& e) {
    throw nk::usage_error(std::string("--channels/--groups/--time-dim: ") + e.what());
  }
  nk::nn::UNet<float> net;
  try {
    net = nk::nn::UNet<float>::build(config);
  } catch (const std::invalid_argument& e) {
    throw nk::usage_error(std::string("the U-Net does not fit ") + image.text() + " images: " + e.what());
  }
  net.init(seed, 0.0);
  return net;
}

nk::nn::FlowTraining flow_schedule(int64_t steps, int64_t batch, double learning_rate, double ema, uint64_t seed) {
  nk::nn::FlowTraining training;
  training.steps = steps;
  training.batch = batch;
  training.learning_rate = learning_rate;
  training.warmup = std::min<int64_t>(500, steps / 10 + 1);
  training.ema = ema;
  training.seed = seed;
  return training;
}

PriorField open_prior(const std::string& path, const std::string& command, nk::nn::Shape image, int64_t capacity) {
  PriorField p;
  if (!command.empty()) {
    p.field = command_field(command, image, capacity);
    p.name = "--prior-cmd '" + command + "'";
    return p;
  }
  p.net = std::make_unique<nk::nn::UNet<float>>(read_prior(path));
  if (!(p.net->config().image == image)) {
    throw nk::input_error(prior_path(path), "/prior", "the prior generates images of " + p.net->config().image.text() +
                                                           ", the queries are " + image.text());
  }
  p.field = std::make_unique<nk::nn::UNetField>(*p.net, capacity);
  p.name = nk::display_name(prior_path(path)) + " (" + std::to_string(p.net->parameter_count()) + " parameters)";
  return p;
}

Dedicated read_dedicated(const std::string& path) {
  const nk::h5::File file = nk::h5::File::open(path);
  file.require_schema(kDedicatedSchema);
  Dedicated d;
  d.net = nk::nn::read_unet(file, "/dedicated");
  const int64_t F = d.net.config().cond_dim;
  if (F <= 0) throw nk::input_error(path, "/dedicated", "is an unconditional U-Net: the dedicated model takes the features");
  d.mean = file.read<float>("/dedicated/feature_mean", 1, "F").data;
  d.scale = file.read<float>("/dedicated/feature_scale", 1, "F").data;
  if (static_cast<int64_t>(d.mean.size()) != F) {
    throw nk::input_error(path, "/dedicated/feature_mean", "holds " + std::to_string(d.mean.size()) + " values, the U-Net takes " +
                                                               std::to_string(F) + " features");
  }
  if (static_cast<int64_t>(d.scale.size()) != F) {
    throw nk::input_error(path, "/dedicated/feature_scale", "holds " + std::to_string(d.scale.size()) + " values, the U-Net takes " +
                                                                std::to_string(F) + " features");
  }
  for (float v : d.mean)
    if (!std::isfinite(v)) throw nk::input_error(path, "/dedicated/feature_mean", "holds a value that is not finite");
  for (float v : d.scale)
    if (!(std::isfinite(v) && v > 0)) throw nk::input_error(path, "/dedicated/feature_scale", "holds a value that is not finite and positive");
  d.extractor = file.attr_string("/dedicated", "extractor").value_or("");
  d.seconds = file.attr_number("/dedicated", "seconds").value_or(0.0);
  return d;
}

}  // namespace ia
