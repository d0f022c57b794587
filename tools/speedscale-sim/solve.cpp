// solve.cpp - run algorithms on every instance, check every schedule exactly,
// write profiles, assignments, energies and a ratio table.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "nk/cli.hpp"
#include "nk/context.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "nk/table.hpp"
#include "nk/timer.hpp"
#include "nk/shard.hpp"
#include "speedscale-sim/solve_common.hpp"

namespace ss {

std::vector<std::string> parse_algorithms(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  std::string name;
  while (std::getline(in, name, ',')) {
    if (name.empty()) continue;
    const auto& known = algorithm_names();
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string all;
      for (const std::string& k : known) all += (all.empty() ? "" : ", ") + k;
      throw nk::usage_error("--algo: unknown algorithm '" + name + "' (known: " + all + ")");
    }
    if (std::find(out.begin(), out.end(), name) != out.end()) throw nk::usage_error("--algo: '" + name + "' is given twice");
    out.push_back(name);
  }
  if (out.empty()) throw nk::usage_error("--algo: give at least one algorithm");
  return out;
}

PredictionFile::PredictionFile(const std::string& path) : file_(nk::h5::File::open(path)) {
  file_.require_schema(kPredictionsSchema);
  if (file_.has("/profile/t")) shared_ = read_profile("/profile");
}

Profile PredictionFile::read_profile(const std::string& group) const {
  Profile p;
  p.t = file_.read<double>(group + "/t", 1, "pieces+1").data;
  p.speed = file_.read<double>(group + "/speed", 1, "pieces").data;
  if (p.t.size() != p.speed.size() + 1) {
    throw nk::input_error(file_.path(), group + "/speed", "has " + std::to_string(p.speed.size()) + " pieces but " + group +
                                                              "/t has " + std::to_string(p.t.size()) + " breakpoints (need one more)");
  }
  for (size_t i = 0; i < p.t.size(); ++i) {
    if (!std::isfinite(p.t[i]) || (i && !(p.t[i] > p.t[i - 1]))) {
      throw nk::input_error(file_.path(), group + "/t", "breakpoint " + std::to_string(i) + " is not finite and increasing");
    }
  }
  for (size_t i = 0; i < p.speed.size(); ++i) {
    if (!std::isfinite(p.speed[i]) || p.speed[i] < 0) {
      throw nk::input_error(file_.path(), group + "/speed", "piece " + std::to_string(i) + " is not a finite speed >= 0");
    }
  }
  return p;
}

Prediction PredictionFile::get(const Instance& inst, const std::vector<std::string>& algos) const {
  Prediction pred;
  const std::string g = "/predictions/" + inst.name;
  auto needs = [&](const char* a) { return std::find(algos.begin(), algos.end(), a) != algos.end(); };
  if (file_.has(g + "/t")) {
    pred.profile = read_profile(g);
  } else if (shared_) {
    pred.profile = *shared_;
  } else if (needs("pred-dynamic") || needs("pred-offline")) {
    throw nk::input_error(file_.path(), g + "/t", "missing: no speed prediction for instance " + inst.name + " and no /profile");
  }
  auto per_job = [&](const char* name, std::vector<double>& into) {
    const std::string ds = g + "/" + name;
    if (!file_.has(ds)) throw nk::input_error(file_.path(), ds, std::string("missing (") + name + " prediction of instance " + inst.name + ")");
    into = file_.read<double>(ds, 1, "n").data;
    if (static_cast<int64_t>(into.size()) != inst.size()) {
      throw nk::input_error(file_.path(), ds, "has " + std::to_string(into.size()) + " entries but instance " + inst.name +
                                                  " has " + std::to_string(inst.size()) + " jobs");
    }
    for (size_t j = 0; j < into.size(); ++j) {
      if (!std::isfinite(into[j]) || into[j] < 0) {
        throw nk::input_error(file_.path(), ds, "job " + std::to_string(j) + " is not a finite value >= 0");
      }
    }
  };
  if (needs("pred-jobspeed")) per_job("job_speed", pred.job_speed);
  if (needs("las")) per_job("work", pred.work);
  return pred;
}

std::vector<double> parse_numbers(const std::string& option, const std::string& list) {
  std::vector<double> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      size_t used = 0;
      out.push_back(std::stod(item, &used));
      if (used != item.size() || !std::isfinite(out.back())) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw nk::usage_error(option + ": '" + item + "' is not a finite number");
    }
  }
  if (out.empty()) throw nk::usage_error(option + ": give at least one number");
  return out;
}

void solve(const SolveOptions& o, const nk::RunEnv& env) {
  const std::vector<std::string> algos = parse_algorithms(o.algos);
  if (!(o.params.alpha > 1)) throw nk::usage_error("--alpha must be > 1");
  const nk::Shard& shard = env.shard;
  const nk::h5::File input = nk::h5::File::open(o.input);
  if (input.attr_string("/", "nk_schema")) input.require_schema("speedscale.instances/");
  const std::vector<std::string> all_names = instance_names(input);
  const auto [begin, end] = nk::shard_range(shard, static_cast<int64_t>(all_names.size()));
  std::vector<Instance> instances;
  for (int64_t i = begin; i < end; ++i) instances.push_back(read_instance(input, all_names[static_cast<size_t>(i)]));
  // qOA and BKP re-evaluate every --dt and may add a profile piece each time:
  // refuse a step that would make an absurd number of them, before any work.
  const bool stepped = std::count(algos.begin(), algos.end(), "qoa") + std::count(algos.begin(), algos.end(), "bkp") > 0;
  for (const Instance& inst : instances) {
    if (!stepped || !(o.params.dt > 0) || inst.size() == 0) continue;
    const double horizon = *std::max_element(inst.deadline.begin(), inst.deadline.end()) -
                           *std::min_element(inst.release.begin(), inst.release.end());
    if (!(horizon / o.params.dt <= 67108864.0)) {
      throw nk::usage_error("--dt " + nk::cell(o.params.dt, "%g") + " re-evaluates qOA/BKP " + nk::cell(horizon / o.params.dt, "%.3g") +
                            " times over a horizon of " + nk::cell(horizon, "%g") + ": at most 2^26 (raise --dt)");
    }
  }
  bool need_pred = false;
  for (const std::string& a : algos) need_pred |= algorithm_needs_prediction(a);
  std::optional<PredictionFile> preds;
  if (need_pred) {
    if (o.predictions.empty()) throw nk::usage_error("--algo las/pred-* needs --predictions FILE (from speedscale-sim predict)");
    preds.emplace(o.predictions);
  }
  std::vector<Prediction> per_instance(instances.size());
  if (preds) {
    for (size_t i = 0; i < instances.size(); ++i) per_instance[i] = preds->get(instances[i], algos);
  }
  struct Result {
    Profile profile;
    Check check;
    double energy = 0, seconds = 0;
  };
  const size_t k = instances.size(), a_count = algos.size();
  std::vector<std::vector<Result>> results(k, std::vector<Result>(a_count));
  std::vector<double> opt(k);
  nk::Progress progress("solve", static_cast<int64_t>(k));
  int64_t done = 0;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t i = 0; i < static_cast<int64_t>(k); ++i) {
    const Instance& inst = instances[static_cast<size_t>(i)];
    std::optional<double> opt_energy;
    for (size_t a = 0; a < a_count; ++a) {
      Result& r = results[static_cast<size_t>(i)][a];
      const nk::Stopwatch watch;
      r.profile = run_algorithm(algos[a], inst, preds ? &per_instance[static_cast<size_t>(i)] : nullptr, o.params);
      r.seconds = watch.seconds();
      r.check = edf_check(inst, r.profile);
      r.energy = energy(r.profile, o.params.alpha);
      if (algos[a] == "yds") opt_energy = r.energy;
    }
    opt[static_cast<size_t>(i)] = opt_energy ? *opt_energy : energy(yds(inst), o.params.alpha);
#pragma omp critical
    progress.update(++done);
  }
  progress.finish();

  nk::h5::Writer out(o.output, kResultsSchema, o.no_clobber);
  std::vector<std::string> names;
  for (const Instance& inst : instances) names.push_back(inst.name);
  out.write_strings("/summary/instance", names, "K");
  out.write("/summary/opt_energy", opt.data(), {static_cast<int64_t>(k)}, "K");
  std::vector<std::vector<std::string>> rows;
  int64_t infeasible_total = 0;
  for (size_t a = 0; a < a_count; ++a) {
    const std::string& name = algos[a];
    std::vector<double> e(k), ratio(k), secs(k);
    std::vector<uint8_t> feasible(k);
    double ratio_sum = 0, ratio_max = 0, sec_sum = 0;
    int64_t ok = 0;
    for (size_t i = 0; i < k; ++i) {
      const Result& r = results[i][a];
      e[i] = r.energy;
      ratio[i] = opt[i] > 0 ? r.energy / opt[i] : 1.0;
      secs[i] = r.seconds;
      feasible[i] = r.check.feasible;
      ok += r.check.feasible;
      ratio_sum += ratio[i];
      ratio_max = std::max(ratio_max, ratio[i]);
      sec_sum += r.seconds;
      if (!r.check.feasible) {
        spdlog::warn("{}: instance {}: {} job(s) late, worst job {} misses {:.3g} of its work", name, instances[i].name,
                     r.check.late_jobs, r.check.worst_job, r.check.worst_shortfall);
      }
      if (o.no_profiles) continue;
      const std::string g = "/results/" + name + "/" + instances[i].name;
      out.write(g + "/t", r.profile.t.data(), {static_cast<int64_t>(r.profile.t.size())}, "pieces+1");
      out.write(g + "/speed", r.profile.speed.data(), {r.profile.pieces()}, "pieces");
      std::vector<int64_t> job;
      std::vector<double> start, stop;
      for (const Piece& p : r.check.pieces) job.push_back(p.job), start.push_back(p.start), stop.push_back(p.end);
      out.write(g + "/assignment/job", job.data(), {static_cast<int64_t>(job.size())}, "P");
      out.write(g + "/assignment/start", start.data(), {static_cast<int64_t>(start.size())}, "P");
      out.write(g + "/assignment/end", stop.data(), {static_cast<int64_t>(stop.size())}, "P");
      for (const char* ds : {"/t", "/speed", "/assignment/job", "/assignment/start", "/assignment/end"}) {
        out.attr(g + ds, "nk_merge", "item");
      }
      out.attr(g, "energy", r.energy);
      out.attr(g, "feasible", static_cast<int64_t>(r.check.feasible));
      out.attr(g, "ratio", ratio[i]);
      out.attr(g, "late_jobs", r.check.late_jobs);
    }
    infeasible_total += static_cast<int64_t>(k) - ok;
    const std::string s = "/summary/" + name;
    out.write(s + "/energy", e.data(), {static_cast<int64_t>(k)}, "K");
    out.write(s + "/ratio", ratio.data(), {static_cast<int64_t>(k)}, "K");
    out.write(s + "/feasible", feasible.data(), {static_cast<int64_t>(k)}, "K");
    out.write(s + "/seconds", secs.data(), {static_cast<int64_t>(k)}, "K", "s");
    rows.push_back({name, std::to_string(k), nk::cell(ratio_sum / static_cast<double>(k), "%.4f"), nk::cell(ratio_max, "%.4f"),
                    std::to_string(ok) + "/" + std::to_string(k), nk::cell(sec_sum, "%.4f")});
  }
  out.attr("/", "alpha", o.params.alpha);
  out.attr("/", "algorithms", o.algos);
  out.attr("/", "eps", o.params.eps);
  out.attr("/", "gamma", o.params.gamma);
  out.commit();
  if (nk::log::chatty()) {
    nk::Table::print(o.output == "-" ? stderr : stdout, {"algorithm", "instances", "mean_ratio", "max_ratio", "feasible", "seconds"}, rows);
  }
  if (infeasible_total) {
    throw nk::Error(nk::Exit::runtime, std::to_string(infeasible_total) + " schedule(s) missed a deadline (see warnings)");
  }
}

}  // namespace ss
