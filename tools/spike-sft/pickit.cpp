// pickit.cpp - Stage 2 of Spike-SFT: merge several adapted models (one per
// task, all from one base) into one model of the base architecture.
//
// PickIt = alignment (each model whose base differs from the first model's
// base gets its hidden neurons permuted to match it, by weight matching; a
// no-op when every model shares the base, which is checked and reported),
// interference-aware merging of the task deltas (optionally trimmed to
// their largest entries, a sign elected per weight, the agreeing entries
// averaged: TIES), and spike-statistics calibration: per hidden neuron
// (or per layer, or as an affine map of its input current), a scale of its
// incoming weights and bias, found by bisection, makes the merged model's
// firing rate on a small unlabelled calibration set equal the task models'
// mean rate on their own tasks. The scales are folded into the weights, so
// the merged model costs exactly what the base costs at inference.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "spike-sft/align.hpp"
#include "spike-sft/spike_sft.hpp"

namespace spike {

namespace {

/// Per-neuron statistics of one hidden layer: firing rate (spikes per step),
/// and the mean and second moment of the input current (per channel in a
/// conv block, over steps, examples and positions).
struct NeuronStats {
  Eigen::VectorXd rate, mean, square;
};

/// Runs 'net' over the rows of x in batches of at most 128 rows and hands
/// each batch's workspace to visit(ws, first row, rows); rate coding draws
/// from one stream seeded by 'seed', so repeated calls on one network agree.
template <class Visit>
void for_batches(const snn::Network& net, const snn::Matrix& x, uint64_t seed, Visit&& visit) {
  const int64_t rows = x.rows(), batch = std::min<int64_t>(rows, 128);
  nk::Rng rng(seed);
  snn::Workspace full(net.config, batch);
  std::optional<snn::Workspace> tail;
  for (int64_t at = 0; at < rows; at += batch) {
    const int64_t take = std::min(batch, rows - at);
    if (take < batch && !tail) tail.emplace(net.config, take);
    snn::Workspace& ws = take == batch ? full : *tail;
    snn::forward(net, x.middleRows(at, take), nullptr, ws, &rng);
    visit(ws, at, take);
  }
}

/// The statistics of every hidden layer of 'net' over the rows of x.
std::vector<NeuronStats> neuron_stats(const snn::Network& net, const snn::Matrix& x, uint64_t seed) {
  const int64_t hidden = net.config.hidden_layers();
  std::vector<NeuronStats> out(static_cast<size_t>(hidden));
  std::vector<double> spike_rows(out.size(), 0), current_rows(out.size(), 0);
  for (int64_t h = 0; h < hidden; ++h) {
    const int64_t n = net.config.weight_rows(h);
    out[static_cast<size_t>(h)] = {Eigen::VectorXd::Zero(n), Eigen::VectorXd::Zero(n), Eigen::VectorXd::Zero(n)};
  }
  for_batches(net, x, seed, [&](const snn::Workspace& ws, int64_t, int64_t) {
    for (int64_t h = 0; h < hidden; ++h) {
      NeuronStats& s = out[static_cast<size_t>(h)];
      const snn::Matrix& spikes = ws.spikes_of(h);
      const snn::Matrix& current = ws.currents(h);
      s.rate += spikes.colwise().sum().transpose().cast<double>();
      s.mean += current.colwise().sum().transpose().cast<double>();
      s.square += current.array().square().matrix().colwise().sum().transpose().cast<double>();
      spike_rows[static_cast<size_t>(h)] += static_cast<double>(spikes.rows());
      current_rows[static_cast<size_t>(h)] += static_cast<double>(current.rows());
    }
  });
  for (size_t h = 0; h < out.size(); ++h) {
    out[h].rate /= spike_rows[h];
    out[h].mean /= current_rows[h];
    out[h].square /= current_rows[h];
  }
  return out;
}

/// The readout's softmax [rows, classes] of 'net' on the rows of x.
snn::Matrix output_probabilities(const snn::Network& net, const snn::Matrix& x, uint64_t seed) {
  snn::Matrix out(x.rows(), net.config.sizes.back());
  for_batches(net, x, seed, [&](const snn::Workspace& ws, int64_t at, int64_t take) { out.middleRows(at, take) = ws.output_probabilities(); });
  return out;
}

/// Scales neuron j of hidden layer h (row j of its incoming weights, and its
/// bias) by scale[j] and adds shift[j] to its bias: the input current becomes
/// scale * current + shift, at no cost at inference.
void fold(snn::Network& net, int64_t h, const Eigen::VectorXd& scale, const Eigen::VectorXd& shift) {
  snn::Matrix& w = net.weight[static_cast<size_t>(h)];
  snn::Vector& b = net.bias[static_cast<size_t>(h)];
  for (int64_t j = 0; j < w.rows(); ++j) {
    w.row(j) *= static_cast<float>(scale[j]);
    b[j] = static_cast<float>(scale[j] * b[j] + shift[j]);
  }
}

/// Spike-statistics calibration of 'merged', layer by layer from the input
/// (a layer's statistics depend on the layers below it). 'target' holds the
/// task models' statistics (the mean over models, each on its own task's
/// calibration rows). Returns the scale (and shift) folded into each layer's
/// neurons.
struct Calibration {
  std::vector<Eigen::VectorXd> scale, shift;
};
Calibration calibrate(snn::Network& merged, const snn::Matrix& x, const std::vector<NeuronStats>& target, const std::string& mode,
                      uint64_t seed, bool report = true) {
  Calibration result;
  for (size_t h = 0; h < target.size(); ++h) {
    const auto layer = static_cast<int64_t>(h);
    const int64_t n = merged.config.weight_rows(layer);
    const snn::Matrix w0 = merged.weight[h];
    const snn::Vector b0 = merged.bias[h];
    const NeuronStats before = neuron_stats(merged, x, seed)[h];
    Eigen::VectorXd scale = Eigen::VectorXd::Ones(n), shift = Eigen::VectorXd::Zero(n);
    auto rates_at = [&](const Eigen::VectorXd& alpha) {
      merged.weight[h] = w0;
      merged.bias[h] = b0;
      fold(merged, layer, alpha, Eigen::VectorXd::Zero(n));
      return neuron_stats(merged, x, seed)[h].rate;
    };
    if (mode == "affine") {
      // Match each neuron's current mean and spread to the task models'.
      for (int64_t j = 0; j < n; ++j) {
        const double var = std::max(0.0, before.square[j] - before.mean[j] * before.mean[j]);
        const double want = std::max(0.0, target[h].square[j] - target[h].mean[j] * target[h].mean[j]);
        scale[j] = var > 1e-12 ? std::sqrt(want / var) : 1.0;
        shift[j] = target[h].mean[j] - scale[j] * before.mean[j];
      }
      fold(merged, layer, scale, shift);
    } else if (mode == "layer") {
      // One scale for the layer; its mean rate grows with it.
      const double goal = target[h].rate.mean();
      double lo = 0.0, hi = 8.0;
      for (int iteration = 0; iteration < 30; ++iteration) {
        const double mid = 0.5 * (lo + hi);
        (rates_at(Eigen::VectorXd::Constant(n, mid)).mean() < goal ? lo : hi) = mid;
      }
      scale.setConstant(0.5 * (lo + hi));
      rates_at(scale);
    } else {
      // One scale per neuron: a neuron's rate depends on its own scale only
      // (no connections within a layer) and grows with it, so all neurons
      // are bisected at once, one pass over the calibration set per step.
      Eigen::VectorXd lo = Eigen::VectorXd::Zero(n), hi = Eigen::VectorXd::Constant(n, 8.0);
      for (int iteration = 0; iteration < 30; ++iteration) {
        const Eigen::VectorXd mid = 0.5 * (lo + hi);
        const Eigen::VectorXd rate = rates_at(mid);
        for (int64_t j = 0; j < n; ++j) (rate[j] < target[h].rate[j] ? lo[j] : hi[j]) = mid[j];
      }
      scale = 0.5 * (lo + hi);
      // Rates are step functions of the scale: a neuron whose rate was as
      // close to the target unscaled (silent in both, say) keeps scale 1.
      const Eigen::VectorXd reached = rates_at(scale);
      for (int64_t j = 0; j < n; ++j) {
        if (std::abs(before.rate[j] - target[h].rate[j]) <= std::abs(reached[j] - target[h].rate[j])) scale[j] = 1.0;
      }
      rates_at(scale);
    }
    const NeuronStats after = neuron_stats(merged, x, seed)[h];
    spdlog::log(report ? spdlog::level::info : spdlog::level::debug,
                "layer {}: firing rate {:.4f} -> {:.4f} (task models: {:.4f}); per-neuron rate error {:.4f} -> {:.4f}; {} calibration, "
                 "scales {:.3g}..{:.3g}",
                 h, before.rate.mean(), after.rate.mean(), target[h].rate.mean(), (before.rate - target[h].rate).cwiseAbs().mean(),
                 (after.rate - target[h].rate).cwiseAbs().mean(), mode, scale.minCoeff(), scale.maxCoeff());
    result.scale.push_back(scale);
    result.shift.push_back(shift);
  }
  return result;
}

bool same_weights(const snn::Network& a, const snn::Network& b) {
  if (a.config.sizes != b.config.sizes || a.config.channels != b.config.channels) return false;
  for (size_t l = 0; l < a.weight.size(); ++l) {
    if (a.weight[l] != b.weight[l] || a.bias[l] != b.bias[l]) return false;
  }
  return true;
}

}  // namespace

void pickit(const PickitOptions& o, const nk::RunEnv& env) {
  if (o.inputs.size() < 2) throw nk::usage_error("pickit merges at least two adapted models");
  // SPE deltas are already sparse (q of each layer): PickIt keeps all of
  // their entries and lets sign election and calibration handle
  // interference; TIES keeps its published 20% of dense deltas.
  const double trim = o.trim.value_or(o.method == "pickit" ? 1.0 : 0.2);
  if (!(trim > 0 && trim <= 1)) throw nk::usage_error("--trim must lie in (0, 1]");
  if (o.method == "pickit" && !o.scale && o.scale_grid.empty()) throw nk::usage_error("--scale-grid needs at least one scale");
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
  // Task deltas, merged per entry: the merged delta of each layer (TIES and
  // PickIt: before its scale lambda), added to the base.
  const double fixed_scale = o.scale.value_or(1.0);
  std::vector<snn::Matrix> elected;
  std::vector<snn::Vector> bias_mean;
  for (int64_t l = 0; l < layers; ++l) {
    const auto L = static_cast<size_t>(l);
    const int64_t n = base.weight[L].size();
    std::vector<snn::Matrix> delta;
    for (size_t m = 0; m < models.size(); ++m) delta.push_back(models[m].weight[L] - bases[m].weight[L]);
    snn::Vector bias_sum = snn::Vector::Zero(base.bias[L].size());
    for (size_t m = 0; m < models.size(); ++m) bias_sum += models[m].bias[L] - bases[m].bias[L];
    snn::Matrix merged_delta = snn::Matrix::Zero(base.weight[L].rows(), base.weight[L].cols());
    float* w = merged_delta.data();
    if (o.method == "average" || o.method == "task-arithmetic") {
      const float factor = o.method == "average" ? 1.0f / static_cast<float>(k) : static_cast<float>(fixed_scale);
      for (const snn::Matrix& d : delta)
        for (int64_t e = 0; e < n; ++e) w[e] += factor * d.data()[e];
      elected.push_back(std::move(merged_delta));
      bias_mean.push_back(factor * bias_sum);
      continue;
    }
    // TIES: trim each delta to its largest 'trim' share of nonzero entries
    // (a trim of 1 keeps them all),
    // elect the sign of the summed trimmed deltas, average the agreeing ones.
    for (snn::Matrix& d : delta) {
      std::vector<float> magnitude;
      for (int64_t e = 0; e < n; ++e) {
        if (d.data()[e] != 0.0f) magnitude.push_back(std::abs(d.data()[e]));
      }
      if (magnitude.empty()) continue;
      const auto keep = static_cast<size_t>(std::max<double>(1.0, std::ceil(trim * static_cast<double>(magnitude.size()))));
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
      if (count) w[e] = static_cast<float>(sum / count);
    }
    elected.push_back(std::move(merged_delta));
    bias_mean.push_back(bias_sum / static_cast<float>(k));
  }
  // base + lambda * merged delta (average and task arithmetic: their factor is in the delta already).
  const bool scaled = o.method == "ties" || o.method == "pickit";
  auto merged_at = [&](double lambda) {
    snn::Network net = base;
    const auto factor = static_cast<float>(scaled ? lambda : 1.0);
    for (size_t l = 0; l < elected.size(); ++l) {
      net.weight[l] += factor * elected[l];
      net.bias[l] += factor * bias_mean[l];
    }
    return net;
  };
  snn::Network merged = merged_at(fixed_scale);
  double chosen = fixed_scale;
  std::vector<double> tried, agreement;
  // Spike-statistics calibration (pickit only).
  Calibration calibration;
  if (o.method == "pickit") {
    if (o.tasks.empty()) throw nk::usage_error("pickit needs --tasks FILE (the tasks the models were adapted to) for calibration");
    // Calibration rows: the first examples of each task's training split
    // (labels unused); the target is the mean over the task models of their
    // statistics on their own task's rows.
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
    snn::Matrix x(rows, base.config.sizes.front());
    std::vector<NeuronStats> target;
    int64_t at = 0;
    for (int64_t m = 0; m < k; ++m) {
      const snn::Matrix& mine = own[static_cast<size_t>(m)];
      x.middleRows(at, mine.rows()) = mine;
      at += mine.rows();
      const std::vector<NeuronStats> stats = neuron_stats(models[static_cast<size_t>(m)], mine, env.seed);
      if (target.empty()) {
        target = stats;
        for (NeuronStats& s : target) s.rate.setZero(), s.mean.setZero(), s.square.setZero();
      }
      for (size_t h = 0; h < stats.size(); ++h) {
        target[h].rate += stats[h].rate / static_cast<double>(k);
        target[h].mean += stats[h].mean / static_cast<double>(k);
        target[h].square += stats[h].square / static_cast<double>(k);
      }
    }
    if (o.scale) {
      calibration = calibrate(merged, x, target, o.calibrate, env.seed);
    } else {
      // Lambda, label-free: each scale of the grid is merged and calibrated,
      // and kept is the one whose model agrees most with the task models on
      // their own calibration rows (the least cross-entropy against each
      // task model's softmax, averaged over the tasks).
      std::vector<snn::Matrix> teacher;
      for (int64_t m = 0; m < k; ++m) teacher.push_back(output_probabilities(models[static_cast<size_t>(m)], own[static_cast<size_t>(m)], env.seed));
      double best = std::numeric_limits<double>::infinity();
      for (const double lambda : o.scale_grid) {
        snn::Network candidate = merged_at(lambda);
        Calibration calib = calibrate(candidate, x, target, o.calibrate, env.seed, false);
        double cross_entropy = 0;
        for (int64_t m = 0; m < k; ++m) {
          const snn::Matrix q = output_probabilities(candidate, own[static_cast<size_t>(m)], env.seed);
          const snn::Matrix& p = teacher[static_cast<size_t>(m)];
          cross_entropy -= (p.array().cast<double>() * q.array().cast<double>().max(1e-30).log()).sum() / static_cast<double>(p.rows() * k);
        }
        tried.push_back(lambda);
        agreement.push_back(cross_entropy);
        spdlog::info("scale {:.3g}: cross-entropy {:.4f} against the task models on the calibration set", lambda, cross_entropy);
        if (cross_entropy < best) best = cross_entropy, chosen = lambda, merged = std::move(candidate), calibration = std::move(calib);
      }
      spdlog::info("scale {:.3g} kept", chosen);
    }
  }
  nk::h5::Writer out(o.output, kModelSchema, o.no_clobber);
  write_model(out, merged, {});
  out.attr("/", "merge_method", o.method);
  out.attr("/", "merged_models", k);
  out.attr("/", "aligned_models", aligned);
  if (o.method == "pickit" || o.method == "ties") out.attr("/", "trim", trim);
  if (scaled || o.method == "task-arithmetic") out.attr("/", "scale", chosen);
  if (!tried.empty()) {
    out.write("/selection/scale", tried.data(), {static_cast<int64_t>(tried.size())}, "candidate");
    out.write("/selection/cross_entropy", agreement.data(), {static_cast<int64_t>(agreement.size())}, "candidate");
  }
  if (o.method == "pickit") {
    out.attr("/", "calibration", o.calibrate);
    for (size_t h = 0; h < calibration.scale.size(); ++h) {
      const std::vector<float> scale(calibration.scale[h].begin(), calibration.scale[h].end());
      const std::vector<float> shift(calibration.shift[h].begin(), calibration.shift[h].end());
      out.write("/calibration/scale" + std::to_string(h), scale.data(), {static_cast<int64_t>(scale.size())}, "neuron");
      out.write("/calibration/shift" + std::to_string(h), shift.data(), {static_cast<int64_t>(shift.size())}, "neuron");
    }
  }
  out.commit();
  spdlog::info("merged {} models ({}); the result has the base architecture, {} parameters", k, o.method, base.config.parameter_count());
}

}  // namespace spike
