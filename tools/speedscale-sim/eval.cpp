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

}  // namespace

void eval(const EvalOptions& o, const nk::RunEnv& env) {
  const std::vector<std::string> algos = parse_algorithms(o.algos);
  const std::vector<double> noises = parse_numbers("--noise", o.noise), epss = parse_numbers("--eps", o.eps);
  for (double v : noises) if (v < 0) throw nk::usage_error("--noise values must be >= 0");
  for (double v : epss) if (v < 0) throw nk::usage_error("--eps values must be >= 0");
  if (!(o.params.alpha > 1)) throw nk::usage_error("--alpha must be > 1");
  const nk::h5::File input = nk::h5::File::open(o.input);
  if (input.attr_string("/", "nk_schema")) input.require_schema("speedscale.instances/");
  std::vector<Instance> instances;
  for (const std::string& name : instance_names(input)) instances.push_back(read_instance(input, name));
  const nk::Rng root(env.seed);
  const std::vector<std::string> corruptions{"zero", "x10", "random"};

  // Row layout: classic algorithms once; predicted ones per (eps, noise) and per (eps, corruption).
  std::vector<Row> rows;
  for (const std::string& a : algos) {
    if (!algorithm_needs_prediction(a)) rows.push_back({0, 0, "", a, {}, {}, 0});
  }
  for (double eps : epss) {
    for (double noise : noises) {
      for (const std::string& a : algos) if (algorithm_needs_prediction(a)) rows.push_back({eps, noise, "", a, {}, {}, 0});
    }
    for (const std::string& c : corruptions) {
      for (const std::string& a : algos) if (algorithm_needs_prediction(a)) rows.push_back({eps, 0, c, a, {}, {}, 0});
    }
  }
  const size_t k = instances.size();
  for (Row& r : rows) r.ratio.assign(k, 0), r.eta.assign(k, 0);
  std::vector<char> feasible(rows.size() * k, 0);
  nk::Progress progress("eval", static_cast<int64_t>(k));
  int64_t done = 0;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t ii = 0; ii < static_cast<int64_t>(k); ++ii) {
    const size_t i = static_cast<size_t>(ii);
    const Instance& inst = instances[i];
    const Profile opt_profile = yds(inst);
    const double opt = energy(opt_profile, o.params.alpha);
    std::map<std::pair<double, std::string>, std::pair<Prediction, double>> cache;  // (noise, corruption) -> prediction, eta
    for (size_t r = 0; r < rows.size(); ++r) {
      Row& row = rows[r];
      OnlineParams p = o.params;
      p.eps = row.eps;
      const Prediction* pred = nullptr;
      if (algorithm_needs_prediction(row.algorithm)) {
        const auto key = std::make_pair(row.noise, row.corruption);
        auto it = cache.find(key);
        if (it == cache.end()) {
          // The same corrupted prediction for every algorithm and eps of this level.
          const uint64_t stream = nk::mix64(std::hash<std::string>{}(row.corruption) ^ static_cast<uint64_t>(row.noise * 1e9));
          Prediction pr = oracle_prediction(inst, row.noise, row.corruption, root.split(i).split(stream)(), o.params.alpha);
          it = cache.emplace(key, std::make_pair(std::move(pr), 0.0)).first;
        }
        pred = &it->second.first;
        row.eta[i] = prediction_error(row.algorithm, inst, *pred, opt_profile, o.params.alpha);
      }
      const Profile s = run_algorithm(row.algorithm, inst, pred, p);
      row.ratio[i] = opt > 0 ? energy(s, o.params.alpha) / opt : 1.0;
      feasible[r * k + i] = edf_check(inst, s).feasible;
    }
#pragma omp critical
    progress.update(++done);
  }
  progress.finish();

  std::vector<double> col_eps, col_noise, col_eta, col_mean, col_max;
  std::vector<int64_t> col_feasible;
  std::vector<std::string> col_algo, col_corruption;
  std::vector<std::vector<std::string>> table;
  int64_t missed = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    Row& row = rows[r];
    for (size_t i = 0; i < k; ++i) row.feasible += feasible[r * k + i];
    missed += static_cast<int64_t>(k) - row.feasible;
    double mean = 0, top = 0, eta = 0;
    for (size_t i = 0; i < k; ++i) mean += row.ratio[i] / static_cast<double>(k), top = std::max(top, row.ratio[i]),
                                   eta += row.eta[i] / static_cast<double>(k);
    const bool predicted = algorithm_needs_prediction(row.algorithm);
    col_eps.push_back(row.eps), col_noise.push_back(row.noise), col_eta.push_back(eta), col_mean.push_back(mean),
        col_max.push_back(top), col_feasible.push_back(row.feasible), col_algo.push_back(row.algorithm),
        col_corruption.push_back(row.corruption.empty() ? (predicted ? "noise" : "none") : row.corruption);
    table.push_back({row.algorithm, predicted ? nk::cell(row.eps, "%g") : "-", col_corruption.back(),
                     predicted && row.corruption.empty() ? nk::cell(row.noise, "%g") : "-", predicted ? nk::cell(eta, "%.4f") : "-",
                     nk::cell(mean, "%.4f"), nk::cell(top, "%.4f"), std::to_string(row.feasible) + "/" + std::to_string(k)});
  }
  nk::h5::Writer out(o.output, kEvalSchema, o.no_clobber);
  const int64_t n_rows = static_cast<int64_t>(rows.size());
  out.write_strings("/table/algorithm", col_algo, "R");
  out.write_strings("/table/prediction", col_corruption, "R");
  out.write("/table/eps", col_eps.data(), {n_rows}, "R");
  out.write("/table/noise", col_noise.data(), {n_rows}, "R");
  out.write("/table/eta", col_eta.data(), {n_rows}, "R");
  out.write("/table/mean_ratio", col_mean.data(), {n_rows}, "R");
  out.write("/table/max_ratio", col_max.data(), {n_rows}, "R");
  out.write("/table/feasible", col_feasible.data(), {n_rows}, "R");
  out.attr("/", "alpha", o.params.alpha);
  out.attr("/", "gamma", o.params.gamma);
  out.attr("/", "instances", static_cast<int64_t>(k));

  // Plots are written before the HDF5 file is published, and removed with it on failure.
  if (!o.plot.empty()) {
    std::vector<nk::plot::Series> series;
    double eta_max = 0;
    for (size_t r = 0; r < rows.size(); ++r) {
      if (algorithm_needs_prediction(rows[r].algorithm) && rows[r].corruption.empty()) eta_max = std::max(eta_max, col_eta[r]);
    }
    for (const Row& row : rows) {
      if (algorithm_needs_prediction(row.algorithm)) continue;
      double mean = 0;
      for (double v : row.ratio) mean += v / static_cast<double>(k);
      series.push_back({row.algorithm, {0.0, std::max(eta_max, 1e-9)}, {mean, mean}, false});
    }
    for (double eps : epss) {
      for (const std::string& a : algos) {
        if (!algorithm_needs_prediction(a)) continue;
        nk::plot::Series s{a + (epss.size() > 1 ? " eps=" + nk::cell(eps, "%g") : ""), {}, {}, false};
        for (size_t r = 0; r < rows.size(); ++r) {
          if (rows[r].algorithm == a && rows[r].eps == eps && rows[r].corruption.empty()) {
            s.x.push_back(col_eta[r]);
            s.y.push_back(col_mean[r]);
          }
        }
        series.push_back(std::move(s));
      }
    }
    write_text(o.plot,
               nk::plot::line_plot_svg({"Energy / OPT vs prediction error (" + std::to_string(k) + " instances, alpha " +
                                            nk::cell(o.params.alpha, "%g") + ")",
                                        "prediction error eta = ||s_hat - s_opt||_alpha / ||s_opt||_alpha", "mean energy ratio",
                                        false, false},
                                       series),
               o.no_clobber);
  }
  if (!o.profile_plot.empty()) {
    const Instance& inst = instances.front();
    std::vector<nk::plot::Series> series;
    const double noise = noises.size() > 1 ? noises[1] : noises[0];
    const Prediction pred = oracle_prediction(inst, noise, "", root.split(0).split(7)(), o.params.alpha);
    OnlineParams p = o.params;
    p.eps = epss.front();
    for (const std::string& a : {std::string("yds"), std::string("avr"), std::string("oa"), std::string("pred-dynamic")}) {
      const Profile s = run_algorithm(a, inst, &pred, p);
      series.push_back({a == "pred-dynamic" ? a + " (noise " + nk::cell(noise, "%g") + ")" : a, s.t, s.speed, true});
    }
    write_text(o.profile_plot,
               nk::plot::line_plot_svg({"Speed profiles of instance " + inst.name + " (" + std::to_string(inst.size()) + " jobs)",
                                        "time", "speed", false, false},
                                       series),
               o.no_clobber);
  }
  out.commit();
  if (nk::log::chatty()) {
    nk::Table::print(o.output == "-" ? stderr : stdout,
                {"algorithm", "eps", "prediction", "noise", "eta", "mean_ratio", "max_ratio", "feasible"}, table);
  }
  if (missed) throw nk::Error(nk::Exit::runtime, std::to_string(missed) + " schedule(s) missed a deadline");
}

}  // namespace ss
