// model_file.hpp - nk-nn.model/1, the file every image or vector network of
// neurkit is stored in (and that a torch state_dict exports to: script in
// data/nn/export_torch.py).
//
//   root attribute nk_schema = "nk-nn.model/1"
//   /model/arch                 strings, one layer each (LayerSpec::parse)
//   /model/params/NNN/weight    float32, torch's shape (NNN: the layer index, 3 digits)
//   /model/params/NNN/bias      float32 [OUT]
//   /model/params/NNN/running_mean, running_var   float32 [C] (batchnorm)
//   attributes of /model: input ("H,W,C"), classes (when the output is
//   class logits), sigma (the Gaussian noise it was trained with, where one was).
#pragma once
#include <optional>
#include <string>

#include "nk/h5.hpp"
#include "nk/nn/network.hpp"

namespace nk::nn {

inline constexpr const char* kModelSchema = "nk-nn.model/1";

struct ModelFile {
  Network<float> network;
  int64_t classes = 0;          ///< 0 when the file does not say
  std::optional<double> sigma;  ///< training noise, when the file says
};

/// Reads and checks a model file ('-': standard input). Exit 3 naming the
/// file and dataset for: another nk_schema, a missing or unparsable
/// /model/arch line ("/model/arch: line 2: unknown layer 'conv3d'"), a
/// missing or malformed input attribute, layers that do not chain, a missing
/// parameter or one of another shape ("/model/params/001/weight: expected
/// [10,64], found [64,10]"), NaN/Inf parameters, classes that disagree with
/// the output size, sigma <= 0 or non-finite. Exit 4 for an unreadable file.
ModelFile read_model(const std::string& path);
ModelFile read_model(const h5::File& file);

/// One network stored as /model is (GROUP/arch, GROUP's input attribute,
/// GROUP/params/NNN/...) from any group: the parts of larger models (the
/// U-Net of a flow prior). The same checks and exit 3 as read_model.
Network<float> read_network(const h5::File& file, const std::string& group);
void write_network(h5::Writer& out, const Network<float>& network, const std::string& group);

/// Writes /model into 'out' (the caller made it with kModelSchema, or its own
/// schema when the model is one part of a larger file).
void write_model(h5::Writer& out, const Network<float>& network, int64_t classes, std::optional<double> sigma);

}  // namespace nk::nn
