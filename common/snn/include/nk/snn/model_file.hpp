// model_file.hpp - nk::snn's model files: spike-sft.model/1 (a network's
// weights, sizes and neuron attributes under /model) and spike-sft.adapted/1
// (a base model plus a sparse delta under /delta/layerL).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nk/h5.hpp"
#include "nk/snn/snn.hpp"

namespace nk::snn {

inline constexpr const char* kModelSchema = "spike-sft.model/1";
inline constexpr const char* kAdaptedSchema = "spike-sft.adapted/1";

/// A model file (either schema; an adapted model's delta is added unless
/// apply_delta is false). Every dataset and attribute is checked: exit 3
/// naming the file and dataset on a wrong shape, range or NaN.
Network read_model(const std::string& path, bool apply_delta = true);
/// Writes /model (weights, sizes and neuron attributes); shape, when not
/// empty, is the examples' shape (/model/input_shape).
void write_model(nk::h5::Writer& out, const Network& net, const std::vector<int64_t>& shape);

}  // namespace nk::snn
