// predict.cpp - speed predictions: an instance's own optimum (an oracle, with
// optional noise or adversarial corruption), or one profile learned from past
// instances of the same distribution (mean or quantile of their optimal
// speeds on a time grid: the PAC-learning setting).
#include <algorithm>
#include <cmath>

#include "nk/context.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/rng.hpp"
#include "speedscale-sim/solve_common.hpp"

namespace ss {

namespace {

/// Mean speed of 'p' on each cell of 'grid' (exact integrals).
std::vector<double> cell_means(const Profile& p, const std::vector<double>& grid) {
  std::vector<double> out(grid.size() - 1, 0);
  size_t i = 0;
  for (size_t c = 0; c + 1 < grid.size(); ++c) {
    const double lo = grid[c], hi = grid[c + 1];
    while (i < p.speed.size() && p.t[i + 1] <= lo) ++i;
    double work = 0;
    for (size_t k = i; k < p.speed.size() && p.t[k] < hi; ++k) {
      work += p.speed[k] * (std::min(hi, p.t[k + 1]) - std::max(lo, p.t[k]));
    }
    out[c] = work / (hi - lo);
  }
  return out;
}

}  // namespace

void predict(const PredictOptions& o, const nk::RunEnv& env) {
  if (o.noise < 0) throw nk::usage_error("--noise must be >= 0");
  if (!o.adversarial.empty() && o.adversarial != "zero" && o.adversarial != "x10" && o.adversarial != "random") {
    throw nk::usage_error("--adversarial must be zero, x10 or random");
  }
  const nk::h5::File input = nk::h5::File::open(o.input);
  if (input.attr_string("/", "nk_schema")) input.require_schema("speedscale.instances/");
  const std::vector<std::string> names = instance_names(input);
  const nk::Rng root(env.seed);
  nk::h5::Writer out(o.output, kPredictionsSchema, o.no_clobber);
  out.attr("/", "method", o.method);
  out.attr("/", "noise", o.noise);
  if (!o.adversarial.empty()) out.attr("/", "adversarial", o.adversarial);
  if (o.method == "oracle") {
    for (size_t i = 0; i < names.size(); ++i) {
      const Instance inst = read_instance(input, names[i]);
      const Prediction p = oracle_prediction(inst, o.noise, o.adversarial, root.split(i)(), o.alpha);
      const std::string g = "/predictions/" + inst.name + "/";
      out.write(g + "t", p.profile.t.data(), {static_cast<int64_t>(p.profile.t.size())}, "pieces+1");
      out.write(g + "speed", p.profile.speed.data(), {p.profile.pieces()}, "pieces");
      out.write(g + "job_speed", p.job_speed.data(), {inst.size()}, "n");
      out.write(g + "work", p.work.data(), {inst.size()}, "n");
      for (const char* ds : {"t", "speed", "job_speed", "work"}) out.attr(g + ds, "nk_merge", "item");
    }
    out.commit();
    spdlog::info("wrote oracle predictions for {} instance(s) (noise {}, {})", names.size(), o.noise,
                 o.adversarial.empty() ? "not corrupted" : "adversarial " + o.adversarial);
    return;
  }
  if (o.method != "mean" && o.method != "quantile") throw nk::usage_error("--method must be oracle, mean or quantile");
  if (!o.adversarial.empty()) throw nk::usage_error("--adversarial applies to --method oracle only");
  if (o.grid < 1 || o.grid > (int64_t{1} << 24)) throw nk::usage_error("--grid must be in [1, 2^24]");
  if (!(o.quantile >= 0 && o.quantile <= 1)) throw nk::usage_error("--quantile must be in [0, 1]");
  std::vector<Profile> optimal;
  double lo = INFINITY, hi = -INFINITY;
  for (const std::string& name : names) {
    const Instance inst = read_instance(input, name);
    optimal.push_back(yds(inst));
    lo = std::min(lo, optimal.back().t.front());
    hi = std::max(hi, optimal.back().t.back());
  }
  std::vector<double> grid(static_cast<size_t>(o.grid) + 1);
  for (size_t c = 0; c < grid.size(); ++c) grid[c] = lo + (hi - lo) * static_cast<double>(c) / static_cast<double>(o.grid);
  std::vector<std::vector<double>> cells;
  for (const Profile& p : optimal) cells.push_back(cell_means(p, grid));
  Profile learned;
  learned.t = grid;
  nk::Rng noise = root.split(1u << 30);
  for (size_t c = 0; c + 1 < grid.size(); ++c) {
    std::vector<double> column;
    for (const auto& v : cells) column.push_back(v[c]);
    double value = 0;
    if (o.method == "mean") {
      for (double v : column) value += v / static_cast<double>(column.size());
    } else {
      std::sort(column.begin(), column.end());
      const double pos = o.quantile * static_cast<double>(column.size() - 1);
      const size_t at = static_cast<size_t>(pos);
      value = column[at] + (at + 1 < column.size() ? (pos - static_cast<double>(at)) * (column[at + 1] - column[at]) : 0.0);
    }
    if (o.noise > 0) value *= std::exp(o.noise * noise.normal());
    learned.speed.push_back(value);
  }
  out.write("/profile/t", learned.t.data(), {static_cast<int64_t>(learned.t.size())}, "pieces+1");
  out.write("/profile/speed", learned.speed.data(), {learned.pieces()}, "pieces");
  out.attr("/", "training_instances", static_cast<int64_t>(names.size()));
  if (o.method == "quantile") out.attr("/", "quantile", o.quantile);
  out.commit();
  spdlog::info("learned one {} speed profile from {} instance(s) on {} cells over [{:.4g}, {:.4g}]", o.method, names.size(),
               o.grid, lo, hi);
}

}  // namespace ss
