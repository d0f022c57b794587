// pickit.cpp - Stage 2 of Spike-SFT: merge several adapted models (one per
// task, all from one base) into one model of the base architecture.
//
// PickIt = alignment (each model whose base differs from the first model's
// base gets its hidden neurons permuted to match it, by weight matching; a
// no-op when every model shares the base, which is checked and reported),
// interference-aware merging of the task deltas (trim to the
// largest entries, elect a sign per weight, average the agreeing entries:
// TIES), and spike-statistics calibration: per hidden layer, a scale of its
// incoming weights and bias, found by bisection, makes the merged model's
// firing rate on a small unlabelled calibration set equal the task models'
// mean rate on their own tasks. The scales are folded into the weights, so
// the merged model costs exactly what the base costs at inference.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "align.hpp"
#include "spike_sft.hpp"

namespace spike {

namespace {

/// Mean firing rate of each hidden layer of 'net' on the rows of x.
std::vector<double> firing_rates(const snn::Network& net, const snn::Matrix& x, uint64_t seed) {
  nk::Rng rng(seed);
  snn::Workspace ws(net.config, x.rows());
  return snn::forward(net, x, nullptr, ws, &rng).rate;
}

bool same_weights(const snn::Network& a, const snn::Network& b) {
  if (a.config.sizes != b.config.sizes || a.config.channels != b.config.channels) return false;
  for (size_t l = 0; l < a.weight.size(); ++l) {
    if (a.weight[l] != b.weight[l] || a.bias[l] != b.bias[l]) return false;
  }
  return true;
}

}  // namespace

void pickit(const PickitOptions& o) {
  if (o.inputs.size() < 2) throw nk::usage_error("pickit merges at least two adapted models");
  if (!(o.trim > 0 && o.trim <= 1)) throw nk::usage_error("--trim must lie in (0, 1]");
  if (o.method == "pickit" && o.tasks.empty())
    throw nk::usage_error("pickit needs --tasks FILE (the tasks the models were adapted to) for calibration");
  // Base and task models. Each model's task delta is taken against its own
  // base; a model whose base is not the first model's (it diverged: another
  // pre-training, or a permuted copy) is first aligned to it, base and
  // adapted weights permuted alike, so that the deltas are merged entry by
  // entry on neurons that match.
  const snn::Network base = read_model(o.inputs[0], false);
  std::vector<snn::Network> models, bases;
  std::vector<std::string> task_names;
  int64_t aligned = 0;
  for (const std::string& path : o.inputs) {
    snn::Network own_base = read_model(path, false);
    if (own_base.config.sizes != base.config.sizes || own_base.config.channels != base.config.channels)
      throw nk::input_error(path, "/model", "has another architecture than " + o.inputs[0] + " (PickIt merges models of one architecture)");
    snn::Network model = read_model(path, true);
    if (!same_weights(own_base, base) && !o.align) {
      spdlog::info("{}: its base differs from {}'s; merged without alignment (--no-align)", path, o.inputs[0]);
    } else if (!same_weights(own_base, base)) {
      const Alignment al = match_neurons(base, own_base);
      permute_neurons(own_base, al);
      permute_neurons(model, al);
      ++aligned;
      for (size_t h = 0; h < al.moved.size(); ++h)
        spdlog::info("{}: its base differs from {}'s; hidden layer {}: {} of {} neurons permuted, weight similarity {:.4g} -> {:.4g}",
                     path, o.inputs[0], h, al.moved[h], al.perm[h].size(), al.before[h], al.after[h]);
    }
    bases.push_back(std::move(own_base));
    models.push_back(std::move(model));
    const nk::h5::File file = nk::h5::File::open(path);
    task_names.push_back(file.attr_string("/", "task").value_or(""));
  }
  if (aligned == 0) spdlog::info("alignment: a no-op (every model shares the base of {})", o.inputs[0]);
  const int64_t layers = base.config.layers(), k = static_cast<int64_t>(models.size());
  // Task deltas, merged per entry.
  snn::Network merged = base;
  for (int64_t l = 0; l < layers; ++l) {
    const auto L = static_cast<size_t>(l);
    const int64_t n = base.weight[L].size();
    std::vector<snn::Matrix> delta;
    for (size_t m = 0; m < models.size(); ++m) delta.push_back(models[m].weight[L] - bases[m].weight[L]);
    snn::Vector bias_sum = snn::Vector::Zero(base.bias[L].size());
    for (size_t m = 0; m < models.size(); ++m) bias_sum += models[m].bias[L] - bases[m].bias[L];
    float* w = merged.weight[L].data();
    if (o.method == "average" || o.method == "task-arithmetic") {
      const float factor = o.method == "average" ? 1.0f / static_cast<float>(k) : static_cast<float>(o.scale);
      for (const snn::Matrix& d : delta)
        for (int64_t e = 0; e < n; ++e) w[e] += factor * d.data()[e];
      merged.bias[L] += factor * bias_sum;
      continue;
    }
    // TIES: trim each delta to its largest 'trim' share of nonzero entries,
    // elect the sign of the summed trimmed deltas, average the agreeing ones.
    for (snn::Matrix& d : delta) {
      std::vector<float> magnitude;
      for (int64_t e = 0; e < n; ++e) {
        if (d.data()[e] != 0.0f) magnitude.push_back(std::abs(d.data()[e]));
      }
      if (magnitude.empty()) continue;
      const auto keep = static_cast<size_t>(std::max<double>(1.0, std::ceil(o.trim * static_cast<double>(magnitude.size()))));
      std::nth_element(magnitude.begin(), magnitude.begin() + static_cast<std::ptrdiff_t>(keep - 1), magnitude.end(), std::greater<>());
      const float cutoff = magnitude[keep - 1];
      for (int64_t e = 0; e < n; ++e) {
        if (std::abs(d.data()[e]) < cutoff) d.data()[e] = 0.0f;
      }
    }
    for (int64_t e = 0; e < n; ++e) {
      double total = 0;
      for (const snn::Matrix& d : delta) total += d.data()[e];
      if (total == 0) continue;
      double sum = 0;
      int count = 0;
      for (const snn::Matrix& d : delta) {
        const float v = d.data()[e];
        if (v != 0.0f && (v > 0) == (total > 0)) sum += v, ++count;
      }
      if (count) w[e] += static_cast<float>(o.scale * sum / count);
    }
    merged.bias[L] += (static_cast<float>(o.scale) / static_cast<float>(k)) * bias_sum;
  }
  // Spike-statistics calibration (pickit only).
  std::vector<double> scales(static_cast<size_t>(base.config.hidden_layers()), 1.0);
  if (o.method == "pickit") {
    if (o.tasks.empty()) throw nk::usage_error("pickit needs --tasks FILE (the tasks the models were adapted to) for calibration");
    // Calibration rows: the first examples of each task's training split (labels unused).
    std::vector<snn::Matrix> own;
    int64_t rows = 0;
    for (int64_t m = 0; m < k; ++m) {
      const std::string& name = task_names[static_cast<size_t>(m)];
      if (name.empty()) throw nk::input_error(o.inputs[static_cast<size_t>(m)], "/", "has no task attribute (not written by spike-sft spe)");
      const Task task = read_task(o.tasks + ":" + name);
      const int64_t take = std::min<int64_t>(o.calibration, task.train.size());
      own.push_back(task.train.x.topRows(take));
      rows += take;
    }
    snn::Matrix calibration(rows, base.config.sizes.front());
    int64_t at = 0;
    std::vector<double> target(scales.size(), 0.0);
    for (int64_t m = 0; m < k; ++m) {
      calibration.middleRows(at, own[static_cast<size_t>(m)].rows()) = own[static_cast<size_t>(m)];
      at += own[static_cast<size_t>(m)].rows();
      const std::vector<double> rate = firing_rates(models[static_cast<size_t>(m)], own[static_cast<size_t>(m)], o.seed);
      for (size_t h = 0; h < target.size(); ++h) target[h] += rate[h] / static_cast<double>(k);
    }
    // Layer by layer: the rate of layer h depends on the scales of layers <= h.
    for (size_t h = 0; h < scales.size(); ++h) {
      const snn::Matrix w0 = merged.weight[h];
      const snn::Vector b0 = merged.bias[h];
      auto rate_at = [&](double alpha) {
        merged.weight[h] = w0 * static_cast<float>(alpha);
        merged.bias[h] = b0 * static_cast<float>(alpha);
        return firing_rates(merged, calibration, o.seed)[h];
      };
      double lo = 0.25, hi = 4.0;  // the rate grows with the scale
      if (rate_at(lo) > target[h]) hi = lo, lo = 0.0;
      if (rate_at(hi) < target[h]) lo = hi, hi = 16.0;
      for (int iteration = 0; iteration < 30; ++iteration) {
        const double mid = 0.5 * (lo + hi);
        (rate_at(mid) < target[h] ? lo : hi) = mid;
      }
      scales[h] = 0.5 * (lo + hi);
      const double achieved = rate_at(scales[h]);
      spdlog::info("layer {}: firing rate {:.4f} -> {:.4f} (task models: {:.4f}), scale {:.4f}", h, rate_at(1.0), achieved, target[h], scales[h]);
      rate_at(scales[h]);  // leave the chosen scale folded in
    }
  }
  nk::h5::Writer out(o.output, kModelSchema, o.no_clobber);
  write_model(out, merged, {});
  out.attr("/", "merge_method", o.method);
  out.attr("/", "merged_models", k);
  out.attr("/", "aligned_models", aligned);
  out.write("/calibration_scale", scales.data(), {static_cast<int64_t>(scales.size())}, "layer");
  out.commit();
  spdlog::info("merged {} models ({}); the result has the base architecture, {} parameters", k, o.method, base.config.parameter_count());
}

}  // namespace spike
