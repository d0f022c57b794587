// eval.cpp - eval: accuracy, loss and firing rates of a model on labelled
// data; evaluate() is also pretrain's, spe's and stats's measure.
#include <cstdio>

#include <algorithm>
#include <numeric>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/timer.hpp"
#include "spike-sft/spike_sft.hpp"

namespace spike {

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
                          "has label " + std::to_string(data.classes - 1) + " but the model has " +
                              std::to_string(net.config.sizes.back()) + " classes");
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
