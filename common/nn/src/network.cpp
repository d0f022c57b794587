// network.cpp - layer lines, shape checks, initialisation and the loss.
#include "nk/nn/network.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "nk/rng.hpp"

namespace nk::nn {

namespace {

struct OpName {
  Op op;
  const char* name;
  int args;
  const char* usage;
};

const OpName kOps[] = {
    {Op::flatten, "flatten", 0, "flatten"},
    {Op::linear, "linear", 2, "linear IN OUT"},
    {Op::conv2d, "conv2d", 5, "conv2d IN OUT K STRIDE PAD"},
    {Op::relu, "relu", 0, "relu"},
    {Op::silu, "silu", 0, "silu"},
    {Op::gelu, "gelu", 0, "gelu"},
    {Op::tanh, "tanh", 0, "tanh"},
    {Op::maxpool, "maxpool", 1, "maxpool K"},
    {Op::avgpool, "avgpool", 1, "avgpool K"},
    {Op::upsample, "upsample", 1, "upsample K"},
    {Op::groupnorm, "groupnorm", 2, "groupnorm G C"},
    {Op::layernorm, "layernorm", 1, "layernorm F"},
    {Op::batchnorm, "batchnorm", 1, "batchnorm C"},
};

const OpName& op_name(Op op) {
  for (const auto& entry : kOps)
    if (entry.op == op) return entry;
  throw std::logic_error("nk::nn: layer kind without a name");
}

constexpr int64_t kMaxArg = int64_t{1} << 24;

}  // namespace

LayerSpec LayerSpec::parse(const std::string& line) {
  std::istringstream in(line);
  std::string word;
  if (!(in >> word)) throw std::invalid_argument("empty layer line");
  const OpName* found = nullptr;
  for (const auto& entry : kOps)
    if (word == entry.name) found = &entry;
  if (!found) throw std::invalid_argument("unknown layer '" + word + "'");
  std::vector<int64_t> args;
  std::string token;
  while (in >> token) {
    size_t used = 0;
    long long value = 0;
    try {
      value = std::stoll(token, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != token.size() || value < 0 || value > kMaxArg) {
      throw std::invalid_argument(std::string(found->name) + ": argument '" + token + "' is not an integer in [0, 2^24]");
    }
    args.push_back(value);
  }
  if (static_cast<int>(args.size()) != found->args) {
    throw std::invalid_argument(std::string("'") + line + "': expected " + found->usage);
  }
  LayerSpec spec;
  spec.op = found->op;
  switch (spec.op) {
    case Op::linear: spec.in = args[0], spec.out = args[1]; break;
    case Op::conv2d: spec.in = args[0], spec.out = args[1], spec.k = args[2], spec.stride = args[3], spec.pad = args[4]; break;
    case Op::maxpool:
    case Op::avgpool:
    case Op::upsample: spec.k = args[0]; break;
    case Op::groupnorm: spec.in = args[0], spec.out = args[1]; break;
    case Op::layernorm:
    case Op::batchnorm: spec.out = args[0]; break;
    default: break;
  }
  const bool positive = (spec.op != Op::linear && spec.op != Op::conv2d && spec.op != Op::groupnorm) ||
                        (spec.in > 0 && spec.out > 0);
  if (!positive || ((spec.op == Op::layernorm || spec.op == Op::batchnorm) && spec.out == 0) ||
      ((spec.op == Op::conv2d || spec.op == Op::maxpool || spec.op == Op::avgpool || spec.op == Op::upsample) &&
       spec.k == 0) ||
      (spec.op == Op::conv2d && spec.stride == 0)) {
    throw std::invalid_argument("'" + line + "': sizes must be positive (" + found->usage + ")");
  }
  return spec;
}

std::string LayerSpec::text() const {
  std::string s = op_name(op).name;
  auto add = [&](int64_t v) { s += " " + std::to_string(v); };
  switch (op) {
    case Op::linear: add(in), add(out); break;
    case Op::conv2d: add(in), add(out), add(k), add(stride), add(pad); break;
    case Op::maxpool:
    case Op::avgpool:
    case Op::upsample: add(k); break;
    case Op::groupnorm: add(in), add(out); break;
    case Op::layernorm:
    case Op::batchnorm: add(out); break;
    default: break;
  }
  return s;
}

std::string Shape::text() const { return std::to_string(h) + "," + std::to_string(w) + "," + std::to_string(c); }

template <class T>
std::vector<int64_t> Layer<T>::weight_shape() const {
  switch (spec.op) {
    case Op::linear: return {spec.out, spec.in};
    case Op::conv2d: return {spec.out, spec.in, spec.k, spec.k};
    case Op::groupnorm:
    case Op::layernorm:
    case Op::batchnorm: return {spec.out};
    default: return {};
  }
}

template <class T>
std::vector<int64_t> Layer<T>::bias_shape() const {
  switch (spec.op) {
    case Op::linear:
    case Op::conv2d:
    case Op::groupnorm:
    case Op::layernorm:
    case Op::batchnorm: return {spec.out};
    default: return {};
  }
}

namespace {

int64_t product(const std::vector<int64_t>& shape) {
  int64_t n = shape.empty() ? 0 : 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace

template <class T>
Network<T> Network<T>::build(const std::vector<LayerSpec>& specs, Shape input) {
  if (input.h <= 0 || input.w <= 0 || input.c <= 0 || input.h > kMaxArg || input.w > kMaxArg || input.c > kMaxArg ||
      input.size() > kMaxItemValues) {
    throw std::invalid_argument("input shape " + input.text() + " is empty or holds more than 2^26 values");
  }
  Network net;
  net.input_ = input;
  Shape shape = input;
  int64_t parameters = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    const LayerSpec& s = specs[i];
    auto fail = [&](const std::string& why) {
      throw std::invalid_argument("layer " + std::to_string(i) + " (" + s.text() + "): " + why);
    };
    const bool flat = shape.h == 1 && shape.w == 1;
    Shape out = shape;
    switch (s.op) {
      case Op::flatten: out = {1, 1, shape.size()}; break;
      case Op::linear:
        if (!flat) fail("needs a flat input (flatten first), found " + shape.text());
        if (shape.c != s.in) fail("input has " + std::to_string(shape.c) + " values");
        out = {1, 1, s.out};
        break;
      case Op::conv2d: {
        if (shape.c != s.in) fail("input has " + std::to_string(shape.c) + " channels (shape " + shape.text() + ")");
        const int64_t h = (shape.h + 2 * s.pad - s.k) / s.stride + 1, w = (shape.w + 2 * s.pad - s.k) / s.stride + 1;
        if (shape.h + 2 * s.pad < s.k || shape.w + 2 * s.pad < s.k) fail("kernel larger than the padded input " + shape.text());
        out = {h, w, s.out};
        break;
      }
      case Op::maxpool:
      case Op::avgpool:
        if (shape.h < s.k || shape.w < s.k) fail("window larger than the input " + shape.text());
        out = {shape.h / s.k, shape.w / s.k, shape.c};
        break;
      case Op::upsample:
        if (shape.h * s.k > kMaxArg || shape.w * s.k > kMaxArg) fail("output too large");
        out = {shape.h * s.k, shape.w * s.k, shape.c};
        break;
      case Op::groupnorm:
        if (shape.c != s.out) fail("input has " + std::to_string(shape.c) + " channels");
        if (s.out % s.in != 0) fail("G must divide C");
        break;
      case Op::layernorm:
        if (!flat || shape.c != s.out) fail("needs a flat input of F values, found " + shape.text());
        break;
      case Op::batchnorm:
        if (shape.c != s.out) fail("input has " + std::to_string(shape.c) + " channels");
        break;
      default: break;
    }
    if (out.size() > kMaxItemValues || out.size() <= 0) fail("output of " + out.text() + " values is empty or above 2^26");
    Layer<T> layer;
    layer.spec = s;
    layer.in = shape;
    layer.out = out;
    parameters += product(layer.weight_shape()) + product(layer.bias_shape());
    if (parameters > kMaxParameters) fail("more than 2^31 parameters");
    net.layers.push_back(std::move(layer));
    shape = out;
  }
  return net;
}

template <class T>
void Network<T>::init(uint64_t seed) {
  Rng root(seed);
  for (size_t i = 0; i < layers.size(); ++i) {
    Layer<T>& layer = layers[i];
    Rng rng = root.split(i);
    const int64_t nw = product(layer.weight_shape()), nb = product(layer.bias_shape());
    layer.weight.assign(static_cast<size_t>(nw), T(1));
    layer.bias.assign(static_cast<size_t>(nb), T(0));
    if (layer.spec.op == Op::linear || layer.spec.op == Op::conv2d) {
      const double fan_in = static_cast<double>(layer.spec.in * std::max<int64_t>(1, layer.spec.k * layer.spec.k));
      const double bound = 1 / std::sqrt(fan_in);
      for (auto& w : layer.weight) w = static_cast<T>((2 * rng.uniform() - 1) * bound);
      for (auto& b : layer.bias) b = static_cast<T>((2 * rng.uniform() - 1) * bound);
    }
    if (layer.spec.op == Op::batchnorm) {
      layer.running_mean.assign(static_cast<size_t>(nb), T(0));
      layer.running_var.assign(static_cast<size_t>(nb), T(1));
    }
  }
}

template <class T>
template <class U>
Network<U> Network<T>::cast() const {
  std::vector<LayerSpec> specs;
  for (const auto& layer : layers) specs.push_back(layer.spec);
  Network<U> net = Network<U>::build(specs, input_);
  for (size_t i = 0; i < layers.size(); ++i) {
    auto copy = [](const std::vector<T>& from) { return std::vector<U>(from.begin(), from.end()); };
    net.layers[i].weight = copy(layers[i].weight);
    net.layers[i].bias = copy(layers[i].bias);
    net.layers[i].running_mean = copy(layers[i].running_mean);
    net.layers[i].running_var = copy(layers[i].running_var);
  }
  return net;
}

template <class T>
int64_t Network<T>::parameter_count() const {
  int64_t n = 0;
  for (const auto& layer : layers) n += product(layer.weight_shape()) + product(layer.bias_shape());
  return n;
}

template <class T>
std::vector<std::string> Network<T>::arch() const {
  std::vector<std::string> lines;
  for (const auto& layer : layers) lines.push_back(layer.spec.text());
  return lines;
}

template <class T>
double Network<T>::forward_macs() const {
  double macs = 0;
  for (const auto& layer : layers) {
    if (layer.spec.op == Op::linear) macs += static_cast<double>(layer.spec.in) * static_cast<double>(layer.spec.out);
    if (layer.spec.op == Op::conv2d) {
      macs += static_cast<double>(layer.out.size()) * static_cast<double>(layer.spec.in * layer.spec.k * layer.spec.k);
    }
  }
  return macs;
}

template <class T>
void Gradients<T>::resize(const Network<T>& net) {
  weight.resize(net.layers.size());
  bias.resize(net.layers.size());
  for (size_t i = 0; i < net.layers.size(); ++i) {
    weight[i].assign(net.layers[i].weight.size(), T(0));
    bias[i].assign(net.layers[i].bias.size(), T(0));
  }
}

template <class T>
double softmax_cross_entropy(const T* logits, const int64_t* labels, int64_t batch, int64_t classes, T* grad,
                             int64_t* correct) {
  double loss = 0;
  int64_t right = 0;
#pragma omp parallel for reduction(+ : loss, right) schedule(static)
  for (int64_t b = 0; b < batch; ++b) {
    const T* z = logits + b * classes;
    int64_t best = 0;
    for (int64_t k = 1; k < classes; ++k)
      if (z[k] > z[best]) best = k;
    double sum = 0;
    for (int64_t k = 0; k < classes; ++k) sum += std::exp(static_cast<double>(z[k] - z[best]));
    const double log_sum = std::log(sum) + static_cast<double>(z[best]);
    loss += log_sum - static_cast<double>(z[labels[b]]);
    if (best == labels[b]) ++right;
    if (grad) {
      for (int64_t k = 0; k < classes; ++k) {
        const double p = std::exp(static_cast<double>(z[k]) - log_sum);
        grad[b * classes + k] = static_cast<T>((p - (k == labels[b] ? 1.0 : 0.0)) / static_cast<double>(batch));
      }
    }
  }
  if (correct) *correct += right;
  return loss / static_cast<double>(batch);
}

template struct Layer<float>;
template struct Layer<double>;
template class Network<float>;
template class Network<double>;
template Network<double> Network<float>::cast<double>() const;
template Network<float> Network<double>::cast<float>() const;
template struct Gradients<float>;
template struct Gradients<double>;
template double softmax_cross_entropy<float>(const float*, const int64_t*, int64_t, int64_t, float*, int64_t*);
template double softmax_cross_entropy<double>(const double*, const int64_t*, int64_t, int64_t, double*, int64_t*);

}  // namespace nk::nn
