// train.cpp - pretrain (Adam over BPTT gradients) and eval, with the data
// and model files.
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <cstdio>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "nk/dataset.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/nn/optim.hpp"
#include "nk/progress.hpp"
#include "nk/timer.hpp"
#include "spike-sft/spike_sft.hpp"

namespace spike {

namespace {

/// Rows 'order[first .. first + rows)' of data into x and labels.
void gather(const Dataset& data, const std::vector<int64_t>& order, int64_t first, int64_t rows, snn::Matrix& x,
            std::vector<int64_t>& labels) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = order[static_cast<size_t>(first + r)];
    x.row(r) = data.x.row(i);
    labels[static_cast<size_t>(r)] = data.labels[static_cast<size_t>(i)];
  }
}

Dataset subset(const Dataset& data, const std::vector<int64_t>& rows) {
  Dataset out;
  out.x.resize(static_cast<Eigen::Index>(rows.size()), data.x.cols());
  for (size_t r = 0; r < rows.size(); ++r) {
    out.x.row(static_cast<Eigen::Index>(r)) = data.x.row(rows[r]);
    out.labels.push_back(data.labels[static_cast<size_t>(rows[r])]);
  }
  out.shape = data.shape;
  out.classes = data.classes;
  return out;
}

}  // namespace

void write_model(nk::h5::Writer& out, const snn::Network& net, const std::vector<int64_t>& shape) {
  const snn::Config& c = net.config;
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
  out.attr("/model", "reset", snn::name_of(c.reset));
  out.attr("/model", "surrogate", snn::name_of(c.surrogate));
  out.attr("/model", "coding", snn::name_of(c.coding));
}


namespace {

/// A labelled nk-data source (checked by nk::data), read whole.
Dataset to_dataset(const nk::data::Source& source) {
  const nk::h5::Array<float> values = source.read_all();
  Dataset data;
  data.x = Eigen::Map<const snn::Matrix>(values.data.data(), source.count(), source.item_values());
  data.shape = source.item_shape();
  data.labels = source.labels();
  data.classes = source.classes();
  return data;
}

nk::data::Options labelled(const std::string& group) {
  nk::data::Options options;
  options.image_files = false;
  options.labels = nk::data::Labels::required;
  options.group = group;
  return options;
}

}  // namespace

Dataset read_dataset(const std::string& path) { return to_dataset(nk::data::Source::open(path, labelled(""))); }

Dataset read_dataset(const nk::h5::File& file, const std::string& prefix) {
  return to_dataset(nk::data::Source::open(file, labelled(prefix)));
}

snn::Network read_model(const std::string& path, bool apply_delta) {
  const nk::h5::File file = nk::h5::File::open(path);
  const std::string schema = file.attr_string("/", "nk_schema").value_or("");
  const bool adapted = schema.rfind("spike-sft.adapted/", 0) == 0;
  if (!adapted) file.require_schema(kModelSchema);
  const std::string& name = file.path();
  snn::Network net;
  snn::Config& c = net.config;
  const nk::h5::Array<int64_t> sizes = file.read<int64_t>("/model/sizes", 1, "layer");
  c.sizes = sizes.data;
  if (c.sizes.size() < 3) throw nk::input_error(name, "/model/sizes", "needs inputs, at least one hidden layer and classes");
  for (int64_t s : c.sizes) {
    if (s < 1 || s > (int64_t{1} << 24)) throw nk::input_error(name, "/model/sizes", "has a layer of " + std::to_string(s) + " units");
  }
  auto number = [&](const char* key) {
    const auto v = file.attr_number("/model", key);
    if (!v) throw nk::input_error(name, "/model", std::string("attribute ") + key + " is missing");
    return *v;
  };
  auto text = [&](const char* key) {
    const auto v = file.attr_string("/model", key);
    if (!v) throw nk::input_error(name, "/model", std::string("attribute ") + key + " is missing");
    return *v;
  };
  c.steps = static_cast<int64_t>(number("steps"));
  c.beta = static_cast<float>(number("beta"));
  c.threshold = static_cast<float>(number("threshold"));
  c.slope = static_cast<float>(number("slope"));
  try {
    c.reset = snn::parse_reset(text("reset"));
    c.surrogate = snn::parse_surrogate(text("surrogate"));
    c.coding = snn::parse_coding(text("coding"));
  } catch (const std::invalid_argument& e) {
    throw nk::input_error(name, "/model", e.what());
  }
  if (c.steps < 1 || c.steps > 100000) throw nk::input_error(name, "/model", "attribute steps = " + std::to_string(c.steps) + " (T >= 1)");
  if (file.has("/model/channels")) {
    const nk::h5::Array<int64_t> channels = file.read<int64_t>("/model/channels", 1, "block");
    const nk::h5::Array<int64_t> image = file.read<int64_t>("/model/image", 1, "axis");
    if (image.size() != 3) throw nk::input_error(name, "/model/image", "needs 3 entries (height, width, channels)");
    for (int64_t v : image.data)
      if (v < 1 || v > 65536) throw nk::input_error(name, "/model/image", "has a side of " + std::to_string(v));
    for (int64_t v : channels.data)
      if (v < 1 || v > 65536) throw nk::input_error(name, "/model/channels", "has a block of " + std::to_string(v) + " channels");
    snn::Config shape;
    try {
      shape.set_conv(image.data[0], image.data[1], image.data[2], channels.data, c.sizes.back());
    } catch (const std::invalid_argument& e) {
      throw nk::input_error(name, "/model/channels", e.what());
    }
    if (shape.sizes != c.sizes) throw nk::input_error(name, "/model/sizes", "does not match /model/channels and /model/image");
    c.channels = shape.channels;
    c.height = shape.height;
    c.width = shape.width;
    c.in_channels = shape.in_channels;
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
    if (bias.shape[0] != out) throw nk::input_error(name, b, "has " + std::to_string(bias.shape[0]) + " entries, expected " + std::to_string(out));
    nk::h5::require_finite(name, w, weight);
    nk::h5::require_finite(name, b, bias);
    net.weight.push_back(Eigen::Map<const snn::Matrix>(weight.data.data(), out, in));
    net.bias.push_back(Eigen::Map<const snn::Vector>(bias.data.data(), out));
    // An adapted model: the base plus its sparse delta.
    const std::string delta = "/delta/layer" + std::to_string(l);
    if (adapted && apply_delta && file.has(delta + "/indices")) {
      const nk::h5::Array<int64_t> index = file.read<int64_t>(delta + "/indices", 1, "entry");
      const nk::h5::Array<float> value = file.read<float>(delta + "/values", 1, "entry");
      if (value.shape != index.shape) throw nk::input_error(name, delta + "/values", "does not match /indices");
      nk::h5::require_finite(name, delta + "/values", value);
      for (int64_t e = 0; e < index.size(); ++e) {
        const int64_t at = index.data[static_cast<size_t>(e)];
        if (at < 0 || at >= out * in) throw nk::input_error(name, delta + "/indices", "entry " + std::to_string(e) + " is outside the weight matrix");
        net.weight.back().data()[at] += value.data[static_cast<size_t>(e)];
      }
      if (file.has(delta + "/bias")) {
        const nk::h5::Array<float> db = file.read<float>(delta + "/bias", 1, "out");
        if (db.shape[0] != out) throw nk::input_error(name, delta + "/bias", "does not match the layer");
        net.bias.back() += Eigen::Map<const snn::Vector>(db.data.data(), out);
      }
    }
  }
  return net;
}

snn::BatchStats evaluate(const snn::Network& net, const Dataset& data, int64_t batch, uint64_t seed) {
  nk::Rng rng(seed);
  snn::BatchStats total;
  total.rate.assign(static_cast<size_t>(net.config.hidden_layers()), 0.0);
  std::vector<int64_t> order(static_cast<size_t>(data.size()));
  std::iota(order.begin(), order.end(), 0);
  std::vector<int64_t> labels(static_cast<size_t>(batch));
  for (int64_t first = 0; first < data.size(); first += batch) {
    const int64_t rows = std::min(batch, data.size() - first);
    snn::Workspace ws(net.config, rows);
    snn::Matrix x(rows, data.x.cols());
    labels.resize(static_cast<size_t>(rows));
    gather(data, order, first, rows, x, labels);
    const snn::BatchStats s = snn::forward(net, x, labels.data(), ws, &rng);
    total.loss += s.loss * static_cast<double>(rows);
    total.correct += s.correct;
    for (size_t h = 0; h < s.rate.size(); ++h) total.rate[h] += s.rate[h] * static_cast<double>(rows);
  }
  total.loss /= static_cast<double>(data.size());
  for (double& r : total.rate) r /= static_cast<double>(data.size());
  return total;
}

void pretrain(const TrainOptions& o, const nk::RunEnv& env) {
  snn::Config c;
  try {
    c.reset = snn::parse_reset(o.reset);
    c.surrogate = snn::parse_surrogate(o.surrogate);
    c.coding = snn::parse_coding(o.coding);
  } catch (const std::invalid_argument& e) {
    throw nk::usage_error(e.what());
  }
  if (o.hidden.empty()) throw nk::usage_error("--hidden needs at least one layer size");
  Dataset all = read_dataset(o.input);
  nk::Rng rng(env.seed);
  std::vector<int64_t> order(static_cast<size_t>(all.size()));
  std::iota(order.begin(), order.end(), 0);
  nk::shuffle(order, rng);
  if (o.limit > 0 && o.limit < all.size()) order.resize(static_cast<size_t>(o.limit));
  Dataset train, test;
  if (!o.test.empty()) {
    train = subset(all, order);
    test = read_dataset(o.test);
    if (test.x.cols() != train.x.cols()) {
      throw nk::input_error(o.test, "/images", "examples have " + std::to_string(test.x.cols()) + " values, the training data " +
                                                   std::to_string(train.x.cols()));
    }
  } else {
    const auto held = static_cast<size_t>(std::llround(o.holdout * static_cast<double>(order.size())));
    test = subset(all, std::vector<int64_t>(order.end() - static_cast<std::ptrdiff_t>(held), order.end()));
    order.resize(order.size() - held);
    train = subset(all, order);
  }
  if (train.size() < o.batch) {
    throw nk::usage_error("--batch " + std::to_string(o.batch) + " is larger than the " + std::to_string(train.size()) + " training examples");
  }
  const int64_t classes = std::max(train.classes, test.classes);
  if (!o.conv.empty()) {
    if (train.shape.size() != 3) throw nk::input_error(o.input, "/images", "--conv needs images [N,H,W,C], not vectors");
    try {
      c.set_conv(train.shape[0], train.shape[1], train.shape[2], o.conv, classes);
    } catch (const std::invalid_argument& e) {
      throw nk::input_error(o.input, "/images", e.what());
    }
  } else {
    c.sizes.push_back(train.x.cols());
    c.sizes.insert(c.sizes.end(), o.hidden.begin(), o.hidden.end());
    c.sizes.push_back(classes);
  }
  c.steps = o.steps;
  c.beta = static_cast<float>(o.beta);
  c.threshold = static_cast<float>(o.threshold);
  c.slope = static_cast<float>(o.slope);
  snn::Network net = snn::Network::init(c, rng);
  nk::h5::Writer out(o.output, kModelSchema, o.no_clobber);  // fails early on a bad output path
  Eigen::VectorXd theta = net.flat();
  nk::AdamConfig adam_config;
  adam_config.learning_rate = o.learning_rate;
  nk::Adam adam(theta.size(), adam_config);
  snn::Workspace ws(c, o.batch);
  snn::DenseGradient gradient(net);
  snn::Matrix x(o.batch, train.x.cols());
  std::vector<int64_t> labels(static_cast<size_t>(o.batch));
  std::vector<int64_t> train_order(static_cast<size_t>(train.size()));
  std::iota(train_order.begin(), train_order.end(), 0);
  const int64_t batches = train.size() / o.batch;  // the last partial batch is dropped
  std::vector<double> epoch_loss, train_accuracy, test_accuracy, epoch_seconds, first_rate;
  spdlog::info("{} training and {} test examples, {} classes; network {} with T = {}, {} parameters", train.size(), test.size(),
               classes, fmt::format("{}", fmt::join(c.sizes, "-")), c.steps, c.parameter_count());
  for (int64_t epoch = 0; epoch < o.epochs; ++epoch) {
    nk::shuffle(train_order, rng);
    nk::Progress progress("epoch " + std::to_string(epoch + 1), batches);
    const nk::Stopwatch watch;
    double loss = 0;
    int64_t correct = 0;
    for (int64_t k = 0; k < batches; ++k) {
      gather(train, train_order, k * o.batch, o.batch, x, labels);
      const snn::BatchStats s = snn::forward(net, x, labels.data(), ws, &rng);
      if (!std::isfinite(s.loss)) throw nk::Error(nk::Exit::runtime, "the loss became " + std::to_string(s.loss) + " in epoch " + std::to_string(epoch + 1) + ": lower --lr");
      loss += s.loss;
      correct += s.correct;
      gradient.compute(net, labels.data(), ws);
      adam.step(theta, gradient.flat());
      net.set_flat(theta);
      progress.update(k + 1);
    }
    progress.finish();
    epoch_seconds.push_back(watch.seconds());
    epoch_loss.push_back(loss / static_cast<double>(batches));
    train_accuracy.push_back(static_cast<double>(correct) / static_cast<double>(batches * o.batch));
    const snn::BatchStats t = evaluate(net, test, 256, env.seed + 1);
    test_accuracy.push_back(static_cast<double>(t.correct) / static_cast<double>(test.size()));
    first_rate.push_back(t.rate.empty() ? 0.0 : t.rate[0]);
    spdlog::info("epoch {}/{}: loss {:.4f}, train {:.2f}%, test {:.2f}%, {:.2f} s, firing rate {:.3f}", epoch + 1, o.epochs,
                 epoch_loss.back(), 100 * train_accuracy.back(), 100 * test_accuracy.back(), epoch_seconds.back(), first_rate.back());
  }
  write_model(out, net, train.shape);
  const auto epochs = static_cast<int64_t>(epoch_loss.size());
  out.write("/metrics/loss", epoch_loss.data(), {epochs}, "epoch");
  out.write("/metrics/train_accuracy", train_accuracy.data(), {epochs}, "epoch");
  out.write("/metrics/test_accuracy", test_accuracy.data(), {epochs}, "epoch");
  out.write("/metrics/epoch_seconds", epoch_seconds.data(), {epochs}, "epoch", "s");
  out.write("/metrics/firing_rate", first_rate.data(), {epochs}, "epoch");
  out.attr("/", "test_accuracy", test_accuracy.empty() ? 0.0 : test_accuracy.back());
  out.attr("/", "activation_bytes", ws.activation_bytes());
  out.attr("/", "gradient_bytes", c.parameter_count() * static_cast<int64_t>(sizeof(float)));
  out.attr("/", "optimizer_bytes", c.parameter_count() * static_cast<int64_t>(2 * sizeof(double)));
  out.commit();
}

void eval(const EvalOptions& o, const nk::RunEnv& env) {
  if (o.data.empty() == o.task.empty()) throw nk::usage_error("give --data FILE or --task FILE:NAME (its test split)");
  const snn::Network net = read_model(o.input);
  const std::string source = o.task.empty() ? (o.data == "-" ? "standard input" : o.data) : o.task;
  const Dataset data = o.task.empty() ? read_dataset(o.data) : read_task(o.task).test;
  if (data.x.cols() != net.config.sizes.front()) {
    throw nk::input_error(source, "/images",
                          "examples have " + std::to_string(data.x.cols()) + " values, the model takes " +
                              std::to_string(net.config.sizes.front()));
  }
  if (data.classes > net.config.sizes.back()) {
    throw nk::input_error(source, "/labels",
                          "has label " + std::to_string(data.classes - 1) + " but the model has " + std::to_string(net.config.sizes.back()) + " classes");
  }
  const nk::Stopwatch watch;
  const snn::BatchStats s = evaluate(net, data, o.batch, env.seed);
  const double seconds = watch.seconds();
  const double accuracy = static_cast<double>(s.correct) / static_cast<double>(data.size());
  std::printf("accuracy\t%.4f\nloss\t%.4f\nexamples\t%lld\n", accuracy, s.loss, static_cast<long long>(data.size()));
  for (size_t h = 0; h < s.rate.size(); ++h) std::printf("firing_rate_%zu\t%.4f\n", h, s.rate[h]);
  if (!o.output.empty()) {
    nk::h5::Writer out(o.output, kEvalSchema, o.no_clobber);
    out.write("/firing_rate", s.rate.data(), {static_cast<int64_t>(s.rate.size())}, "layer");
    out.attr("/", "accuracy", accuracy);
    out.attr("/", "loss", s.loss);
    out.attr("/", "examples", data.size());
    out.attr("/", "seconds", seconds);
    out.commit();
  }
}

}  // namespace spike
