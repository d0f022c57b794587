// train_extractor.cpp - the train-extractor verb: feature extractors to audit,
// all stored as nk-nn.model/1 networks. cnn and mlp are classifiers trained by
// the shared trainer (their penultimate layer is the usual audit target);
// pca keeps the top m principal components (f = V (x - mean), a linear layer);
// random-features is relu(R x) with R ~ N(0, 1/D).
#include <Eigen/Dense>
#include <cmath>

#include "invariance-audit/invariance_audit.hpp"
#include "nk/dataset.hpp"
#include "nk/error.hpp"
#include "nk/log.hpp"
#include "nk/nn/model_file.hpp"
#include "nk/nn/train.hpp"
#include "nk/progress.hpp"
#include "nk/rng.hpp"

namespace ia {

namespace {

std::vector<nk::nn::LayerSpec> specs(const std::vector<std::string>& lines) {
  std::vector<nk::nn::LayerSpec> out;
  for (const auto& line : lines) out.push_back(nk::nn::LayerSpec::parse(line));
  return out;
}

}  // namespace

void train_extractor(const TrainExtractorOptions& o, const nk::RunEnv& env) {
  const bool classifier = o.kind == "cnn" || o.kind == "mlp";
  nk::data::Options accept;
  accept.unit_range = true;  // the U-Net prior and the extractors take pixels in [0,1]
  accept.vectors = false;
  accept.image_files = false;
  accept.labels = classifier ? nk::data::Labels::required : nk::data::Labels::ignore;
  const nk::data::Source data = nk::data::Source::open(o.input, accept);
  const nk::nn::Shape shape{data.height(), data.width(), data.channels()};
  const int64_t d = shape.size();
  nk::h5::Array<float> x = data.read_all();
  nk::nn::Network<float> net;
  int64_t classes = 0;
  std::vector<float> pca_mean;  // pca: the mean image (NHWC), for the known fiber of planted:pca32
  if (classifier) {
    classes = std::max<int64_t>(2, data.classes());
    const std::string k = std::to_string(classes);
    std::vector<std::string> lines;
    if (o.kind == "mlp") {
      lines = {"flatten", "linear " + std::to_string(d) + " 256", "relu", "linear 256 64", "relu", "linear 64 " + k};
    } else {
      if (shape.h < 4 || shape.w < 4) throw nk::input_error(o.input, data.dataset(), "images of " + shape.text() + " are too small for the CNN (H, W >= 4)");
      const int64_t flat = 32 * (shape.h / 4) * (shape.w / 4);
      lines = {"conv2d " + std::to_string(shape.c) + " 16 3 1 1", "relu", "maxpool 2", "conv2d 16 32 3 1 1", "relu", "maxpool 2",
               "flatten", "linear " + std::to_string(flat) + " 64", "relu", "linear 64 " + k};
    }
    net = nk::nn::Network<float>::build(specs(lines), shape);
    net.init(env.seed);
    nk::nn::ClassifierTraining config;
    config.epochs = o.epochs;
    config.batch = o.batch;
    config.learning_rate = o.learning_rate;
    config.seed = env.seed;
    spdlog::info("train-extractor: {} ({} parameters) on {} images of {}", o.kind, net.parameter_count(), data.count(), shape.text());
    nk::Progress progress("train-extractor", o.epochs);
    nk::nn::train_classifier(net, x.data.data(), data.labels().data(), data.count(), config, [&](const nk::nn::EpochReport& r) {
      progress.update(r.epoch);
      spdlog::info("epoch {}: loss {:.4f}, training accuracy {:.4f} ({:.1f} s)", r.epoch, r.loss, r.accuracy, r.seconds);
    });
    progress.finish();
  } else {
    const int64_t m = o.components;
    if (m > d) throw nk::usage_error("--components " + std::to_string(m) + " exceeds the " + std::to_string(d) + " values of an image");
    net = nk::nn::Network<float>::build(specs(o.kind == "pca" ? std::vector<std::string>{"flatten", "linear " + std::to_string(d) + " " + std::to_string(m)}
                                                               : std::vector<std::string>{"flatten", "linear " + std::to_string(d) + " " + std::to_string(m), "relu"}),
                                        shape);
    net.init(env.seed);
    auto& L = net.layers[1];
    // flatten reorders NHWC to C,H,W; the products below index flat values in that order.
    auto flat_index = [&](int64_t v) {  // NHWC position v -> C,H,W position
      const int64_t c = v % shape.c, p = v / shape.c;
      return c * shape.h * shape.w + p;
    };
    if (o.kind == "pca") {
      const int64_t n = data.count();
      Eigen::VectorXd mean = Eigen::VectorXd::Zero(d);
      Eigen::MatrixXd centred(n, d);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t v = 0; v < d; ++v) centred(i, flat_index(v)) = x.data[i * d + v];
      mean = centred.colwise().mean();
      pca_mean.resize(static_cast<size_t>(d));
      for (int64_t v = 0; v < d; ++v) pca_mean[v] = static_cast<float>(mean[flat_index(v)]);
      centred.rowwise() -= mean.transpose();
      const Eigen::MatrixXd cov = centred.transpose() * centred / static_cast<double>(std::max<int64_t>(1, n - 1));
      Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(cov);
      double kept = 0;
      for (int64_t j = 0; j < m; ++j) {
        const Eigen::VectorXd v = eig.eigenvectors().col(d - 1 - j);
        kept += eig.eigenvalues()[d - 1 - j];
        for (int64_t k = 0; k < d; ++k) L.weight[j * d + k] = static_cast<float>(v[k]);
        L.bias[j] = static_cast<float>(-v.dot(mean));
      }
      spdlog::info("train-extractor: pca, {} components keep {:.1f}% of the variance of {} images", m,
                   100 * kept / std::max(cov.trace(), 1e-300), n);
    } else {
      nk::Rng rng(env.seed);
      for (auto& w : L.weight) w = static_cast<float>(rng.normal() / std::sqrt(static_cast<double>(d)));
      for (auto& b : L.bias) b = 0.0f;
      spdlog::info("train-extractor: random-features, relu(R x) with R [{}, {}] ~ N(0, 1/{})", m, d, d);
    }
  }
  nk::h5::Writer out(o.output, nk::nn::kModelSchema, o.no_clobber);
  nk::nn::write_model(out, net, classes, std::nullopt);
  out.attr("/model", "arch_name", o.kind);
  if (!pca_mean.empty()) out.write("/pca/mean", pca_mean.data(), {shape.h, shape.w, shape.c}, "H,W,C", "the training images' mean");
  out.commit();
}

}  // namespace ia
