// stats.cpp - the observation behind SPE: how a trained SNN's weight
// magnitudes are distributed, and how much accuracy is left after the
// smallest-magnitude synapses are silenced (set to zero).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "nk/atomic_file.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/plot.hpp"
#include "spike-sft/spike_sft.hpp"

namespace spike {

void stats(const StatsOptions& o, const nk::RunEnv& env) {
  std::vector<double> fractions = o.fractions;
  for (double f : fractions) {
    if (!(f >= 0 && f < 1)) throw nk::usage_error("--fractions: each share must lie in [0, 1), got " + std::to_string(f));
  }
  std::sort(fractions.begin(), fractions.end());
  if (o.bins < 1) throw nk::usage_error("--bins must be at least 1");
  const snn::Network net = read_model(o.input);
  const Dataset data = read_dataset(o.data);
  if (data.x.cols() != net.config.sizes.front()) {
    throw nk::input_error(o.data, "/images", "examples have " + std::to_string(data.x.cols()) + " values, the model takes " +
                                                 std::to_string(net.config.sizes.front()));
  }
  nk::h5::Writer out(o.output, kStatsSchema, o.no_clobber);
  const int64_t layers = net.config.layers();
  // Histograms of |w| per layer, over [0, max |w|].
  for (int64_t l = 0; l < layers; ++l) {
    const snn::Matrix& w = net.weight[static_cast<size_t>(l)];
    const double top = std::max(1e-30, static_cast<double>(w.cwiseAbs().maxCoeff()));
    std::vector<int64_t> counts(static_cast<size_t>(o.bins), 0);
    std::vector<double> edges(static_cast<size_t>(o.bins) + 1);
    for (int64_t b = 0; b <= o.bins; ++b) edges[static_cast<size_t>(b)] = top * static_cast<double>(b) / static_cast<double>(o.bins);
    for (int64_t e = 0; e < w.size(); ++e) {
      const auto b = std::min<int64_t>(o.bins - 1, static_cast<int64_t>(std::abs(w.data()[e]) / top * static_cast<double>(o.bins)));
      ++counts[static_cast<size_t>(b)];
    }
    const std::string group = "/histogram/layer" + std::to_string(l);
    out.write(group + "/edges", edges.data(), {o.bins + 1}, "edge");
    out.write(group + "/counts", counts.data(), {o.bins}, "bin");
    // Share of the weights within 10% of the largest magnitude of the layer.
    int64_t small = 0;
    for (int64_t e = 0; e < w.size(); ++e) small += std::abs(w.data()[e]) <= 0.1 * top;
    out.attr(group, "share_below_tenth_of_max", static_cast<double>(small) / static_cast<double>(w.size()));
    spdlog::info("layer {}: {} weights, max |w| {:.4f}, {:.1f}% within a tenth of it", l, w.size(), top,
                 100.0 * static_cast<double>(small) / static_cast<double>(w.size()));
  }
  // Silent-synapse analysis: zero the smallest share of each layer.
  std::vector<double> accuracy, rate;
  std::printf("silenced\taccuracy\tfiring_rate\n");
  for (double f : fractions) {
    snn::Network pruned = net;
    for (snn::Matrix& w : pruned.weight) {
      const int64_t k = static_cast<int64_t>(std::floor(f * static_cast<double>(w.size())));
      if (k == 0) continue;
      std::vector<float> magnitude(static_cast<size_t>(w.size()));
      for (int64_t e = 0; e < w.size(); ++e) magnitude[static_cast<size_t>(e)] = std::abs(w.data()[e]);
      std::nth_element(magnitude.begin(), magnitude.begin() + (k - 1), magnitude.end());
      const float cutoff = magnitude[static_cast<size_t>(k - 1)];
      int64_t zeroed = 0;
      for (int64_t e = 0; e < w.size() && zeroed < k; ++e) {
        if (std::abs(w.data()[e]) <= cutoff) w.data()[e] = 0.0f, ++zeroed;
      }
    }
    const snn::BatchStats s = evaluate(pruned, data, 256, env.seed);
    accuracy.push_back(static_cast<double>(s.correct) / static_cast<double>(data.size()));
    rate.push_back(s.rate.empty() ? 0.0 : s.rate[0]);
    std::printf("%.3f\t%.4f\t%.4f\n", f, accuracy.back(), rate.back());
  }
  const auto count = static_cast<int64_t>(fractions.size());
  out.write("/silenced/fraction", fractions.data(), {count}, "point");
  out.write("/silenced/accuracy", accuracy.data(), {count}, "point");
  out.write("/silenced/firing_rate", rate.data(), {count}, "point");
  if (!o.plot.empty()) {
    nk::plot::Axes axes;
    axes.title = "Accuracy after silencing the smallest-magnitude synapses";
    axes.xlabel = "share of each layer's weights set to zero";
    axes.ylabel = "accuracy";
    nk::plot::Series series;
    series.name = "accuracy";
    series.x = fractions;
    series.y = accuracy;
    const std::string svg = nk::plot::line_plot_svg(axes, {series});
    out.commit();
    nk::write_output_bytes(o.plot, std::vector<unsigned char>(svg.begin(), svg.end()), o.no_clobber);
    return;
  }
  out.commit();
}

}  // namespace spike
