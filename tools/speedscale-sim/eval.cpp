// eval.cpp - consistency, smoothness and robustness curves: every algorithm's
// energy ratio to OPT as the prediction error grows, per eps, plus adversarial
// predictions; a table, an HDF5 file and SVG plots.
#include <algorithm>
#include <cmath>
#include <map>

#include "nk/atomic_file.hpp"
#include "nk/context.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/plot.hpp"
#include "nk/progress.hpp"
#include "nk/table.hpp"
#include "nk/rng.hpp"
#include "speedscale-sim/solve_common.hpp"

namespace ss {

namespace {

struct Row {
  double eps, noise;
  std::string corruption;  ///< "" or zero / x10 / random
  std::string algorithm;
  std::vector<double> ratio, eta;
  int64_t feasible = 0;
};

/// The error of the part of the prediction an algorithm uses: the speed
/// profile it follows (alpha-norm, relative) or, for LAS, the job works.
double prediction_error(const std::string& algorithm, const Instance& inst, const Prediction& pred, const Profile& opt,
                        double alpha) {
  if (algorithm == "las") {
    double diff = 0, base = 0;
    for (int64_t j = 0; j < inst.size(); ++j) {
      diff += std::pow(std::abs(pred.work[j] - inst.work[j]), alpha);
      base += std::pow(inst.work[j], alpha);
    }
    return std::pow(diff / base, 1.0 / alpha);
  }
  if (algorithm == "pred-jobspeed") return relative_error(envelope(inst, pred.job_speed), opt, alpha);
  return relative_error(pred.profile, opt, alpha);
}

void write_text(const std::string& path, const std::string& text, bool no_clobber) {
  nk::write_output_bytes(path, std::vector<unsigned char>(text.begin(), text.end()), no_clobber);
}

/// The grid the curves run over, from the options (checked before any input is read).
struct Grid {
  std::vector<std::string> algos;
  std::vector<double> noises, epss;
};

/// The algorithms, noise levels and eps values of the options; usage errors for out-of-range values.
Grid parse_grid(const EvalOptions& o) {
  Grid grid;
  grid.algos = parse_algorithms(o.algos);
  grid.noises = parse_numbers("--noise", o.noise), grid.epss = parse_numbers("--eps", o.eps);
  for (double v : grid.noises)
    if (v < 0) throw nk::usage_error("--noise values must be >= 0");
  for (double v : grid.epss)
    if (v < 0) throw nk::usage_error("--eps values must be >= 0");
  if (!(o.params.alpha > 1)) throw nk::usage_error("--alpha must be > 1");
  return grid;
}

/// Every instance of the input; a file that names a schema must be an instances file (a plain h5py one may not).
std::vector<Instance> load_instances(const std::string& path) {
  const nk::h5::File input = nk::h5::File::open(path);
  if (input.attr_string("/", "nk_schema")) input.require_schema("speedscale.instances/");
  std::vector<Instance> instances;
  for (const std::string& name : instance_names(input)) instances.push_back(read_instance(input, name));
  return instances;
}

/// Row layout: classic algorithms once; predicted ones per (eps, noise) and per (eps, corruption); 'k' instances.
std::vector<Row> lay_out_rows(const Grid& grid, size_t k) {
  const std::vector<std::string> corruptions{"zero", "x10", "random"};
  std::vector<Row> rows;
  for (const std::string& a : grid.algos) {
    if (!algorithm_needs_prediction(a)) rows.push_back({0, 0, "", a, {}, {}, 0});
  }
  for (double eps : grid.epss) {
    for (double noise : grid.noises) {
      for (const std::string& a : grid.algos)
        if (algorithm_needs_prediction(a)) rows.push_back({eps, noise, "", a, {}, {}, 0});
    }
    for (const std::string& c : corruptions) {
      for (const std::string& a : grid.algos)
        if (algorithm_needs_prediction(a)) rows.push_back({eps, 0, c, a, {}, {}, 0});
    }
  }
  for (Row& r : rows) r.ratio.assign(k, 0), r.eta.assign(k, 0);
  return rows;
}

/// Every row's algorithm on instance i: its energy ratio to OPT, its prediction error and (in 'feasible', row-major
/// by instance) whether it met every deadline.
void run_instance(size_t i, const Instance& inst, std::vector<Row>& rows, std::vector<char>& feasible, size_t k,
                  const OnlineParams& params, const nk::Rng& root) {
  const Profile opt_profile = yds(inst);
  const double opt = energy(opt_profile, params.alpha);
  // (noise, corruption) -> prediction, eta
  std::map<std::pair<double, std::string>, std::pair<Prediction, double>> cache;
  for (size_t r = 0; r < rows.size(); ++r) {
    Row& row = rows[r];
    OnlineParams p = params;
    p.eps = row.eps;
    const Prediction* pred = nullptr;
    if (algorithm_needs_prediction(row.algorithm)) {
      const auto key = std::make_pair(row.noise, row.corruption);
      auto it = cache.find(key);
      if (it == cache.end()) {
        // The same corrupted prediction for every algorithm and eps of this level.
        const uint64_t stream =
            nk::mix64(std::hash<std::string>{}(row.corruption) ^ static_cast<uint64_t>(row.noise * 1e9));
        Prediction pr = oracle_prediction(inst, row.noise, row.corruption, root.split(i).split(stream)(), params.alpha);
        it = cache.emplace(key, std::make_pair(std::move(pr), 0.0)).first;
      }
      pred = &it->second.first;
      row.eta[i] = prediction_error(row.algorithm, inst, *pred, opt_profile, params.alpha);
    }
    const Profile s = run_algorithm(row.algorithm, inst, pred, p);
    row.ratio[i] = opt > 0 ? energy(s, params.alpha) / opt : 1.0;
    feasible[r * k + i] = edf_check(inst, s).feasible;
  }
}

/// Runs every row over every instance, instances in parallel; returns the feasibility flags (row-major).
std::vector<char> run_rows(std::vector<Row>& rows, const std::vector<Instance>& instances, const OnlineParams& params,
                           const nk::Rng& root) {
  const size_t k = instances.size();
  std::vector<char> feasible(rows.size() * k, 0);
  nk::Progress progress("eval", static_cast<int64_t>(k));
  int64_t done = 0;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t ii = 0; ii < static_cast<int64_t>(k); ++ii) {
    const size_t i = static_cast<size_t>(ii);
    run_instance(i, instances[i], rows, feasible, k, params, root);
#pragma omp critical
    progress.update(++done);
  }
  progress.finish();
  return feasible;
}

/// The ratio table, one entry per row: the HDF5 columns and the printed cells.
struct Summary {
  std::vector<double> eps, noise, eta, mean, max;
  std::vector<int64_t> feasible;
  std::vector<std::string> algorithm, corruption;
  std::vector<std::vector<std::string>> table;
  int64_t missed = 0;  ///< schedules that missed a deadline, over all rows and instances
};

/// Means and maxima over the instances of every row (each row's feasible count set from 'feasible').
Summary summarise(std::vector<Row>& rows, const std::vector<char>& feasible, size_t k) {
  Summary t;
  for (size_t r = 0; r < rows.size(); ++r) {
    Row& row = rows[r];
    for (size_t i = 0; i < k; ++i) row.feasible += feasible[r * k + i];
    t.missed += static_cast<int64_t>(k) - row.feasible;
    double mean = 0, top = 0, eta = 0;
    for (size_t i = 0; i < k; ++i) {
      mean += row.ratio[i] / static_cast<double>(k), top = std::max(top, row.ratio[i]);
      eta += row.eta[i] / static_cast<double>(k);
    }
    const bool predicted = algorithm_needs_prediction(row.algorithm);
    t.eps.push_back(row.eps), t.noise.push_back(row.noise), t.eta.push_back(eta), t.mean.push_back(mean),
        t.max.push_back(top), t.feasible.push_back(row.feasible), t.algorithm.push_back(row.algorithm),
        t.corruption.push_back(row.corruption.empty() ? (predicted ? "noise" : "none") : row.corruption);
    t.table.push_back({row.algorithm, predicted ? nk::cell(row.eps, "%g") : "-", t.corruption.back(),
                       predicted && row.corruption.empty() ? nk::cell(row.noise, "%g") : "-",
                       predicted ? nk::cell(eta, "%.4f") : "-", nk::cell(mean, "%.4f"), nk::cell(top, "%.4f"),
                       std::to_string(row.feasible) + "/" + std::to_string(k)});
  }
  return t;
}

/// The table's columns and the run's parameters into the (not yet published) output file.
void write_table(nk::h5::Writer& out, const Summary& t, const OnlineParams& params, size_t k) {
  const int64_t n_rows = static_cast<int64_t>(t.algorithm.size());
  out.write_strings("/table/algorithm", t.algorithm, "R");
  out.write_strings("/table/prediction", t.corruption, "R");
  out.write("/table/eps", t.eps.data(), {n_rows}, "R");
  out.write("/table/noise", t.noise.data(), {n_rows}, "R");
  out.write("/table/eta", t.eta.data(), {n_rows}, "R");
  out.write("/table/mean_ratio", t.mean.data(), {n_rows}, "R");
  out.write("/table/max_ratio", t.max.data(), {n_rows}, "R");
  out.write("/table/feasible", t.feasible.data(), {n_rows}, "R");
  out.attr("/", "alpha", params.alpha);
  out.attr("/", "gamma", params.gamma);
  out.attr("/", "instances", static_cast<int64_t>(k));
}

/// The plot's series: a flat line per classic algorithm, a mean-ratio-vs-eta curve per predicted one and eps.
std::vector<nk::plot::Series> ratio_series(const std::vector<Row>& rows, const Summary& t, const Grid& grid, size_t k) {
  std::vector<nk::plot::Series> series;
  double eta_max = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    if (algorithm_needs_prediction(rows[r].algorithm) && rows[r].corruption.empty())
      eta_max = std::max(eta_max, t.eta[r]);
  }
  for (const Row& row : rows) {
    if (algorithm_needs_prediction(row.algorithm)) continue;
    double mean = 0;
    for (double v : row.ratio) mean += v / static_cast<double>(k);
    series.push_back({row.algorithm, {0.0, std::max(eta_max, 1e-9)}, {mean, mean}, false});
  }
  for (double eps : grid.epss) {
    for (const std::string& a : grid.algos) {
      if (!algorithm_needs_prediction(a)) continue;
      nk::plot::Series s{a + (grid.epss.size() > 1 ? " eps=" + nk::cell(eps, "%g") : ""), {}, {}, false};
      for (size_t r = 0; r < rows.size(); ++r) {
        if (rows[r].algorithm == a && rows[r].eps == eps && rows[r].corruption.empty()) {
          s.x.push_back(t.eta[r]);
          s.y.push_back(t.mean[r]);
        }
      }
      series.push_back(std::move(s));
    }
  }
  return series;
}

/// The SVG of mean energy ratio against prediction error.
void write_ratio_plot(const EvalOptions& o, const std::vector<nk::plot::Series>& series, size_t k) {
  write_text(o.plot,
             nk::plot::line_plot_svg({"Energy / OPT vs prediction error (" + std::to_string(k) + " instances, alpha " +
                                          nk::cell(o.params.alpha, "%g") + ")",
                                      "prediction error eta = ||s_hat - s_opt||_alpha / ||s_opt||_alpha",
                                      "mean energy ratio", false, false},
                                     series),
             o.no_clobber);
}

/// The SVG of the speed profiles of the first instance: YDS, AVR, OA and pred-dynamic at the second noise level.
void write_profile_plot(const EvalOptions& o, const Grid& grid, const Instance& inst, const nk::Rng& root) {
  std::vector<nk::plot::Series> series;
  const double noise = grid.noises.size() > 1 ? grid.noises[1] : grid.noises[0];
  const Prediction pred = oracle_prediction(inst, noise, "", root.split(0).split(7)(), o.params.alpha);
  OnlineParams p = o.params;
  p.eps = grid.epss.front();
  for (const std::string& a :
       {std::string("yds"), std::string("avr"), std::string("oa"), std::string("pred-dynamic")}) {
    const Profile s = run_algorithm(a, inst, &pred, p);
    series.push_back({a == "pred-dynamic" ? a + " (noise " + nk::cell(noise, "%g") + ")" : a, s.t, s.speed, true});
  }
  write_text(o.profile_plot,
             nk::plot::line_plot_svg(
                 {"Speed profiles of instance " + inst.name + " (" + std::to_string(inst.size()) + " jobs)", "time",
                  "speed", false, false},
                 series),
             o.no_clobber);
}

}  // namespace

void eval(const EvalOptions& o, const nk::RunEnv& env) {
  const Grid grid = parse_grid(o);
  const std::vector<Instance> instances = load_instances(o.input);
  const nk::Rng root(env.seed);
  const size_t k = instances.size();
  std::vector<Row> rows = lay_out_rows(grid, k);
  const std::vector<char> feasible = run_rows(rows, instances, o.params, root);
  const Summary summary = summarise(rows, feasible, k);
  nk::h5::Writer out(o.output, kEvalSchema, o.no_clobber);
  write_table(out, summary, o.params, k);
  // Plots are written before the HDF5 file is published, and removed with it on failure.
  if (!o.plot.empty()) write_ratio_plot(o, ratio_series(rows, summary, grid, k), k);
  if (!o.profile_plot.empty()) write_profile_plot(o, grid, instances.front(), root);
  out.commit();
  if (nk::log::chatty()) {
    nk::Table::print(o.output == "-" ? stderr : stdout,
                     {"algorithm", "eps", "prediction", "noise", "eta", "mean_ratio", "max_ratio", "feasible"},
                     summary.table);
  }
  if (summary.missed)
    throw nk::Error(nk::Exit::runtime, std::to_string(summary.missed) + " schedule(s) missed a deadline");
}

}  // namespace ss
