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

/// The scale (and shift) folded into each hidden layer's neurons by the calibration.
struct Calibration {
  std::vector<Eigen::VectorXd> scale, shift;
};

/// Hidden layer h of a network, rescaled from the weights it had when the
/// scaler was made: the firing rates a scale per neuron gives on x.
class LayerScaler {
 public:
  LayerScaler(snn::Network& net, size_t h, const snn::Matrix& x, uint64_t seed)
      : net_(net), h_(h), w0_(net.weight[h]), b0_(net.bias[h]), x_(x), seed_(seed) {}
  /// Folds alpha into the layer's first weights (the network keeps them) and returns its neurons' rates.
  Eigen::VectorXd rates_at(const Eigen::VectorXd& alpha) {
    net_.weight[h_] = w0_;
    net_.bias[h_] = b0_;
    fold(net_, static_cast<int64_t>(h_), alpha, Eigen::VectorXd::Zero(alpha.size()));
    return neuron_stats(net_, x_, seed_)[h_].rate;
  }

 private:
  snn::Network& net_;
  size_t h_;
  const snn::Matrix w0_;
  const snn::Vector b0_;
  const snn::Matrix& x_;
  uint64_t seed_;
};

/// --calibrate affine: each neuron's current gets the task models' mean and
/// spread (a scale and a shift per neuron), folded into layer h of 'merged'.
void affine_scale(snn::Network& merged, size_t h, const NeuronStats& before, const NeuronStats& target,
                  Eigen::VectorXd& scale, Eigen::VectorXd& shift) {
  for (int64_t j = 0; j < scale.size(); ++j) {
    const double var = std::max(0.0, before.square[j] - before.mean[j] * before.mean[j]);
    const double want = std::max(0.0, target.square[j] - target.mean[j] * target.mean[j]);
    scale[j] = var > 1e-12 ? std::sqrt(want / var) : 1.0;
    shift[j] = target.mean[j] - scale[j] * before.mean[j];
  }
  fold(merged, static_cast<int64_t>(h), scale, shift);
}

/// --calibrate layer: one scale for the layer, bisected (its mean rate grows
/// with it) to the task models' mean rate; the layer is left at that scale.
Eigen::VectorXd layer_scale(LayerScaler& scaler, int64_t n, const NeuronStats& target) {
  const double goal = target.rate.mean();
  double lo = 0.0, hi = 8.0;
  for (int iteration = 0; iteration < 30; ++iteration) {
    const double mid = 0.5 * (lo + hi);
    (scaler.rates_at(Eigen::VectorXd::Constant(n, mid)).mean() < goal ? lo : hi) = mid;
  }
  const Eigen::VectorXd scale = Eigen::VectorXd::Constant(n, 0.5 * (lo + hi));
  scaler.rates_at(scale);
  return scale;
}

/// --calibrate neuron: one scale per neuron, bisected to its task-model
/// rate; the layer is left at those scales.
Eigen::VectorXd neuron_scale(LayerScaler& scaler, int64_t n, const NeuronStats& before, const NeuronStats& target) {
  // A neuron's rate depends on its own scale only (no connections within a
  // layer) and grows with it, so all neurons are bisected at once, one pass
  // over the calibration set per step.
  Eigen::VectorXd lo = Eigen::VectorXd::Zero(n), hi = Eigen::VectorXd::Constant(n, 8.0);
  for (int iteration = 0; iteration < 30; ++iteration) {
    const Eigen::VectorXd mid = 0.5 * (lo + hi);
    const Eigen::VectorXd rate = scaler.rates_at(mid);
    for (int64_t j = 0; j < n; ++j) (rate[j] < target.rate[j] ? lo[j] : hi[j]) = mid[j];
  }
  Eigen::VectorXd scale = 0.5 * (lo + hi);
  // Rates are step functions of the scale: a neuron whose rate was as
  // close to the target unscaled (silent in both, say) keeps scale 1.
  const Eigen::VectorXd reached = scaler.rates_at(scale);
  for (int64_t j = 0; j < n; ++j) {
    if (std::abs(before.rate[j] - target.rate[j]) <= std::abs(reached[j] - target.rate[j])) scale[j] = 1.0;
  }
  scaler.rates_at(scale);
  return scale;
}

/// Spike-statistics calibration of 'merged', layer by layer from the input
/// (a layer's statistics depend on the layers below it). 'target' holds the
/// task models' statistics (the mean over models, each on its own task's
/// calibration rows). Returns the scale (and shift) folded into each layer's
/// neurons.
Calibration calibrate(snn::Network& merged, const snn::Matrix& x, const std::vector<NeuronStats>& target,
                      const std::string& mode, uint64_t seed, bool report = true) {
  Calibration result;
  for (size_t h = 0; h < target.size(); ++h) {
    const int64_t n = merged.config.weight_rows(static_cast<int64_t>(h));
    LayerScaler scaler(merged, h, x, seed);
    const NeuronStats before = neuron_stats(merged, x, seed)[h];
    Eigen::VectorXd scale = Eigen::VectorXd::Ones(n), shift = Eigen::VectorXd::Zero(n);
    if (mode == "affine") {
      affine_scale(merged, h, before, target[h], scale, shift);
    } else if (mode == "layer") {
      scale = layer_scale(scaler, n, target[h]);
    } else {
      scale = neuron_scale(scaler, n, before, target[h]);
    }
    const NeuronStats after = neuron_stats(merged, x, seed)[h];
    spdlog::log(report ? spdlog::level::info : spdlog::level::debug,
                "layer {}: firing rate {:.4f} -> {:.4f} (task models: {:.4f}); "
                "per-neuron rate error {:.4f} -> {:.4f}; {} calibration, scales {:.3g}..{:.3g}",
                h, before.rate.mean(), after.rate.mean(), target[h].rate.mean(),
                (before.rate - target[h].rate).cwiseAbs().mean(), (after.rate - target[h].rate).cwiseAbs().mean(), mode,
                scale.minCoeff(), scale.maxCoeff());
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

/// The share of each delta's nonzero entries kept, after the options' checks (usage errors before any file is read).
double checked_trim(const PickitOptions& o) {
  if (o.inputs.size() < 2) throw nk::usage_error("pickit merges at least two adapted models");
  // SPE deltas are already sparse (q of each layer): PickIt keeps all of
  // their entries and lets sign election and calibration handle
  // interference; TIES keeps its published 20% of dense deltas.
  const double trim = o.trim.value_or(o.method == "pickit" ? 1.0 : 0.2);
  if (!(trim > 0 && trim <= 1)) throw nk::usage_error("--trim must lie in (0, 1]");
  if (o.method == "pickit" && !o.scale && o.scale_grid.empty())
    throw nk::usage_error("--scale-grid needs at least one scale");
  if (o.method == "pickit" && o.tasks.empty())
    throw nk::usage_error("pickit needs --tasks FILE (the tasks the models were adapted to) for calibration");
  return trim;
}

/// The adapted models and their bases, aligned to the first model's base.
struct Models {
  snn::Network base;  ///< the first model's base
  std::vector<snn::Network> models, bases;
  std::vector<std::string> task_names;
  int64_t aligned = 0;  ///< models whose neurons were permuted
  int64_t size() const { return static_cast<int64_t>(models.size()); }
};

/// Reads the models to merge. Each model's task delta is taken against its
/// own base; a model whose base is not the first model's (it diverged:
/// another pre-training, or a permuted copy) is first aligned to it, base
/// and adapted weights permuted alike, so that the deltas are merged entry
/// by entry on neurons that match.
Models read_aligned(const PickitOptions& o) {
  Models in;
  in.base = read_model(o.inputs[0], false);
  const snn::Network& base = in.base;
  for (const std::string& path : o.inputs) {
    // PickIt merges task deltas: a plain model has none.
    const nk::h5::File file = nk::h5::File::open(path);
    file.require_schema(snn::kAdaptedSchema);
    snn::Network own_base = read_model(path, false);
    if (own_base.config.sizes != base.config.sizes || own_base.config.channels != base.config.channels) {
      throw nk::input_error(path, "/model",
                            "has another architecture than " + o.inputs[0] +
                                " (PickIt merges models of one architecture)");
    }
    snn::Network model = read_model(path, true);
    if (!same_weights(own_base, base) && !o.align) {
      spdlog::info("{}: its base differs from {}'s; merged without alignment (--no-align)", path, o.inputs[0]);
    } else if (!same_weights(own_base, base)) {
      const Alignment al = match_neurons(base, own_base);
      permute_neurons(own_base, al);
      permute_neurons(model, al);
      ++in.aligned;
      for (size_t h = 0; h < al.moved.size(); ++h) {
        spdlog::info("{}: its base differs from {}'s; hidden layer {}: {} of {} neurons permuted, "
                     "weight similarity {:.4g} -> {:.4g}",
                     path, o.inputs[0], h, al.moved[h], al.perm[h].size(), al.before[h], al.after[h]);
      }
    }
    in.bases.push_back(std::move(own_base));
    in.models.push_back(std::move(model));
    in.task_names.push_back(file.attr_string("/", "task").value_or(""));
  }
  if (in.aligned == 0) spdlog::info("alignment: a no-op (every model shares the base of {})", o.inputs[0]);
  return in;
}

/// The merged task delta of each layer (TIES and PickIt: before their scale
/// lambda; average and task arithmetic: their factor in already).
struct MergedDelta {
  std::vector<snn::Matrix> weight;
  std::vector<snn::Vector> bias;
};

/// TIES's trim: zeroes the entries of d below its largest 'trim' share of nonzero magnitudes (1 keeps them all).
void trim_delta(snn::Matrix& d, double trim) {
  const int64_t n = d.size();
  std::vector<float> magnitude;
  for (int64_t e = 0; e < n; ++e) {
    if (d.data()[e] != 0.0f) magnitude.push_back(std::abs(d.data()[e]));
  }
  if (magnitude.empty()) return;
  const auto keep = static_cast<size_t>(std::max<double>(1.0, std::ceil(trim * static_cast<double>(magnitude.size()))));
  std::nth_element(magnitude.begin(), magnitude.begin() + static_cast<std::ptrdiff_t>(keep - 1), magnitude.end(),
                   std::greater<>());
  const float cutoff = magnitude[keep - 1];
  for (int64_t e = 0; e < n; ++e) {
    if (std::abs(d.data()[e]) < cutoff) d.data()[e] = 0.0f;
  }
}

/// TIES's sign election: per entry the sign of the summed deltas, and the mean of the deltas that agree with it.
void elect(const std::vector<snn::Matrix>& delta, snn::Matrix& merged) {
  float* w = merged.data();
  for (int64_t e = 0; e < merged.size(); ++e) {
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
}

/// The task vectors (each model's weights less its base's) combined entry by
/// entry by --method: averaged, summed at --scale (task arithmetic), or
/// trimmed and sign-elected (ties, pickit); biases averaged (task arithmetic: summed at --scale).
MergedDelta merge_deltas(const PickitOptions& o, const Models& in, double trim) {
  const int64_t k = in.size();
  const double fixed_scale = o.scale.value_or(1.0);
  MergedDelta merged;
  for (int64_t l = 0; l < in.base.config.layers(); ++l) {
    const auto L = static_cast<size_t>(l);
    std::vector<snn::Matrix> delta;
    for (size_t m = 0; m < in.models.size(); ++m) delta.push_back(in.models[m].weight[L] - in.bases[m].weight[L]);
    snn::Vector bias_sum = snn::Vector::Zero(in.base.bias[L].size());
    for (size_t m = 0; m < in.models.size(); ++m) bias_sum += in.models[m].bias[L] - in.bases[m].bias[L];
    snn::Matrix merged_delta = snn::Matrix::Zero(in.base.weight[L].rows(), in.base.weight[L].cols());
    if (o.method == "average" || o.method == "task-arithmetic") {
      const float factor = o.method == "average" ? 1.0f / static_cast<float>(k) : static_cast<float>(fixed_scale);
      float* w = merged_delta.data();
      for (const snn::Matrix& d : delta)
        for (int64_t e = 0; e < d.size(); ++e) w[e] += factor * d.data()[e];
      merged.weight.push_back(std::move(merged_delta));
      merged.bias.push_back(factor * bias_sum);
      continue;
    }
    for (snn::Matrix& d : delta) trim_delta(d, trim);
    elect(delta, merged_delta);
    merged.weight.push_back(std::move(merged_delta));
    merged.bias.push_back(bias_sum / static_cast<float>(k));
  }
  return merged;
}

/// base + factor * the merged delta.
snn::Network with_delta(const snn::Network& base, const MergedDelta& delta, double factor) {
  snn::Network net = base;
  const auto f = static_cast<float>(factor);
  for (size_t l = 0; l < delta.weight.size(); ++l) {
    net.weight[l] += f * delta.weight[l];
    net.bias[l] += f * delta.bias[l];
  }
  return net;
}

/// PickIt's calibration data: the first rows of each task's training split
/// (labels unused), and the target: the mean over the task models of their
/// statistics on their own task's rows.
struct CalibrationSet {
  std::vector<snn::Matrix> own;  ///< per model: its task's rows
  snn::Matrix x;                 ///< every model's rows, stacked
  std::vector<NeuronStats> target;
};

/// The calibration set of the models' tasks (read from --tasks, by each model's task attribute).
CalibrationSet calibration_set(const PickitOptions& o, const Models& in, uint64_t seed) {
  const int64_t k = in.size();
  CalibrationSet set;
  int64_t rows = 0;
  for (int64_t m = 0; m < k; ++m) {
    const std::string& name = in.task_names[static_cast<size_t>(m)];
    if (name.empty()) {
      throw nk::input_error(o.inputs[static_cast<size_t>(m)], "/",
                            "has no task attribute (not written by spike-sft spe)");
    }
    const Task task = read_task(o.tasks + ":" + name);
    if (task.train.x.cols() != in.base.config.sizes.front()) {
      throw nk::input_error(o.tasks, "/tasks/" + name + "/train/images",
                            "examples have " + std::to_string(task.train.x.cols()) + " values, the models take " +
                                std::to_string(in.base.config.sizes.front()));
    }
    const int64_t take = std::min<int64_t>(o.calibration, task.train.size());
    set.own.push_back(task.train.x.topRows(take));
    rows += take;
  }
  set.x.resize(rows, in.base.config.sizes.front());
  int64_t at = 0;
  for (int64_t m = 0; m < k; ++m) {
    const snn::Matrix& mine = set.own[static_cast<size_t>(m)];
    set.x.middleRows(at, mine.rows()) = mine;
    at += mine.rows();
    const std::vector<NeuronStats> stats = neuron_stats(in.models[static_cast<size_t>(m)], mine, seed);
    if (set.target.empty()) {
      set.target = stats;
      for (NeuronStats& s : set.target) s.rate.setZero(), s.mean.setZero(), s.square.setZero();
    }
    for (size_t h = 0; h < stats.size(); ++h) {
      set.target[h].rate += stats[h].rate / static_cast<double>(k);
      set.target[h].mean += stats[h].mean / static_cast<double>(k);
      set.target[h].square += stats[h].square / static_cast<double>(k);
    }
  }
  return set;
}

/// The merge's scale: the one kept, and the grid tried with each scale's cross-entropy (empty when fixed).
struct Selection {
  double chosen = 1.0;
  std::vector<double> tried, agreement;
};

/// PickIt's lambda, label-free: each scale of the grid is merged and
/// calibrated, and kept is the one whose model agrees most with the task
/// models on their own calibration rows (the least cross-entropy against
/// each task model's softmax, averaged over the tasks). 'merged' and
/// 'calibration' become the kept scale's (they stay as they are if none is finite).
void choose_scale(const PickitOptions& o, const Models& in, const MergedDelta& delta, const CalibrationSet& set,
                  uint64_t seed, snn::Network& merged, Calibration& calibration, Selection& selection) {
  const int64_t k = in.size();
  std::vector<snn::Matrix> teacher;
  for (int64_t m = 0; m < k; ++m)
    teacher.push_back(output_probabilities(in.models[static_cast<size_t>(m)], set.own[static_cast<size_t>(m)], seed));
  double best = std::numeric_limits<double>::infinity();
  for (const double lambda : o.scale_grid) {
    snn::Network candidate = with_delta(in.base, delta, lambda);
    Calibration calib = calibrate(candidate, set.x, set.target, o.calibrate, seed, false);
    double cross_entropy = 0;
    for (int64_t m = 0; m < k; ++m) {
      const snn::Matrix q = output_probabilities(candidate, set.own[static_cast<size_t>(m)], seed);
      const snn::Matrix& p = teacher[static_cast<size_t>(m)];
      cross_entropy -= (p.array().cast<double>() * q.array().cast<double>().max(1e-30).log()).sum() /
                       static_cast<double>(p.rows() * k);
    }
    selection.tried.push_back(lambda);
    selection.agreement.push_back(cross_entropy);
    spdlog::info("scale {:.3g}: cross-entropy {:.4f} against the task models on the calibration set", lambda,
                 cross_entropy);
    if (cross_entropy < best) {
      best = cross_entropy, selection.chosen = lambda, merged = std::move(candidate), calibration = std::move(calib);
    }
  }
  spdlog::info("scale {:.3g} kept", selection.chosen);
}

/// Writes the merged model (the base architecture), the merge's attributes, the scale search and the calibration.
void write_merged(const PickitOptions& o, const snn::Network& merged, int64_t models, int64_t aligned, double trim,
                  const Selection& selection, const Calibration& calibration) {
  const bool scaled = o.method == "ties" || o.method == "pickit";
  nk::h5::Writer out(o.output, kModelSchema, o.no_clobber);
  write_model(out, merged, {});
  out.attr("/", "merge_method", o.method);
  out.attr("/", "merged_models", models);
  out.attr("/", "aligned_models", aligned);
  if (o.method == "pickit" || o.method == "ties") out.attr("/", "trim", trim);
  if (scaled || o.method == "task-arithmetic") out.attr("/", "scale", selection.chosen);
  if (!selection.tried.empty()) {
    const auto candidates = static_cast<int64_t>(selection.tried.size());
    out.write("/selection/scale", selection.tried.data(), {candidates}, "candidate");
    out.write("/selection/cross_entropy", selection.agreement.data(), {candidates}, "candidate");
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
}

}  // namespace

void pickit(const PickitOptions& o, const nk::RunEnv& env) {
  const double trim = checked_trim(o);
  const Models in = read_aligned(o);
  const MergedDelta delta = merge_deltas(o, in, trim);
  // base + lambda * merged delta (average and task arithmetic: their factor is in the delta already).
  const bool scaled = o.method == "ties" || o.method == "pickit";
  Selection selection;
  selection.chosen = o.scale.value_or(1.0);
  snn::Network merged = with_delta(in.base, delta, scaled ? selection.chosen : 1.0);
  // Spike-statistics calibration (pickit only), at --scale or at the scale the grid search keeps.
  Calibration calibration;
  if (o.method == "pickit") {
    const CalibrationSet set = calibration_set(o, in, env.seed);
    if (o.scale) {
      calibration = calibrate(merged, set.x, set.target, o.calibrate, env.seed);
    } else {
      choose_scale(o, in, delta, set, env.seed, merged, calibration, selection);
    }
  }
  write_merged(o, merged, in.size(), in.aligned, trim, selection, calibration);
  spdlog::info("merged {} models ({}); the result has the base architecture, {} parameters", in.size(), o.method,
               in.base.config.parameter_count());
}

}  // namespace spike
