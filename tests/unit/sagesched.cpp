// sagesched.cpp - the Gittins index against a brute-force search over D (and
// its closed forms: a point mass is 1/remaining, a geometric law is
// memoryless); the simulator's invariants under KV pressure for every policy
// (durations from the profile, tokens conserved, KV within capacity, no
// overlap, no idling with work waiting); batch-1 FCFS against
// Pollaczek-Khinchine and a hand-worked schedule; the predictor's losses.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "nk/rng.hpp"
#include "sagesched/policy.hpp"
#include "sagesched/sagesched.hpp"

using namespace sage;

namespace {

double brute_gittins(const std::vector<double>& s, const std::vector<double>& p, double a) {
  double best = 0;
  const double top = s.back() - a;
  auto ratio = [&](double d) {
    double num = 0, den = 0, tail = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] <= a) continue;
      tail += p[i];
      if (s[i] - a <= d) num += p[i];
      den += p[i] * std::min(s[i] - a, d);
    }
    return tail > 0 ? num / den : 0.0;
  };
  for (int k = 1; k <= 20000; ++k) best = std::max(best, ratio(top * k / 20000.0));
  for (double v : s) {
    if (v > a) best = std::max(best, ratio(v - a));
  }
  return best;
}

Trace random_trace(size_t n, double rate, double output_median, double output_sigma, uint64_t seed) {
  nk::Rng rng(seed);
  Trace t;
  double now = 0;
  for (size_t i = 0; i < n; ++i) {
    t.arrival.push_back(now);
    now += -std::log(1 - rng.uniform()) / rate;
    t.prompt_tokens.push_back(1 + static_cast<int64_t>(std::exp(std::log(100.0) + 0.7 * rng.normal())));
    t.output_tokens.push_back(std::max<int64_t>(1, std::llround(std::exp(std::log(output_median) + output_sigma * rng.normal()))));
    t.category.push_back(static_cast<int32_t>(rng.below(3)));
    t.prompt.push_back(t.output_tokens.back() > output_median ? "explain in detail" : "briefly");
  }
  return t;
}

}  // namespace

TEST_SUITE("sagesched") {
  TEST_CASE("the Gittins scan equals a brute-force search over D") {
    nk::Rng rng(7);
    for (int trial = 0; trial < 200; ++trial) {
      const size_t n = 1 + rng.below(12);
      std::vector<double> s, p;
      double v = 0, z = 0;
      for (size_t i = 0; i < n; ++i) {
        v += 0.1 + 5 * rng.uniform();
        s.push_back(v);
        p.push_back(rng.uniform() < 0.2 ? 0.0 : rng.uniform());
        z += p.back();
      }
      if (z == 0) p.back() = z = 1;
      for (double& q : p) q /= z;
      const double a = rng.uniform() < 0.3 ? 0.0 : s.back() * rng.uniform();
      const GittinsIndex g = gittins_index(s.data(), p.data(), n, a);
      double tail = 0;
      for (size_t i = 0; i < n; ++i) tail += s[i] > a ? p[i] : 0;
      if (tail == 0) {
        CHECK(std::isinf(g.index));
        continue;
      }
      CHECK(g.index == doctest::Approx(brute_gittins(s, p, a)).epsilon(1e-9));
      CHECK(g.best_delta > 0);
    }
  }

  TEST_CASE("a point mass gives 1 / remaining (SRPT order); a geometric law is memoryless") {
    const double s = 10;
    for (double a : {0.0, 3.0, 9.5}) {
      const double one = 1;
      const GittinsIndex g = gittins_index(&s, &one, 1, a);
      CHECK(g.index == doctest::Approx(1 / (s - a)));
      CHECK(g.best_delta == doctest::Approx(s - a));
    }
    const double one = 1;
    CHECK(std::isinf(gittins_index(&s, &one, 1, 10.0).index));
    // Geometric on 1, 2, ... (truncated where the tail is negligible).
    std::vector<double> support, prob;
    for (int k = 1; k <= 400; ++k) {
      support.push_back(k);
      prob.push_back(0.2 * std::pow(0.8, k - 1));
    }
    const double i0 = gittins_index(support.data(), prob.data(), support.size(), 0).index;
    for (double a : {1.0, 2.0, 7.0}) CHECK(gittins_index(support.data(), prob.data(), support.size(), a).index == doctest::Approx(i0));
    CHECK(i0 == doctest::Approx(0.2));  // the hazard rate: D = 1 is best
  }

  TEST_CASE("every policy keeps the simulator's invariants under KV pressure") {
    const Trace t = random_trace(300, 40, 60, 0.9, 3);
    const Profile profile = load_profile("", "linear:0.002,1e-5,1e-9,2e-7,1e-4,1e-6");
    for (const std::string& policy : policy_names()) {
      for (int variant = 0; variant < 4; ++variant) {
        const bool swap = variant & 1, running_first = variant & 2;
        CAPTURE(policy);
        CAPTURE(swap);
        CAPTURE(running_first);
        SimOptions o;
        o.policy = policy;
        o.server.running_first = running_first;
        o.server.max_batch = 16;
        o.server.max_tokens = 512;
        o.server.kv_tokens = 4096;
        o.server.swap = swap;
        const SimResult r = simulate(t, profile, o, 1);
        int64_t emitted = 0, outputs = 0;
        for (int64_t v : r.emitted) emitted += v;
        for (int64_t v : t.output_tokens) outputs += v;
        CHECK(emitted == outputs);
        CHECK(r.kv_capacity == 4096);
        for (size_t i = 0; i < r.start.size(); ++i) {
          CHECK(r.kv_used[i] <= r.kv_capacity);
          CHECK(r.batch[i] >= 1);
          CHECK(r.batch[i] <= 16);
          CHECK(r.prefill_tokens[i] + (r.batch[i] - (r.prefill_tokens[i] > 0 ? 1 : 0)) <= 512 + 16);
          if (!swap) {
            Work w;
            w.prefill = static_cast<double>(r.prefill_tokens[i]);
            w.attn = r.attn_work[i];
            w.context = static_cast<double>(r.context_tokens[i]);
            w.sequences = static_cast<double>(r.batch[i]);
            CHECK(r.duration[i] == doctest::Approx(profile.iteration_time(w)).epsilon(1e-12));
          }
          if (i + 1 < r.start.size()) {
            const double end = r.start[i] + r.duration[i];
            CHECK(r.start[i + 1] >= end - 1e-9);
            if (r.start[i + 1] > end + 1e-9) {
              // Idle: every request that had arrived by then had finished, and the next one starts the iteration.
              for (size_t j = 0; j < t.size(); ++j) {
                if (t.arrival[j] <= end) CHECK(r.finish[j] <= end + 1e-9);
              }
              const auto next = std::upper_bound(t.arrival.begin(), t.arrival.end(), end);
              REQUIRE(next != t.arrival.end());
              CHECK(r.start[i + 1] == doctest::Approx(*next));
            }
          }
        }
        for (size_t j = 0; j < t.size(); ++j) {
          CHECK(r.first_token[j] > t.arrival[j]);
          CHECK(r.finish[j] >= r.first_token[j]);
        }
        if (!swap) {
          int64_t kv_peak = 0;
          for (int64_t v : r.kv_used) kv_peak = std::max(kv_peak, v);
          CHECK(kv_peak > 2048);  // the cache was under pressure
        }
      }
    }
  }

  TEST_CASE("batch-1 FCFS is M/G/1: Pollaczek-Khinchine within 3%") {
    const double rate = 4.0;
    const Trace t = random_trace(200000, rate, 40, 0.5, 11);
    const Profile profile = load_profile("", "linear:0.001,2e-5,0,1e-6,0.002");
    SimOptions o;
    o.policy = "fcfs";
    o.server.max_batch = 1;
    o.server.max_tokens = 1 << 20;
    o.record_iterations = false;
    const SimResult r = simulate(t, profile, o, 1);
    double es = 0, es2 = 0, mean = 0;
    const auto n = static_cast<double>(t.size());
    for (size_t i = 0; i < t.size(); ++i) {
      const double s = profile.solo_time(t.prompt_tokens[i], t.prompt_tokens[i], 0, 0, t.output_tokens[i], 1 << 20);
      es += s / n;
      es2 += s * s / n;
      mean += (r.finish[i] - t.arrival[i]) / n;
    }
    const double lambda = (n - 1) / t.arrival.back(), rho = lambda * es;
    CHECK(rho > 0.5);
    CHECK(rho < 0.9);
    const double pk = es + lambda * es2 / (2 * (1 - rho));
    CHECK(mean == doctest::Approx(pk).epsilon(0.03));
  }

  TEST_CASE("batch-1 schedules worked by hand: FCFS runs in order, SRPT lets a short arrival ahead") {
    Trace t;
    t.arrival = {0.0, 0.001, 0.0015};
    t.prompt_tokens = {10, 10, 10};
    t.output_tokens = {5, 1, 2};
    t.category = {0, 0, 0};
    // Every iteration takes 1 ms: t0 only.
    const Profile profile = load_profile("", "linear:0.001,0,0,0,0");
    SimOptions o;
    o.server.max_batch = 1;
    o.policy = "fcfs";
    SimResult r = simulate(t, profile, o, 1);
    CHECK(r.finish[0] == doctest::Approx(0.005));
    CHECK(r.finish[1] == doctest::Approx(0.006));
    CHECK(r.finish[2] == doctest::Approx(0.008));
    o.policy = "srpt-oracle";
    o.server.running_first = false;  // one pass in key order: a short arrival takes the slot
    r = simulate(t, profile, o, 1);
    // At 1 ms request 1 (one iteration left) beats request 0 (four); at 2 ms request 2 (two) beats 0 (four).
    CHECK(r.finish[1] == doctest::Approx(0.002));
    CHECK(r.finish[2] == doctest::Approx(0.004));
    CHECK(r.finish[0] == doctest::Approx(0.008));
    CHECK(r.first_token[0] == doctest::Approx(0.001));
  }

  TEST_CASE("profiles: roofline presets, solo times summed in closed form") {
    const Profile h200 = load_profile("h200-llama3-8b", "");
    CHECK(h200.kv_tokens > 500000);
    CHECK(h200.kv_tokens < 1000000);
    Work decode;
    decode.sequences = 1;
    decode.context = 1000;
    // One sequence is memory-bound: weights / effective bandwidth dominate.
    CHECK(h200.iteration_time(decode) == doctest::Approx(1e-3 + (16.06e9 + 1000 * 131072.0) / (4.8e12 * 0.8)).epsilon(1e-9));
    for (const Profile& p : {h200, load_profile("", "linear:0.001,1e-5,1e-8,1e-7,1e-4")}) {
      double direct = 0;
      for (int64_t c = 100; c <= 5000; ++c) {
        Work w;
        w.sequences = 1;
        w.context = static_cast<double>(c);
        direct += p.iteration_time(w);
      }
      CHECK(p.solo_decode_time(100, 5000) == doctest::Approx(direct).epsilon(1e-10));
    }
  }

  TEST_CASE("roofline_toml: the preset written out loads back as the preset; a probe's derating replaces its own") {
    const std::string path = "sagesched_unit_roofline.toml";
    auto load_text = [&](const std::string& text) {
      std::FILE* f = std::fopen(path.c_str(), "w");
      std::fputs(text.c_str(), f);
      std::fclose(f);
      Profile p = load_profile(path, "");
      std::remove(path.c_str());
      return p;
    };
    const Profile preset = load_profile("h200-llama3-8b", "");
    RooflineOverride same;
    same.name = "copy";
    const Profile copy = load_text(roofline_toml("h200-llama3-8b", same));
    CHECK(copy.name == "copy");
    CHECK(copy.kv_tokens == preset.kv_tokens);
    Work w;
    w.sequences = 64;
    w.context = 64 * 2000;
    w.prefill = 512;
    w.attn = 512.0 * 1500;
    CHECK(copy.iteration_time(w) == doctest::Approx(preset.iteration_time(w)).epsilon(1e-7));
    RooflineOverride probed;
    probed.name = "probed";
    probed.compute_efficiency = 0.7;
    probed.bandwidth_efficiency = 0.9;
    const Profile faster = load_text(roofline_toml("h200-llama3-8b", probed));
    Work one;
    one.sequences = 1;
    one.context = 1000;
    // Memory-bound decode: the time scales with 1 / bandwidth efficiency.
    CHECK(faster.iteration_time(one) - 1e-3 == doctest::Approx((preset.iteration_time(one) - 1e-3) * 0.8 / 0.9).epsilon(1e-7));
  }

  TEST_CASE("pmf losses: CRPS of a one-bin pmf, quantiles and mean") {
    const Bins bins = Bins::log_spaced(1024, 1);  // edges 1, 2, 4, ..., 2048
    REQUIRE(bins.size() == 11);
    std::vector<double> pmf(bins.size(), 0.0);
    pmf[5] = 1;  // [32, 64): uniform in log2 on [5, 6)
    // CRPS against y = 128 (log2 7): integral of F^2 over [5, 6) plus 1 over [6, 7) = 1/3 + 1.
    CHECK(pmf_losses(bins, pmf.data(), 128).crps == doctest::Approx(1.0 / 3 + 1));
    CHECK(pmf_quantile(bins, pmf.data(), 0.5) == doctest::Approx(std::sqrt(32.0 * 64)));
    CHECK(pmf_mean(bins, pmf.data()) == doctest::Approx(std::sqrt(32.0 * 64)));
    CHECK(bins.bin_of(32) == 5);
    CHECK(bins.bin_of(63.9) == 5);
    CHECK(bins.bin_of(1e9) == 10);
  }

  TEST_CASE("the predictor learns the cue words; the same stream gives the same pmfs") {
    const Trace t = random_trace(3000, 10, 60, 1.0, 5);
    Predictor a(Bins::log_spaced(65536, 4), 1), b(Bins::log_spaced(65536, 4), 1);
    std::vector<double> pa(a.bins().size()), pb(b.bins().size()), crps, histogram_crps;
    std::vector<double> counts(a.bins().size(), 0.0), histogram(a.bins().size());
    for (size_t i = 0; i < t.size(); ++i) {
      for (size_t k = 0; k < counts.size(); ++k) histogram[k] = (counts[k] + 1.0 / counts.size()) / (i + 1.0);
      histogram_crps.push_back(pmf_losses(a.bins(), histogram.data(), static_cast<double>(t.output_tokens[i])).crps);
      counts[a.bins().bin_of(static_cast<double>(t.output_tokens[i]))] += 1;
      a.predict(static_cast<int64_t>(i), t.prompt[i], t.category[i], t.prompt_tokens[i], pa.data());
      b.predict(static_cast<int64_t>(i), t.prompt[i], t.category[i], t.prompt_tokens[i], pb.data());
      CHECK(std::equal(pa.begin(), pa.end(), pb.begin()));
      CHECK(std::accumulate(pa.begin(), pa.end(), 0.0) == doctest::Approx(1.0));
      crps.push_back(pmf_losses(a.bins(), pa.data(), static_cast<double>(t.output_tokens[i])).crps);
      a.learn(static_cast<int64_t>(i), t.output_tokens[i]);
      b.learn(static_cast<int64_t>(i), t.output_tokens[i]);
    }
    // The prompt's cue halves the spread: over the last 1000 the predictor
    // beats the global histogram of the same results by a clear margin.
    const double ours = std::accumulate(crps.end() - 1000, crps.end(), 0.0) / 1000;
    const double global = std::accumulate(histogram_crps.end() - 1000, histogram_crps.end(), 0.0) / 1000;
    CHECK(ours < 0.85 * global);
  }
}
