// pretrain.cpp - pretrain: a LIF network trained by Adam over BPTT gradients
// (surrogate spikes) on labelled images, with a held-out test split.
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/nn/optim.hpp"
#include "nk/progress.hpp"
#include "nk/timer.hpp"
#include "spike-sft/dense_adam.hpp"
#include "spike-sft/spike_sft.hpp"

namespace spike {

namespace {

/// The rows 'rows' of data, in that order.
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

/// The neuron model of the options (checked before any file is read: usage errors first).
snn::Config neuron_config(const TrainOptions& o) {
  snn::Config c;
  try {
    c.reset = snn::parse_reset(o.reset);
    c.surrogate = snn::parse_surrogate(o.surrogate);
    c.coding = snn::parse_coding(o.coding);
  } catch (const std::invalid_argument& e) {
    throw nk::usage_error(e.what());
  }
  if (o.hidden.empty()) throw nk::usage_error("--hidden needs at least one layer size");
  c.steps = o.steps;
  c.beta = static_cast<float>(o.beta);
  c.threshold = static_cast<float>(o.threshold);
  c.slope = static_cast<float>(o.slope);
  return c;
}

struct Split {
  Dataset train, test;
};

/// The training and test examples: a shuffled (and --limit'ed) input, tested
/// on --test or on its last --holdout share. The shuffle is rng's first draw.
Split split_data(const TrainOptions& o, nk::Rng& rng) {
  Dataset all = read_dataset(o.input);
  std::vector<int64_t> order(static_cast<size_t>(all.size()));
  std::iota(order.begin(), order.end(), 0);
  nk::shuffle(order, rng);
  if (o.limit > 0 && o.limit < all.size()) order.resize(static_cast<size_t>(o.limit));
  Split split;
  if (!o.test.empty()) {
    split.train = subset(all, order);
    split.test = read_dataset(o.test);
    if (split.test.x.cols() != split.train.x.cols()) {
      throw nk::input_error(o.test, "/images",
                            "examples have " + std::to_string(split.test.x.cols()) + " values, the training data " +
                                std::to_string(split.train.x.cols()));
    }
  } else {
    const auto held = static_cast<size_t>(std::llround(o.holdout * static_cast<double>(order.size())));
    // The test accuracy of an empty split would be 0/0.
    if (held == 0) {
      throw nk::usage_error("--holdout " + std::to_string(o.holdout) + " holds out none of the " +
                            std::to_string(order.size()) + " examples: give a larger --holdout or --test FILE");
    }
    split.test = subset(all, std::vector<int64_t>(order.end() - static_cast<std::ptrdiff_t>(held), order.end()));
    order.resize(order.size() - held);
    split.train = subset(all, order);
  }
  if (split.train.size() < o.batch) {
    throw nk::usage_error("--batch " + std::to_string(o.batch) + " is larger than the " +
                          std::to_string(split.train.size()) + " training examples");
  }
  return split;
}

/// The layer sizes: conv-LIF-pool blocks of --conv over the images, or dense --hidden layers.
void set_sizes(snn::Config& c, const TrainOptions& o, const Dataset& train, int64_t classes) {
  if (!o.conv.empty()) {
    if (train.shape.size() != 3)
      throw nk::input_error(o.input, "/images", "--conv needs images [N,H,W,C], not vectors");
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
}

}  // namespace

void pretrain(const TrainOptions& o, const nk::RunEnv& env) {
  snn::Config c = neuron_config(o);
  nk::Rng rng(env.seed);
  const Split split = split_data(o, rng);
  const Dataset& train = split.train;
  const Dataset& test = split.test;
  const int64_t classes = std::max(train.classes, test.classes);
  set_sizes(c, o, train, classes);
  snn::Network net = snn::Network::init(c, rng);
  nk::h5::Writer out(o.output, kModelSchema, o.no_clobber);  // fails early on a bad output path
  nk::AdamConfig adam_config;
  adam_config.learning_rate = o.learning_rate;
  nk::Adam adam(0, adam_config);
  DenseAdam dense_adam(net);  // float32, in place: no flat double copy of the parameters per batch
  snn::Workspace ws(c, o.batch);
  snn::DenseGradient gradient(net);
  snn::Matrix x(o.batch, train.x.cols());
  std::vector<int64_t> labels(static_cast<size_t>(o.batch));
  std::vector<int64_t> train_order(static_cast<size_t>(train.size()));
  std::iota(train_order.begin(), train_order.end(), 0);
  const int64_t batches = train.size() / o.batch;  // the last partial batch is dropped
  std::vector<double> epoch_loss, train_accuracy, test_accuracy, epoch_seconds, first_rate;
  spdlog::info("{} training and {} test examples, {} classes; network {} with T = {}, {} parameters", train.size(),
               test.size(), classes, fmt::format("{}", fmt::join(c.sizes, "-")), c.steps, c.parameter_count());
  for (int64_t epoch = 0; epoch < o.epochs; ++epoch) {
    nk::shuffle(train_order, rng);
    nk::Progress progress("epoch " + std::to_string(epoch + 1), batches);
    const nk::Stopwatch watch;
    double loss = 0;
    int64_t correct = 0;
    for (int64_t k = 0; k < batches; ++k) {
      gather(train, train_order, k * o.batch, o.batch, x, labels);
      const snn::BatchStats s = snn::forward(net, x, labels.data(), ws, &rng);
      if (!std::isfinite(s.loss)) {
        throw nk::Error(nk::Exit::runtime, "the loss became " + std::to_string(s.loss) + " in epoch " +
                                               std::to_string(epoch + 1) + ": lower --lr");
      }
      loss += s.loss;
      correct += s.correct;
      gradient.compute(net, labels.data(), ws);
      adam.begin_step();
      dense_adam.step(adam, net, gradient);
      progress.update(k + 1);
    }
    progress.finish();
    epoch_seconds.push_back(watch.seconds());
    epoch_loss.push_back(loss / static_cast<double>(batches));
    train_accuracy.push_back(static_cast<double>(correct) / static_cast<double>(batches * o.batch));
    const snn::BatchStats t = evaluate(net, test, 256, env.seed + 1);
    test_accuracy.push_back(static_cast<double>(t.correct) / static_cast<double>(test.size()));
    first_rate.push_back(t.rate.empty() ? 0.0 : t.rate[0]);
    spdlog::info("epoch {}/{}: loss {:.4f}, train {:.2f}%, test {:.2f}%, {:.2f} s, firing rate {:.3f}", epoch + 1,
                 o.epochs, epoch_loss.back(), 100 * train_accuracy.back(), 100 * test_accuracy.back(),
                 epoch_seconds.back(), first_rate.back());
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
  out.attr("/", "optimizer_bytes", c.parameter_count() * static_cast<int64_t>(2 * sizeof(float)));
  out.commit();
}

}  // namespace spike
