// train.cpp - the classifier trainer.
#include "nk/nn/train.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "nk/kernels/vector.hpp"
#include "nk/nn/optim.hpp"
#include "nk/rng.hpp"
#include "nk/timer.hpp"

namespace nk::nn {

void train_classifier(Network<float>& network, const float* x, const int64_t* labels, int64_t n,
                      const ClassifierTraining& config, const std::function<void(const EpochReport&)>& on_epoch) {
  const int64_t batch = std::min(config.batch, n), values = network.input().size();
  const int64_t classes = network.output().size();
  Workspace<float> ws(network, batch);
  Gradients<float> grads;
  grads.resize(network);
  struct Moments {
    std::vector<float> m, v;
  };
  std::vector<Moments> weight_moments(network.layers.size()), bias_moments(network.layers.size());
  for (size_t i = 0; i < network.layers.size(); ++i) {
    weight_moments[i] = {std::vector<float>(network.layers[i].weight.size()), std::vector<float>(network.layers[i].weight.size())};
    bias_moments[i] = {std::vector<float>(network.layers[i].bias.size()), std::vector<float>(network.layers[i].bias.size())};
  }
  AdamConfig adam_config;
  adam_config.learning_rate = config.learning_rate;
  Adam adam(0, adam_config);
  std::vector<float> inputs(static_cast<size_t>(batch * values)), noise(static_cast<size_t>(batch * values));
  std::vector<float> logit_grad(static_cast<size_t>(batch * classes));
  std::vector<int64_t> batch_labels(static_cast<size_t>(batch)), order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  const Rng root(config.seed);
  const int64_t steps_per_epoch = n / batch, total_steps = steps_per_epoch * config.epochs;
  int64_t step = 0;
  for (int64_t epoch = 1; epoch <= config.epochs; ++epoch) {
    Stopwatch clock;
    Rng order_rng = root.split(2 * static_cast<uint64_t>(epoch));
    shuffle(order, order_rng);
    double loss_sum = 0;
    int64_t correct = 0;
    for (int64_t s = 0; s < steps_per_epoch; ++s, ++step) {
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t item = order[static_cast<size_t>(s * batch + b)];
        std::memcpy(inputs.data() + b * values, x + item * values, sizeof(float) * static_cast<size_t>(values));
        batch_labels[b] = labels[item];
      }
      if (config.noise_sigma > 0) {
        Rng noise_rng = root.split(2 * static_cast<uint64_t>(step) + 1);
        kernels::fill_normal(noise_rng, noise.data(), batch * values, static_cast<float>(config.noise_sigma));
        for (int64_t j = 0; j < batch * values; ++j) inputs[j] += noise[j];
      }
      forward(network, inputs.data(), batch, ws);
      loss_sum += softmax_cross_entropy(ws.output(), batch_labels.data(), batch, classes, logit_grad.data(), &correct);
      backward(network, logit_grad.data(), batch, ws, &grads, static_cast<float*>(nullptr));
      const double rate = cosine_rate(config.learning_rate, static_cast<double>(step) / static_cast<double>(total_steps));
      adam.set_learning_rate(rate);
      adam.begin_step();
      for (size_t i = 0; i < network.layers.size(); ++i) {
        Layer<float>& layer = network.layers[i];
        const bool decays = config.weight_decay > 0 && (layer.spec.op == Op::linear || layer.spec.op == Op::conv2d);
        if (decays) {
          const auto shrink = static_cast<float>(1 - rate * config.weight_decay);
          for (float& w : layer.weight) w *= shrink;
        }
        adam.step_entries(static_cast<int64_t>(layer.weight.size()), grads.weight[i].data(), weight_moments[i].m.data(),
                          weight_moments[i].v.data(), [&](int64_t e) -> float& { return layer.weight[e]; });
        adam.step_entries(static_cast<int64_t>(layer.bias.size()), grads.bias[i].data(), bias_moments[i].m.data(),
                          bias_moments[i].v.data(), [&](int64_t e) -> float& { return layer.bias[e]; });
      }
    }
    EpochReport report;
    report.epoch = epoch;
    report.loss = loss_sum / static_cast<double>(std::max<int64_t>(1, steps_per_epoch));
    report.accuracy = static_cast<double>(correct) / static_cast<double>(std::max<int64_t>(1, steps_per_epoch * batch));
    report.seconds = clock.seconds();
    if (on_epoch) on_epoch(report);
  }
}

std::vector<int64_t> predict_classes(const Network<float>& network, const float* x, int64_t n, int64_t batch) {
  batch = std::max<int64_t>(1, std::min(batch, n));
  Workspace<float> ws(network, batch);
  const int64_t values = network.input().size(), classes = network.output().size();
  std::vector<int64_t> predictions(static_cast<size_t>(n));
  for (int64_t start = 0; start < n; start += batch) {
    const int64_t rows = std::min(batch, n - start);
    forward(network, x + start * values, rows, ws, Pass::inference);
    const float* logits = ws.output();
    for (int64_t b = 0; b < rows; ++b) {
      predictions[start + b] = std::max_element(logits + b * classes, logits + (b + 1) * classes) - (logits + b * classes);
    }
  }
  return predictions;
}

}  // namespace nk::nn
