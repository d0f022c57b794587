// train.cpp - the train verb: a base classifier under Gaussian noise at the
// certification sigma (randomized smoothing certifies f only as well as f
// classifies noisy inputs).
#include <cmath>

#include "nk/dataset.hpp"
#include "nk/error.hpp"
#include "nk/log.hpp"
#include "nk/nn/model_file.hpp"
#include "nk/nn/train.hpp"
#include "nk/progress.hpp"
#include "proxy-certify/proxy_certify.hpp"

namespace pc {

namespace {

std::vector<std::string> arch_lines(const std::string& arch, const nk::nn::Shape& in, int64_t classes) {
  const std::string k = std::to_string(classes);
  if (arch == "mlp") {
    return {"flatten", "linear " + std::to_string(in.size()) + " 256", "relu", "linear 256 256", "relu", "linear 256 " + k};
  }
  // CNN: conv 8 and conv 16 (3x3, relu, 2x2 max pool), linear 64, linear K.
  const int64_t flat = 16 * (in.h / 4) * (in.w / 4);
  return {"conv2d " + std::to_string(in.c) + " 8 3 1 1", "relu", "maxpool 2", "conv2d 8 16 3 1 1", "relu", "maxpool 2",
          "flatten", "linear " + std::to_string(flat) + " 64", "relu", "linear 64 " + k};
}

}  // namespace

void train(const TrainOptions& o, const nk::RunEnv& env) {
  nk::data::Options accept;
  accept.labels = nk::data::Labels::required;
  accept.image_files = false;
  const nk::data::Source data = nk::data::Source::open(o.input, accept);
  const nk::nn::Shape shape = item_shape(data);
  if (o.arch == "cnn" && (shape.h < 4 || shape.w < 4)) {
    throw nk::input_error(o.input, data.dataset(), "items of " + shape.text() + " are too small for the CNN (needs H, W >= 4; use --arch mlp)");
  }
  const int64_t classes = std::max<int64_t>(2, data.classes());
  std::vector<nk::nn::LayerSpec> specs;
  for (const auto& line : arch_lines(o.arch, shape, classes)) specs.push_back(nk::nn::LayerSpec::parse(line));
  nk::nn::Network<float> net = nk::nn::Network<float>::build(specs, shape);
  net.init(env.seed);
  const nk::h5::Array<float> x = data.read_all();
  nk::nn::ClassifierTraining config;
  config.epochs = o.epochs;
  config.batch = o.batch;
  config.learning_rate = o.learning_rate;
  config.weight_decay = o.weight_decay;
  config.noise_sigma = o.sigma;
  config.seed = env.seed;
  spdlog::info("train: {} {} ({} parameters) on {} items of {}, sigma = {}, {} epochs", o.arch, nk::display_name(o.input),
               net.parameter_count(), data.count(), shape.text(), o.sigma, o.epochs);
  nk::Progress progress("train", o.epochs);
  nk::nn::train_classifier(net, x.data.data(), data.labels().data(), data.count(), config,
                           [&](const nk::nn::EpochReport& r) {
                             progress.update(r.epoch);
                             spdlog::info("epoch {}: loss {:.4f}, noisy training accuracy {:.4f} ({:.1f} s)", r.epoch,
                                          r.loss, r.accuracy, r.seconds);
                           });
  progress.finish();
  if (!o.test.empty()) {
    const nk::data::Source test = nk::data::Source::open(o.test, accept);
    if (!(item_shape(test) == shape)) {
      throw nk::input_error(o.test, test.dataset(), "items are " + item_shape(test).text() + ", the training items " + shape.text());
    }
    const nk::h5::Array<float> tx = test.read_all();
    const std::vector<int64_t> predicted = nk::nn::predict_classes(net, tx.data.data(), test.count());
    int64_t right = 0;
    for (int64_t i = 0; i < test.count(); ++i) right += predicted[i] == test.labels()[i];
    spdlog::info("clean test accuracy {:.4f} on {} items of {}", static_cast<double>(right) / static_cast<double>(test.count()),
                 test.count(), nk::display_name(o.test));
  }
  nk::h5::Writer out(o.output, nk::nn::kModelSchema, o.no_clobber);
  nk::nn::write_model(out, net, classes, o.sigma > 0 ? std::optional<double>(o.sigma) : std::nullopt);
  out.attr("/model", "arch_name", o.arch);
  out.attr("/model", "epochs", o.epochs);
  out.commit();
}

}  // namespace pc
