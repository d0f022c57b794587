// global.cpp - the global verb: runs over (function, n, seed) items, each
// until eps-optimality or the budget, and their curves and log fits.
#include "aldrift/global.hpp"

#include <cmath>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "nk/shard.hpp"

namespace ald {

namespace {

struct Item {
  Fn fn;
  int n;
  int64_t seed;
};

std::vector<int64_t> parse_seeds(const std::string& text, uint64_t fallback) {
  if (text.empty()) return {static_cast<int64_t>(fallback)};
  std::vector<int64_t> out;
  size_t pos = 0;
  auto number = [&](const std::string& s) -> int64_t {
    if (s.empty() || s.size() > 12 || s.find_first_not_of("0123456789") != std::string::npos)
      throw nk::usage_error("--seeds: '" + s + "' is not a seed (A-B ranges and comma lists of integers >= 0)");
    return std::stoll(s);
  };
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string part = text.substr(pos, comma - pos);
    const size_t dash = part.find('-');
    if (dash == std::string::npos) {
      out.push_back(number(part));
    } else {
      const int64_t a = number(part.substr(0, dash)), b = number(part.substr(dash + 1));
      if (b < a || b - a > 1000000) throw nk::usage_error("--seeds: bad range '" + part + "'");
      for (int64_t s = a; s <= b; ++s) out.push_back(s);
    }
    pos = comma + 1;
  }
  return out;
}

std::vector<double> draw_x_star(int64_t seed, int n) {
  nk::Rng r = nk::Rng(static_cast<uint64_t>(seed)).split(0);
  std::vector<double> x(n);
  for (int i = 0; i < n; ++i) x[i] = -2.0 + 4.0 * r.uniform();
  return x;
}

std::vector<double> read_x_star(const std::string& path, int n) {
  const nk::h5::File in = nk::h5::File::open(path);
  in.require("/x_star");
  const auto x = in.read<double>("/x_star", 1, "n");
  nk::h5::require_finite(path, "/x_star", x);
  if (x.shape[0] != n)
    throw nk::input_error(path, "/x_star", "length " + std::to_string(x.shape[0]) + ", expected --dim " + std::to_string(n));
  return x.data;
}

}  // namespace

void global(const GlobalOptions& o, const nk::RunEnv& env) {
  std::vector<Fn> fns;
  for (const auto& name : o.functions) fns.push_back(parse_function(name));
  const std::vector<int64_t> seeds = parse_seeds(o.seeds, env.seed);
  const bool aldrift = o.method == "aldrift";
  const ContinuousLearner learner = parse_continuous_learner(o.learner);
  double env_c1 = 0, env_c2 = 0;
  if (!o.envelope.empty()) {
    if (std::sscanf(o.envelope.c_str(), "%lf,%lf", &env_c1, &env_c2) != 2 || !(env_c1 > 0) || !(env_c2 >= env_c1) ||
        !std::isfinite(env_c2))
      throw nk::usage_error("--envelope takes C1,C2 with 0 < C1 <= C2, not '" + o.envelope + "'");
  }
  if (o.burn_in >= o.steps) throw nk::usage_error("--burn-in must be below --steps");
  std::vector<Item> items;
  for (Fn fn : fns)
    for (int n : o.dims)
      for (int64_t s : seeds) items.push_back({fn, n, s});
  // Every item's objective first: a bad x* or a missing envelope fails before any run.
  std::vector<Objective> objectives;
  for (const Item& it : items) {
    std::vector<double> x_star;
    if (!o.x_star_file.empty()) {
      x_star = read_x_star(o.x_star_file, it.n);
    } else {
      x_star = draw_x_star(it.seed, it.n);
    }
    Objective f = make_objective(it.fn, it.n, o.amplitude, std::move(x_star));
    if (env_c1 > 0) {
      f.c1 = env_c1;
      f.c2 = env_c2;
    }
    const bool needs_envelope = o.method == "doo" || (aldrift && learner == ContinuousLearner::optimistic);
    if (needs_envelope && !f.has_envelope())
      throw nk::usage_error(std::string(function_name(it.fn)) + " has no quadratic envelope: " +
                            (o.method == "doo" ? "doo" : "the optimistic learner") + " needs --envelope C1,C2");
    objectives.push_back(std::move(f));
  }
  const auto [first, last] = nk::shard_range(env.shard, static_cast<int64_t>(items.size()));
  const bool single = items.size() == 1 && env.shard.whole();
  const int64_t count = last - first;
  std::vector<std::string> names;
  std::vector<int64_t> dims, item_seeds, evals, reach;
  std::vector<double> best_d, fits;
  std::vector<double> best_x, trace;
  nk::Progress progress("global runs", count);
  for (int64_t i = first; i < last; ++i) {
    const Item& it = items[i];
    const Objective& f = objectives[i];
    Tracker track(f, o.budget, o.eps, single);
    nk::Rng rng = nk::Rng(static_cast<uint64_t>(it.seed)).split(1);
    if (aldrift) run_aldrift_global(track, o, learner, rng);
    else if (o.method == "random") run_random(track, rng);
    else if (o.method == "cem") run_cem_global(track, o, rng);
    else if (o.method == "cbas") run_cbas_global(track, o, rng);
    else if (o.method == "soo") run_soo(track, o);
    else run_doo(track, o, f.c2);
    const auto fit = log_fit(track.first_reach());
    names.emplace_back(function_name(it.fn));
    dims.push_back(it.n);
    item_seeds.push_back(it.seed);
    evals.push_back(track.evals());
    best_d.push_back(track.best());
    reach.insert(reach.end(), track.first_reach().begin(), track.first_reach().end());
    fits.insert(fits.end(), fit.begin(), fit.end());
    if (!std::isfinite(track.best())) throw nk::Error(nk::Exit::runtime, "global: a run ended with a non-finite best value");
    spdlog::info("global: {} n = {} seed {}: {} ({}) best d - d* = {:.3g} after {} evaluations; log fit b = {:.4g}, R^2 = {:.4f}",
                 names.back(), it.n, it.seed, o.method, aldrift ? o.learner : "-", track.best(), track.evals(), fit[1],
                 fit[2]);
    if (single) {
      best_x = track.best_x();
      trace = track.trace();
    }
    progress.update(i - first + 1);
  }
  std::vector<double> eps(kCurvePoints);
  for (int k = 0; k < kCurvePoints; ++k) eps[k] = curve_eps(k);
  nk::h5::Writer out(o.output, kGlobalSchema, o.no_clobber);
  out.write("/curve/eps", eps.data(), {kCurvePoints}, "eps");
  out.attr("/curve/eps", "nk_merge", "same");
  out.write_strings("/items/function", names, "item");
  out.write("/items/dim", dims.data(), {count}, "item");
  out.write("/items/seed", item_seeds.data(), {count}, "item");
  out.write("/items/evals", evals.data(), {count}, "item");
  out.write("/items/best_d", best_d.data(), {count}, "item");
  out.write("/items/curve_evals", reach.data(), {count, kCurvePoints}, "item,eps");
  out.allow_nonfinite("/items/fit");  // NaN: no fit (too few points)
  out.write("/items/fit", fits.data(), {count, 3}, "item,a_b_r2");
  if (single) {
    out.write("/best/x", best_x.data(), {static_cast<int64_t>(best_x.size())}, "n");
    out.write("/trace/best", trace.data(), {static_cast<int64_t>(trace.size())}, "evals");
    out.write("/curve/evals", reach.data(), {kCurvePoints}, "eps");
    out.attr("/", "best_d", best_d[0]);
    out.attr("/", "fit_a", fits[0]);
    out.attr("/", "fit_b", fits[1]);
    out.attr("/", "fit_r2", fits[2]);
    out.attr("/", "evals", evals[0]);
    out.attr("/", "function", names[0]);
    out.attr("/", "dim", dims[0]);
  }
  out.attr("/", "method", o.method);
  out.attr("/", "learner", aldrift ? o.learner : std::string("none"));
  out.attr("/", "budget", o.budget);
  out.attr("/", "eps", o.eps);
  out.attr("/", "amplitude", o.amplitude);
  out.commit();
}

void evaluate(const EvaluateOptions& o, const nk::RunEnv& env) {
  const nk::h5::File in = nk::h5::File::open(o.input);
  in.require("/x");
  const auto x = in.read<double>("/x", 2, "m,n");
  nk::h5::require_finite(o.input, "/x", x);
  const int64_t m = x.shape[0];
  if (x.shape[1] < 1 || x.shape[1] > 1000) throw nk::input_error(o.input, "/x", "n = " + std::to_string(x.shape[1]) + " (expected 1..1000)");
  const int n = static_cast<int>(x.shape[1]);
  const Objective f = make_objective(parse_function(o.function), n, o.amplitude,
                                     o.x_star_file.empty() ? draw_x_star(static_cast<int64_t>(env.seed), n)
                                                           : read_x_star(o.x_star_file, n));
  std::vector<double> d(m);
  for (int64_t i = 0; i < m; ++i) {
    d[i] = f(&x.data[i * n]);
    // Finite points where the function overflows float64 (|x| ~ 1e80 and up for the quartic ones).
    if (!std::isfinite(d[i])) {
      throw nk::input_error(o.input, "/x", "row " + std::to_string(i) + ": " + o.function +
                                               " is not finite there (coordinates too large)");
    }
  }
  nk::h5::Writer out(o.output, kGlobalSchema, o.no_clobber);
  out.write("/d", d.data(), {m}, "m");
  out.write("/x_star", f.x_star.data(), {n}, "n");
  out.attr("/", "function", o.function);
  out.commit();
}

}  // namespace ald
