// classifier.cpp - nk-nn networks, spike-sft's spiking networks and model
// commands behind one interface.
#include "proxy-certify/classifier.hpp"

#include <cmath>
#include <cstring>

#include "nk/command.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/nn/model_file.hpp"
#include "nk/rng.hpp"
#include "nk/snn/model_file.hpp"

namespace pc {

namespace {

class NetworkClassifier : public Classifier {
 public:
  NetworkClassifier(const std::string& path, int64_t capacity) : file_(nk::nn::read_model(path)) {
    const nk::nn::Network<float>& net = file_.network;
    input_ = net.input();
    classes_ = net.output().size();
    if (net.output().h != 1 || net.output().w != 1 || classes_ < 2) {
      throw nk::input_error(path, "/model/arch",
                            "the last layer gives " + net.output().text() + ", expected a flat vector of >= 2 class logits");
    }
    sigma_ = file_.sigma;
    name_ = path;
    capacity_ = capacity;
    const size_t layers = net.layers.size();
    feature_size_ = layers >= 2 ? net.layers[layers - 2].out.size() : net.input().size();
    workspace_.reserve(net, capacity);
  }
  void logits(const float* x, int64_t batch, float* out) override {
    nk::nn::forward(file_.network, x, batch, workspace_, nk::nn::Pass::inference);
    std::memcpy(out, workspace_.output(), sizeof(float) * static_cast<size_t>(batch * classes_));
  }
  const nk::nn::Network<float>* network() const override { return &file_.network; }
  bool has_features() const override { return true; }
  void fingerprint(const std::function<void(const void*, size_t)>& feed) const override {
    for (const auto& layer : file_.network.layers) {
      const std::string line = layer.spec.text();
      feed(line.data(), line.size());
      feed(layer.weight.data(), layer.weight.size() * sizeof(float));
      feed(layer.bias.data(), layer.bias.size() * sizeof(float));
    }
  }
  const float* features() const override {
    return workspace_.activation(static_cast<int64_t>(file_.network.layers.size()) - 2);
  }

 private:
  nk::nn::ModelFile file_;
  nk::nn::Workspace<float> workspace_;
};

// A spiking network of spike-sft: the readout's logits over its T steps; the
// features are the last hidden layer's firing rates. A rate-coded network
// draws its input spikes from a stream seeded by the batch's bytes, so f is
// a function of the batch alone (the same under any --shard or --threads),
// while different noisy batches get independent coding noise.
class SpikeClassifier : public Classifier {
 public:
  SpikeClassifier(const std::string& path, const nk::nn::Shape& data_shape, int64_t capacity)
      : net_(nk::snn::read_model(path)) {
    const nk::snn::Config& c = net_.config;
    if (c.conv()) {
      input_ = {c.height, c.width, c.in_channels};
    } else {
      input_ = data_shape.size() == c.sizes.front() ? data_shape : nk::nn::Shape{1, 1, c.sizes.front()};
    }
    classes_ = c.sizes.back();
    if (classes_ < 2) throw nk::input_error(path, "/model/sizes", "has " + std::to_string(classes_) + " class, expected >= 2");
    name_ = path;
    capacity_ = capacity;
    feature_size_ = c.sizes[c.sizes.size() - 2];
  }
  void logits(const float* x, int64_t batch, float* out) override {
    if (!ws_ || ws_->batch() != batch) ws_ = std::make_unique<nk::snn::Workspace>(net_.config, batch);
    const int64_t D = input_.size();
    const nk::snn::Matrix xm = Eigen::Map<const nk::snn::Matrix>(x, batch, D);
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    const auto* bytes = reinterpret_cast<const unsigned char*>(x);
    for (size_t j = 0; j < static_cast<size_t>(batch * D) * sizeof(float); ++j) seed = (seed ^ bytes[j]) * 0x100000001b3ULL;
    nk::Rng coding(seed);
    nk::snn::forward(net_, xm, nullptr, *ws_, &coding);
    Eigen::Map<nk::snn::Matrix>(out, batch, classes_) = ws_->output_logits();
    features_ = ws_->spike_counts() / static_cast<float>(net_.config.steps);
  }
  bool has_features() const override { return true; }
  const float* features() const override { return features_.data(); }
  void fingerprint(const std::function<void(const void*, size_t)>& feed) const override {
    for (size_t l = 0; l < net_.weight.size(); ++l) {
      feed(net_.weight[l].data(), static_cast<size_t>(net_.weight[l].size()) * sizeof(float));
      feed(net_.bias[l].data(), static_cast<size_t>(net_.bias[l].size()) * sizeof(float));
    }
    for (int64_t s : net_.config.sizes) feed(&s, sizeof s);
  }

 private:
  nk::snn::Network net_;
  std::unique_ptr<nk::snn::Workspace> ws_;
  nk::snn::Matrix features_;
};

// Frames: the tool writes int64 B (little-endian) then B*H*W*C float32; the
// program answers B*K float32 logits. Closing its input ends it.
class CommandClassifier : public Classifier {
 public:
  CommandClassifier(const std::string& command, const nk::nn::Shape& shape, int64_t capacity)
      : process_(command, "--model-cmd", {{"NK_MODEL_INPUT", shape.text()}, {"NK_MODEL_BATCH", std::to_string(capacity)}}) {
    input_ = shape;
    capacity_ = capacity;
    name_ = "--model-cmd '" + command + "'";
    const std::string line = process_.read_line(256, "its first line (\"classes K\")");
    long long k = 0;
    char tail = 0;
    if (std::sscanf(line.c_str(), "classes %lld%c", &k, &tail) != 1 || k < 2 || k > nk::data::kMaxClasses) {
      throw nk::Error(nk::Exit::runtime, name_ + ": first line is '" + line + "', expected \"classes K\" with 2 <= K <= 100000");
    }
    classes_ = k;
  }
  ~CommandClassifier() override = default;
  void logits(const float* x, int64_t batch, float* out) override {
    const int64_t header = batch;
    process_.write(&header, sizeof header);
    process_.write(x, sizeof(float) * static_cast<size_t>(batch * input_.size()));
    process_.read(out, sizeof(float) * static_cast<size_t>(batch * classes_), "a batch of logits");
    ++batches_;
    for (int64_t j = 0; j < batch * classes_; ++j) {
      if (!std::isfinite(out[j])) {
        throw nk::Error(nk::Exit::runtime, name_ + ": logit " + std::to_string(j) + " of batch " +
                                               std::to_string(batches_) + " is not finite");
      }
    }
  }

 private:
  nk::Coprocess process_;
  int64_t batches_ = 0;
};

}  // namespace

std::unique_ptr<Classifier> open_classifier(const ModelOptions& options, const nk::nn::Shape& data_shape,
                                            int64_t capacity) {
  if (!options.model_cmd.empty()) return std::make_unique<CommandClassifier>(options.model_cmd, data_shape, capacity);
  const std::string schema = nk::h5::File::open(options.model).attr_string("/", "nk_schema").value_or("");
  if (schema.rfind("spike-sft.", 0) == 0) return std::make_unique<SpikeClassifier>(options.model, data_shape, capacity);
  return std::make_unique<NetworkClassifier>(options.model, capacity);
}

nk::nn::Shape item_shape(const nk::data::Source& data) { return {data.height(), data.width(), data.channels()}; }

void require_same_shape(const Classifier& model, const nk::data::Source& data) {
  const nk::nn::Shape shape = item_shape(data);
  if (!(shape == model.input())) {
    throw nk::input_error(data.path(), data.dataset(),
                          "items are " + shape.text() + ", the model " + model.name() + " takes " + model.input().text());
  }
}

double resolve_sigma(std::optional<double> option, const Classifier& model) {
  if (option) return *option;
  if (model.sigma()) return *model.sigma();
  throw nk::usage_error("--sigma is needed: the model " + model.name() + " does not say which noise it was trained with");
}

}  // namespace pc
