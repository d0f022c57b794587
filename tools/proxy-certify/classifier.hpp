// classifier.hpp - the base classifier f that randomized smoothing queries:
// an nk-nn.model/1 network, a spiking network of spike-sft
// (spike-sft.model/1 or .adapted/1), or the user's own model as a program
// (--model-cmd, protocol in proxy-certify(1) MODEL COMMAND).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "nk/dataset.hpp"
#include "nk/nn/network.hpp"

namespace pc {

class Classifier {
 public:
  virtual ~Classifier() = default;
  nk::nn::Shape input() const { return input_; }
  int64_t classes() const { return classes_; }
  /// The Gaussian noise the model was trained with, where its file says.
  std::optional<double> sigma() const { return sigma_; }
  /// "model.h5" or "--model-cmd 'python3 m.py'", for messages.
  const std::string& name() const { return name_; }
  /// Most items per logits() call.
  int64_t capacity() const { return capacity_; }
  /// logits [batch, classes] of x [batch, input] (NHWC), batch <= capacity().
  virtual void logits(const float* x, int64_t batch, float* out) = 0;
  /// The network, when the model is an nk-nn file (the GPU path runs it);
  /// null otherwise.
  virtual const nk::nn::Network<float>* network() const { return nullptr; }
  /// Whether logits() also leaves the penultimate features (the head proxy
  /// reads them): nk-nn and spike-sft models, not a model command.
  virtual bool has_features() const { return false; }
  /// After logits(): the input of the last layer [batch, feature_size()]
  /// (a spiking network: the last hidden layer's firing rates).
  virtual const float* features() const { return nullptr; }
  int64_t feature_size() const { return feature_size_; }
  /// Feeds the bytes that identify the model (a proxy file names the model
  /// it was calibrated for): the layers and weights, or the command's name.
  virtual void fingerprint(const std::function<void(const void*, size_t)>& feed) const {
    feed(name_.data(), name_.size());
  }

 protected:
  nk::nn::Shape input_;
  int64_t classes_ = 0, capacity_ = 0, feature_size_ = 0;
  std::optional<double> sigma_;
  std::string name_;
};

struct ModelOptions {
  std::string model;      ///< --model: an nk-nn.model/1 or spike-sft model file
  std::string model_cmd;  ///< --model-cmd: a program speaking the frame protocol
};

/// Opens the model named by 'options' for batches of up to 'capacity' items.
/// A file is read and checked (nk::nn::read_model, or nk::snn::read_model
/// when its nk_schema is spike-sft's; exit 3 naming file and dataset); its
/// output must be class logits (>= 2). A command is started
/// with NK_MODEL_INPUT=H,W,C (the data's shape) and NK_MODEL_BATCH and must
/// answer "classes K" on its first line.
std::unique_ptr<Classifier> open_classifier(const ModelOptions& options, const nk::nn::Shape& data_shape,
                                            int64_t capacity);

/// Exit 3 naming both files when the data's item shape is not the model's input.
void require_same_shape(const Classifier& model, const nk::data::Source& data);

/// The item shape of a data source as a network shape (vectors: 1,1,D).
nk::nn::Shape item_shape(const nk::data::Source& data);

/// The noise level: --sigma when given (> 0), else the model's; exit 2 when neither.
double resolve_sigma(std::optional<double> option, const Classifier& model);

}  // namespace pc
