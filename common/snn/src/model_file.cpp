// model_file.cpp - see model_file.hpp.
#include "nk/snn/model_file.hpp"

#include <algorithm>
#include <stdexcept>

#include "nk/error.hpp"

namespace nk::snn {

namespace {

/// The neuron attributes of /model (steps, beta, threshold, slope, reset, surrogate, coding) into c.
void read_neurons(const nk::h5::File& file, Config& c) {
  const std::string& name = file.path();
  // The ranges pretrain's options accept (a NaN or 1e300 here would only fail later, mid-training).
  auto number = [&](const char* key, double lo, double hi) {
    const auto v = file.attr_number("/model", key);
    if (!v) throw nk::input_error(name, "/model", std::string("attribute ") + key + " is missing");
    if (!(*v >= lo && *v <= hi)) {
      throw nk::input_error(name, "/model", std::string("attribute ") + key + " = " + std::to_string(*v) + " (expected " +
                                                std::to_string(lo) + " to " + std::to_string(hi) + ")");
    }
    return *v;
  };
  auto text = [&](const char* key) {
    const auto v = file.attr_string("/model", key);
    if (!v) throw nk::input_error(name, "/model", std::string("attribute ") + key + " is missing");
    return *v;
  };
  c.steps = static_cast<int64_t>(number("steps", 1, 100000));
  c.beta = static_cast<float>(number("beta", 0, 1));
  c.threshold = static_cast<float>(number("threshold", 1e-6, 1e6));
  c.slope = static_cast<float>(number("slope", 1e-6, 1e6));
  try {
    c.reset = parse_reset(text("reset"));
    c.surrogate = parse_surrogate(text("surrogate"));
    c.coding = parse_coding(text("coding"));
  } catch (const std::invalid_argument& e) {
    throw nk::input_error(name, "/model", e.what());
  }
}

/// A conv network's /model/channels and /model/image into c, checked against /model/sizes.
void read_conv_shape(const nk::h5::File& file, Config& c) {
  const std::string& name = file.path();
  const nk::h5::Array<int64_t> channels = file.read<int64_t>("/model/channels", 1, "block");
  const nk::h5::Array<int64_t> image = file.read<int64_t>("/model/image", 1, "axis");
  if (image.size() != 3) throw nk::input_error(name, "/model/image", "needs 3 entries (height, width, channels)");
  for (int64_t v : image.data)
    if (v < 1 || v > 65536) throw nk::input_error(name, "/model/image", "has a side of " + std::to_string(v));
  for (int64_t v : channels.data)
    if (v < 1 || v > 65536)
      throw nk::input_error(name, "/model/channels", "has a block of " + std::to_string(v) + " channels");
  Config shape;
  try {
    shape.set_conv(image.data[0], image.data[1], image.data[2], channels.data, c.sizes.back());
  } catch (const std::invalid_argument& e) {
    throw nk::input_error(name, "/model/channels", e.what());
  }
  if (shape.sizes != c.sizes)
    throw nk::input_error(name, "/model/sizes", "does not match /model/channels and /model/image");
  c.channels = shape.channels;
  c.height = shape.height;
  c.width = shape.width;
  c.in_channels = shape.in_channels;
}

/// Adds an adapted model's sparse delta of layer l (/delta/layerL: indices, values, an optional bias) to w and b.
void add_delta(const nk::h5::File& file, int64_t l, Matrix& w, Vector& b) {
  const std::string& name = file.path();
  const std::string delta = "/delta/layer" + std::to_string(l);
  const int64_t out = w.rows(), in = w.cols();
  const nk::h5::Array<int64_t> index = file.read<int64_t>(delta + "/indices", 1, "entry");
  const nk::h5::Array<float> value = file.read<float>(delta + "/values", 1, "entry");
  if (value.shape != index.shape) throw nk::input_error(name, delta + "/values", "does not match /indices");
  nk::h5::require_finite(name, delta + "/values", value);
  for (int64_t e = 0; e < index.size(); ++e) {
    const int64_t at = index.data[static_cast<size_t>(e)];
    if (at < 0 || at >= out * in)
      throw nk::input_error(name, delta + "/indices", "entry " + std::to_string(e) + " is outside the weight matrix");
    w.data()[at] += value.data[static_cast<size_t>(e)];
  }
  // Each moved weight once (in any order): a repeated index would add its delta twice.
  std::vector<int64_t> sorted = index.data;
  std::sort(sorted.begin(), sorted.end());
  const auto repeated = std::adjacent_find(sorted.begin(), sorted.end());
  if (repeated != sorted.end()) {
    throw nk::input_error(name, delta + "/indices", "repeats entry " + std::to_string(*repeated) + " (each moved weight once)");
  }
  if (file.has(delta + "/bias")) {
    const nk::h5::Array<float> db = file.read<float>(delta + "/bias", 1, "out");
    if (db.shape[0] != out) throw nk::input_error(name, delta + "/bias", "does not match the layer");
    b += Eigen::Map<const Vector>(db.data.data(), out);
  }
}

}  // namespace

void write_model(nk::h5::Writer& out, const Network& net, const std::vector<int64_t>& shape) {
  const Config& c = net.config;
  out.write("/model/sizes", c.sizes.data(), {static_cast<int64_t>(c.sizes.size())}, "layer");
  if (c.conv()) {
    // A conv network: its blocks' channels and the input image.
    out.write("/model/channels", c.channels.data(), {static_cast<int64_t>(c.channels.size())}, "block");
    const std::vector<int64_t> image = {c.height, c.width, c.in_channels};
    out.write("/model/image", image.data(), {3}, "axis");
  }
  if (!shape.empty()) out.write("/model/input_shape", shape.data(), {static_cast<int64_t>(shape.size())}, "axis");
  for (size_t l = 0; l < net.weight.size(); ++l) {
    out.write_matrix("/model/weight" + std::to_string(l), net.weight[l], "out,in");
    out.write("/model/bias" + std::to_string(l), net.bias[l].data(), {net.bias[l].size()}, "out");
  }
  out.attr("/model", "steps", c.steps);
  out.attr("/model", "beta", static_cast<double>(c.beta));
  out.attr("/model", "threshold", static_cast<double>(c.threshold));
  out.attr("/model", "slope", static_cast<double>(c.slope));
  out.attr("/model", "reset", name_of(c.reset));
  out.attr("/model", "surrogate", name_of(c.surrogate));
  out.attr("/model", "coding", name_of(c.coding));
}

Network read_model(const std::string& path, bool apply_delta) {
  const nk::h5::File file = nk::h5::File::open(path);
  const std::string schema = file.attr_string("/", "nk_schema").value_or("");
  const bool adapted = schema.rfind("spike-sft.adapted/", 0) == 0;
  if (!adapted) file.require_schema(kModelSchema);
  const std::string& name = file.path();
  Network net;
  Config& c = net.config;
  const nk::h5::Array<int64_t> sizes = file.read<int64_t>("/model/sizes", 1, "layer");
  c.sizes = sizes.data;
  if (c.sizes.size() < 3)
    throw nk::input_error(name, "/model/sizes", "needs inputs, at least one hidden layer and classes");
  for (int64_t s : c.sizes) {
    if (s < 1 || s > (int64_t{1} << 24))
      throw nk::input_error(name, "/model/sizes", "has a layer of " + std::to_string(s) + " units");
  }
  read_neurons(file, c);
  if (file.has("/model/channels")) read_conv_shape(file, c);
  if (adapted) {
    // Deltas of layers the model does not have, or of no known kind.
    for (const std::string& ds : file.datasets()) {
      if (ds.rfind("/delta/", 0) != 0) continue;
      const size_t slash = ds.find('/', 7);
      const std::string layer = ds.substr(7, slash == std::string::npos ? std::string::npos : slash - 7);
      const std::string digits = layer.rfind("layer", 0) == 0 ? layer.substr(5) : "";
      const bool known = !digits.empty() && digits.size() < 6 &&
                         digits.find_first_not_of("0123456789") == std::string::npos &&
                         std::stoll(digits) < c.layers() && std::to_string(std::stoll(digits)) == digits;
      if (!known) {
        throw nk::input_error(name, ds, "is not a delta of the model's layers (/delta/layer0 .. /delta/layer" +
                                            std::to_string(c.layers() - 1) + ")");
      }
    }
  }
  for (int64_t l = 0; l < c.layers(); ++l) {
    const std::string w = "/model/weight" + std::to_string(l), b = "/model/bias" + std::to_string(l);
    const nk::h5::Array<float> weight = file.read<float>(w, 2, "out,in");
    const nk::h5::Array<float> bias = file.read<float>(b, 1, "out");
    const int64_t in = c.weight_cols(l), out = c.weight_rows(l);
    if (weight.shape != std::vector<int64_t>{out, in}) {
      throw nk::input_error(name, w, "shape " + nk::h5::shape_text(weight.shape) + " does not match /model/sizes (" +
                                         std::to_string(out) + "x" + std::to_string(in) + ")");
    }
    if (bias.shape[0] != out) {
      throw nk::input_error(name, b,
                            "has " + std::to_string(bias.shape[0]) + " entries, expected " + std::to_string(out));
    }
    nk::h5::require_finite(name, w, weight);
    nk::h5::require_finite(name, b, bias);
    net.weight.push_back(Eigen::Map<const Matrix>(weight.data.data(), out, in));
    net.bias.push_back(Eigen::Map<const Vector>(bias.data.data(), out));
    // An adapted model: the base plus its sparse delta.
    if (adapted && apply_delta) {
      const std::string d = "/delta/layer" + std::to_string(l);
      const bool indices = file.has(d + "/indices"), values = file.has(d + "/values"), bias_delta = file.has(d + "/bias");
      // spike-sft spe writes every layer's delta (empty where no weight moved).
      if (!indices || !values || (bias_delta && !indices)) {
        throw nk::input_error(name, d + (indices ? "/values" : "/indices"),
                              "missing (an adapted model has /indices and /values for every layer)");
      }
      add_delta(file, l, net.weight.back(), net.bias.back());
    }
  }
  return net;
}

}  // namespace nk::snn
