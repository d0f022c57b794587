// verbs.cpp - simulate and predict: read a trace, run, write HDF5 and a summary
// (write_run: the schema simulate and testbed share).
#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/table.hpp"
#include "nk/timer.hpp"
#include "sagesched/engine.hpp"

namespace sage {

void write_run(const std::string& output, bool no_clobber, const Trace& trace, const SimResult& r, const SimOptions& sim,
               const Profile& profile, const std::function<void(nk::h5::Writer&)>& extra, bool measured) {
  const Summary s = summarise(trace, r);
  const auto n = static_cast<int64_t>(trace.size());
  std::vector<double> ttft(trace.size()), ttlt(trace.size());
  for (size_t i = 0; i < trace.size(); ++i) {
    ttft[i] = r.first_token[i] - trace.arrival[i];
    ttlt[i] = r.finish[i] - trace.arrival[i];
  }
  nk::h5::Writer out(output, kSimSchema, no_clobber);
  out.write("/per_request/first_token", r.first_token.data(), {n}, "N", "s");
  out.write("/per_request/finish", r.finish.data(), {n}, "N", "s");
  out.write("/per_request/ttft", ttft.data(), {n}, "N", "s");
  out.write("/per_request/ttlt", ttlt.data(), {n}, "N", "s");
  out.write("/per_request/preemptions", r.preemptions.data(), {n}, "N");
  if (sim.record_iterations) {
    const auto m = static_cast<int64_t>(r.start.size());
    out.write("/iterations/start", r.start.data(), {m}, "I", "s");
    out.write("/iterations/duration", r.duration.data(), {m}, "I", "s");
    out.write("/iterations/batch", r.batch.data(), {m}, "I");
    out.write("/iterations/prefill_tokens", r.prefill_tokens.data(), {m}, "I", "tokens");
    out.write("/iterations/attn_work", r.attn_work.data(), {m}, "I", "tokens^2");
    out.write("/iterations/context_tokens", r.context_tokens.data(), {m}, "I", "tokens");
    out.write("/iterations/emitted", r.emitted.data(), {m}, "I", "tokens");
    out.write("/iterations/kv_used", r.kv_used.data(), {m}, "I", "tokens");
  }
  out.attr("/", "policy", sim.policy);
  if (std::isfinite(trace.load)) out.attr("/", "trace_load", trace.load);
  out.attr("/", "profile", profile.name);
  out.attr("/", "profile_description", profile.description);
  out.attr("/", "max_batch", sim.server.max_batch);
  out.attr("/", "max_tokens", sim.server.max_tokens);
  out.attr("/", "kv_tokens", r.kv_capacity);
  out.attr("/", "block", sim.server.block);
  out.attr("/", "preemption", sim.server.swap ? "swap" : "recompute");
  out.attr("/", "iterations", r.iterations);
  out.attr("/", "mean_ttlt", s.mean_ttlt);
  out.attr("/", "p99_ttlt", s.p99_ttlt);
  out.attr("/", "mean_ttft", s.mean_ttft);
  out.attr("/", "throughput", s.throughput);
  out.attr("/", "preemptions", s.preemptions);
  out.attr("/", "requests_per_s", r.seconds > 0 ? static_cast<double>(n) / r.seconds : 0.0);
  extra(out);
  out.commit();
  spdlog::info("{}{}: mean TTLT {:.3f} s, P99 {:.3f} s, mean TTFT {:.3f} s, {:.0f} tokens/s, {} preemptions; {} iterations, "
               "{:.0f} requests/s {}",
               sim.policy, measured ? " (measured)" : "", s.mean_ttlt, s.p99_ttlt, s.mean_ttft, s.throughput, s.preemptions, r.iterations,
               r.seconds > 0 ? static_cast<double>(n) / r.seconds : 0.0, measured ? "served" : "simulated");
}

void simulate_verb(const SimulateOptions& o, const nk::RunEnv& env) {
  const Trace trace = read_trace(o.input);
  const Profile profile = load_profile(o.profile, o.iter_cost);
  SimResult r;
  try {
    r = simulate(trace, profile, o.sim, env.seed);
  } catch (const nk::Error& e) {
    // The engine names datasets; the file is ours to name.
    if (e.code() == nk::Exit::input) throw nk::Error(nk::Exit::input, "input '" + nk::display_name(o.input) + "': " + e.what());
    throw;
  }
  write_run(o.output, o.no_clobber, trace, r, o.sim, profile, [](nk::h5::Writer&) {}, false);
}

void predict_verb(const PredictOptions& o, const nk::RunEnv& env) {
  const Trace trace = read_trace(o.input);
  const size_t n = trace.size();
  // When each result becomes known: its finish in a simulation, or its solo finish.
  std::vector<double> known(n);
  if (!o.sim.empty()) {
    const nk::h5::File sim = nk::h5::File::open(o.sim);
    sim.require_schema("sagesched.sim/");
    const auto finish = sim.read<double>("/per_request/finish", 1, "N");
    if (static_cast<size_t>(finish.shape[0]) != n) {
      throw nk::input_error(o.sim, "/per_request/finish", "has " + std::to_string(finish.shape[0]) + " entries, the trace " +
                                                              std::to_string(n));
    }
    nk::h5::require_finite(o.sim, "/per_request/finish", finish);
    known = finish.data;
  } else {
    const Profile profile = load_profile(o.profile, "");
    for (size_t i = 0; i < n; ++i) {
      known[i] = trace.arrival[i] + profile.solo_time(trace.prompt_tokens[i], trace.prompt_tokens[i], 0, 0,
                                                      trace.output_tokens[i], o.max_tokens);
    }
  }
  std::vector<size_t> by_known(n);
  std::iota(by_known.begin(), by_known.end(), size_t{0});
  std::stable_sort(by_known.begin(), by_known.end(), [&](size_t a, size_t b) { return known[a] < known[b]; });

  Predictor predictor(Bins::log_spaced(65536, o.per_octave), env.seed);
  const Bins& bins = predictor.bins();
  const size_t k = bins.size();
  std::vector<float> pmf_out(n * k);
  std::vector<double> mean(n), rank(n), crps(n), p50(n), p90(n), mae(n);
  std::vector<double> pmf(k), global(k, 0.0), global_pmf(k);
  double global_n = 0;
  std::vector<double> cat_sum, cat_n;
  double all_sum = 0, all_n = 0;
  Losses base_global, base_category;
  double predict_seconds = 0;
  size_t learned = 0;
  for (size_t i = 0; i < n; ++i) {
    while (learned < n && known[by_known[learned]] < trace.arrival[i]) {
      const size_t j = by_known[learned++];
      const auto y = trace.output_tokens[j];
      predictor.learn(static_cast<int64_t>(j), y);
      global[bins.bin_of(static_cast<double>(y))] += 1;
      global_n += 1;
      const auto c = static_cast<size_t>(trace.category[j]);
      if (cat_sum.size() <= c) cat_sum.resize(c + 1, 0.0), cat_n.resize(c + 1, 0.0);
      cat_sum[c] += static_cast<double>(y);
      cat_n[c] += 1;
      all_sum += static_cast<double>(y);
      all_n += 1;
    }
    nk::Stopwatch watch;
    predictor.predict(static_cast<int64_t>(i), trace.prompt.empty() ? std::string() : trace.prompt[i], trace.category[i],
                      trace.prompt_tokens[i], pmf.data());
    predict_seconds += watch.seconds();
    const auto y = static_cast<double>(trace.output_tokens[i]);
    std::copy(pmf.begin(), pmf.end(), pmf_out.begin() + static_cast<std::ptrdiff_t>(i * k));
    mean[i] = pmf_mean(bins, pmf.data());
    rank[i] = predictor.rank_score(static_cast<int64_t>(i));
    const Losses l = pmf_losses(bins, pmf.data(), y);
    crps[i] = l.crps, p50[i] = l.pinball50, p90[i] = l.pinball90, mae[i] = l.mae;
    for (size_t b = 0; b < k; ++b) global_pmf[b] = (global[b] + 1.0 / static_cast<double>(k)) / (global_n + 1.0);
    const Losses g = pmf_losses(bins, global_pmf.data(), y);
    base_global.crps += g.crps, base_global.pinball50 += g.pinball50, base_global.pinball90 += g.pinball90, base_global.mae += g.mae;
    // Category mean: a point forecast (its CRPS is the absolute error in log2).
    const auto c = static_cast<size_t>(trace.category[i]);
    const double m = c < cat_n.size() && cat_n[c] > 0 ? cat_sum[c] / cat_n[c] : (all_n > 0 ? all_sum / all_n : 64.0);
    base_category.crps += std::fabs(std::log2(y) - std::log2(m));
    base_category.pinball50 += 0.5 * std::fabs(y - m);
    base_category.pinball90 += std::max(0.9 * (y - m), -0.1 * (y - m));
    base_category.mae += std::fabs(y - m);
  }
  auto average = [&](const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(n); };
  const double dn = static_cast<double>(n);
  const Losses ours{average(crps), average(p50), average(p90), average(mae)};
  const Losses global_mean{base_global.crps / dn, base_global.pinball50 / dn, base_global.pinball90 / dn, base_global.mae / dn};
  const Losses category_mean{base_category.crps / dn, base_category.pinball50 / dn, base_category.pinball90 / dn,
                             base_category.mae / dn};
  const double us = 1e6 * predict_seconds / dn;

  const auto ni = static_cast<int64_t>(n), ki = static_cast<int64_t>(k);
  nk::h5::Writer out(o.output, kPredSchema, o.no_clobber);
  out.write("/pred/bins", bins.edges.data(), {ki + 1}, "K1", "tokens");
  out.write("/pred/pmf", pmf_out.data(), {ni, ki}, "N,K");
  out.write("/pred/mean", mean.data(), {ni}, "N", "tokens");
  out.write("/pred/rank_score", rank.data(), {ni}, "N");
  out.write("/pred/crps", crps.data(), {ni}, "N", "log2 tokens");
  out.write("/pred/pinball50", p50.data(), {ni}, "N", "tokens");
  out.write("/pred/pinball90", p90.data(), {ni}, "N", "tokens");
  out.write("/pred/mae", mae.data(), {ni}, "N", "tokens");
  auto losses_attr = [&](const std::string& prefix, const Losses& l) {
    out.attr("/", prefix + "crps", l.crps);
    out.attr("/", prefix + "pinball50", l.pinball50);
    out.attr("/", prefix + "pinball90", l.pinball90);
    out.attr("/", prefix + "mae", l.mae);
  };
  losses_attr("", ours);
  losses_attr("global_histogram_", global_mean);
  losses_attr("category_mean_", category_mean);
  out.attr("/", "us_per_request", us);
  out.attr("/", "known_at", o.sim.empty() ? "solo finish under " + o.profile : "finish in " + o.sim);
  out.commit();
  std::vector<std::vector<std::string>> rows;
  auto row = [&](const char* name, const Losses& l) {
    rows.push_back({name, nk::cell(l.crps, "%.4f"), nk::cell(l.pinball50, "%.2f"), nk::cell(l.pinball90, "%.2f"),
                    nk::cell(l.mae, "%.2f")});
  };
  row("predictor", ours);
  row("global-histogram", global_mean);
  row("category-mean", category_mean);
  nk::Table::print(o.output == "-" ? stderr : stdout, {"model", "crps_log2", "pinball50", "pinball90", "mae"}, rows);
  spdlog::info("{} predictions, {:.1f} us each", n, us);
}

}  // namespace sage
