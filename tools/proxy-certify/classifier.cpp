// classifier.cpp - nk-nn networks and model commands behind one interface.
#include "proxy-certify/classifier.hpp"

#include <cmath>
#include <cstring>

#include "nk/command.hpp"
#include "nk/error.hpp"
#include "nk/nn/model_file.hpp"

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
  const float* features() const override {
    return workspace_.activation(static_cast<int64_t>(file_.network.layers.size()) - 2);
  }

 private:
  nk::nn::ModelFile file_;
  nk::nn::Workspace<float> workspace_;
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
