// model_file.cpp - nk-nn.model/1 in and out.
#include "nk/nn/model_file.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "nk/error.hpp"

namespace nk::nn {

namespace {

std::string layer_group(const std::string& group, size_t index) {
  char name[32];
  std::snprintf(name, sizeof name, "/params/%03zu/", index);
  return group + name;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

Shape parse_input(const std::string& path, const std::string& group, const std::string& text) {
  Shape shape;
  char tail = 0;
  long long h = 0, w = 0, c = 0;
  if (std::sscanf(text.c_str(), "%lld,%lld,%lld%c", &h, &w, &c, &tail) != 3 || h <= 0 || w <= 0 || c <= 0) {
    throw input_error(path, group, "attribute input is '" + text + "', expected \"H,W,C\" with positive sizes");
  }
  shape.h = h, shape.w = w, shape.c = c;
  return shape;
}

}  // namespace

ModelFile read_model(const std::string& path) {
  const h5::File file = h5::File::open(path);
  return read_model(file);
}

Network<float> read_network(const h5::File& file, const std::string& group) {
  const std::string& path = file.path();
  const std::string arch = group + "/arch";
  file.require(arch);
  const std::vector<std::string> lines = file.read_strings(arch);
  std::vector<LayerSpec> specs;
  for (size_t i = 0; i < lines.size(); ++i) {
    try {
      specs.push_back(LayerSpec::parse(lines[i]));
    } catch (const std::invalid_argument& e) {
      throw input_error(path, arch, "line " + std::to_string(i) + ": " + e.what());
    }
  }
  if (specs.empty()) throw input_error(path, arch, "holds no layers");
  const auto input = file.attr_string(group, "input");
  if (!input) throw input_error(path, group, "attribute input (\"H,W,C\") is missing");
  Network<float> network;
  try {
    network = Network<float>::build(specs, parse_input(path, group, *input));
  } catch (const std::invalid_argument& e) {
    throw input_error(path, arch, e.what());
  }
  for (size_t i = 0; i < network.layers.size(); ++i) {
    Layer<float>& layer = network.layers[i];
    auto load = [&](const std::string& name, const std::vector<int64_t>& shape, std::vector<float>& into) {
      if (shape.empty()) return;
      const std::string dataset = layer_group(group, i) + name;
      file.require(dataset);
      const h5::Array<float> a = file.read<float>(dataset);
      if (a.shape != shape) {
        throw input_error(path, dataset, "expected " + shape_text(shape) + " for layer '" + layer.spec.text() +
                                             "', found " + shape_text(a.shape));
      }
      for (int64_t j = 0; j < a.size(); ++j) {
        if (!std::isfinite(a.data[j])) throw input_error(path, dataset, "value " + std::to_string(j) + " is not finite");
      }
      into = a.data;
    };
    load("weight", layer.weight_shape(), layer.weight);
    load("bias", layer.bias_shape(), layer.bias);
    if (layer.spec.op == Op::batchnorm) {
      load("running_mean", layer.bias_shape(), layer.running_mean);
      load("running_var", layer.bias_shape(), layer.running_var);
      for (float v : layer.running_var) {
        if (!(v >= 0)) throw input_error(path, layer_group(group, i) + "running_var", "a variance is negative");
      }
    }
  }
  return network;
}

ModelFile read_model(const h5::File& file) {
  file.require_schema(kModelSchema);
  ModelFile model;
  model.network = read_network(file, "/model");
  const std::string& path = file.path();
  const Shape out = model.network.output();
  if (const auto classes = file.attr_number("/model", "classes")) {
    if (!(*classes >= 2) || *classes != std::floor(*classes) || *classes != static_cast<double>(out.size())) {
      throw input_error(path, "/model", "attribute classes is " + std::to_string(*classes) + ", the network has " +
                                            std::to_string(out.size()) + " outputs");
    }
    model.classes = static_cast<int64_t>(*classes);
  }
  if (const auto sigma = file.attr_number("/model", "sigma")) {
    if (!(*sigma > 0) || !std::isfinite(*sigma)) {
      throw input_error(path, "/model", "attribute sigma is " + std::to_string(*sigma) + " (expected a positive noise level)");
    }
    model.sigma = *sigma;
  }
  return model;
}

void write_model(h5::Writer& out, const Network<float>& network, int64_t classes, std::optional<double> sigma) {
  write_network(out, network, "/model");
  if (classes > 0) out.attr("/model", "classes", classes);
  if (sigma) out.attr("/model", "sigma", *sigma);
}

void write_network(h5::Writer& out, const Network<float>& network, const std::string& group) {
  out.write_strings(group + "/arch", network.arch(), "L");
  out.attr(group, "input", network.input().text());
  for (size_t i = 0; i < network.layers.size(); ++i) {
    const Layer<float>& layer = network.layers[i];
    auto save = [&](const std::string& name, const std::vector<int64_t>& shape, const std::vector<float>& values) {
      if (shape.empty()) return;
      std::string dims = shape.size() == 4 ? "OUT,IN,K,K" : shape.size() == 2 ? "OUT,IN" : "OUT";
      out.write(layer_group(group, i) + name, values.data(), shape, dims);
    };
    save("weight", layer.weight_shape(), layer.weight);
    save("bias", layer.bias_shape(), layer.bias);
    if (layer.spec.op == Op::batchnorm) {
      save("running_mean", layer.bias_shape(), layer.running_mean);
      save("running_var", layer.bias_shape(), layer.running_var);
    }
  }
}

}  // namespace nk::nn
