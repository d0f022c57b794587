// exact.cpp - the exact verb: ALDRIFT, SIR, CEM and CbAS on an enumerable
// problem, every stage measured against pi_T by enumeration.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "aldrift/aldrift.hpp"
#include "aldrift/imh.hpp"
#include "nk/error.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"

namespace ald {

namespace {

struct Stage {
  Model proposal, fit;
  double T = 0;
  int64_t chains = 0;
  int steps = 0, burn_in = 0;
  int64_t evals = 0;
  double coverage = 0, tv_law = 0, acceptance = 0;
};

struct Result {
  std::vector<Stage> stages;
  std::vector<int> samples;
  Model final_model;
  bool has_final = false;
  double tv_law = 0;
  int64_t evals = 0;
};

/// The prior in the learner's family (the stage-0 proposal of CEM and CbAS).
Model prior_in(Learner kind, const Problem& p, const std::vector<double>& log_prior) {
  const Model prior = Model::from_prior(p);
  if (kind == Learner::markov) return prior.as_markov();
  if (kind == Learner::markov_h) return prior;
  Model t;
  t.kind = Learner::table;
  t.A = p.A;
  t.n = p.n;
  t.table = exp_all(log_prior);
  t.prepare();
  return t;
}

double max_ratio(const std::vector<double>& log_pi, const std::vector<double>& log_q) {
  double m = 0;
  for (size_t s = 0; s < log_pi.size(); ++s)
    if (std::isfinite(log_pi[s])) m = std::max(m, std::exp(log_pi[s] - log_q[s]));
  return m;
}

Result run_aldrift(const Problem& p, const std::vector<double>& log_prior, const ExactOptions& o, Learner learner,
                   int64_t chains, const nk::Rng& rng) {
  Result r;
  Model q = Model::from_prior(p);
  nk::Progress progress("aldrift stages", o.stages);
  for (int i = 0; i < o.stages; ++i) {
    Stage st;
    st.T = o.T * (i + 1) / o.stages;
    st.chains = chains;
    st.steps = o.steps;
    st.burn_in = o.burn_in;
    st.proposal = q;
    ChainRun run = run_chains(p, q, st.T, chains, o.steps, o.burn_in, rng.split(static_cast<uint64_t>(i)));
    st.evals = run.evaluations;
    st.acceptance = run.acceptance;
    // The exact law of one stored sample against pi_{T_i}.
    const std::vector<double> log_q = q.log_prob_all();
    const std::vector<double> log_pi = log_target(p, log_prior, st.T);
    const IndependenceKernel P(log_q, log_pi);
    st.coverage = P.coverage();
    st.tv_law = total_variation(sample_law(P, P.q(), o.steps, o.burn_in), exp_all(log_pi));
    st.fit = fit(learner, p.A, p.n, run.samples, {}, o.smoothing);
    q = st.fit;
    r.evals += st.evals;
    spdlog::debug("aldrift stage {}: T = {:.4g}, coverage {:.3g}, acceptance {:.3f}, tv_law {:.4f}", i, st.T, st.coverage,
                  st.acceptance, st.tv_law);
    r.samples = std::move(run.samples);
    r.stages.push_back(std::move(st));
    progress.update(i + 1);
  }
  r.final_model = q;
  r.has_final = true;
  r.tv_law = r.stages.back().tv_law;
  return r;
}

/// Sampling-importance-resampling from the prior: B draws, weights exp(-T d).
Result run_sir(const Problem& p, const std::vector<double>& log_prior, const ExactOptions& o, const nk::Rng& rng) {
  Result r;
  const Model prior = Model::from_prior(p);
  const int64_t B = o.budget;
  const int64_t runs = std::max<int64_t>(1, (o.sir_pool + B - 1) / B);
  std::vector<double> law(p.N, 0.0);
  std::vector<int> draws(static_cast<size_t>(B) * p.n);
  std::vector<int64_t> index(B);
  std::vector<double> w(B);
  nk::Progress progress("sir runs", runs);
  for (int64_t run = 0; run < runs; ++run) {
    nk::Rng g = rng.split(static_cast<uint64_t>(run));
    double top = -1e300;
    for (int64_t b = 0; b < B; ++b) {
      prior.sample(g, &draws[b * p.n]);
      index[b] = encode(&draws[b * p.n], p.A, p.n);
      w[b] = -o.T * p.cost[index[b]];
      top = std::max(top, w[b]);
    }
    double z = 0;
    for (auto& v : w) z += v = std::exp(v - top);
    // The law of one resampled draw, Rao-Blackwellised: each draw's normalised weight.
    for (int64_t b = 0; b < B; ++b) law[index[b]] += w[b] / z / static_cast<double>(runs);
    if (run == 0) {  // the run whose draws are the output: B multinomial resamples
      std::vector<double> cdf(B);
      double acc = 0;
      for (int64_t b = 0; b < B; ++b) cdf[b] = acc += w[b];
      r.samples.resize(draws.size());
      for (int64_t b = 0; b < B; ++b) {
        const double u = g.uniform() * acc;
        const int64_t k = std::min<int64_t>(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin(), B - 1);
        std::copy(&draws[k * p.n], &draws[k * p.n] + p.n, &r.samples[b * p.n]);
      }
    }
    progress.update(run + 1);
  }
  r.evals = B;
  r.tv_law = total_variation(law, exp_all(log_target(p, log_prior, o.T)));
  return r;
}

/// CEM (elite refits, blended) and CbAS (weighted refits at a falling cost
/// quantile, weights L/q): K iterations of B/K evaluations.
Result run_refits(const Problem& p, const std::vector<double>& log_prior, const ExactOptions& o, Learner learner,
                  bool cbas, const nk::Rng& rng) {
  Result r;
  const int64_t m = o.budget / o.stages;
  const std::vector<double> log_pi = log_target(p, log_prior, o.T);
  const std::vector<double> pi = exp_all(log_pi);
  Model q = prior_in(learner, p, log_prior);
  const Model prior = Model::from_prior(p);
  double gamma = std::numeric_limits<double>::infinity();
  std::vector<int> pop(static_cast<size_t>(m) * p.n);
  std::vector<double> cost(m);
  nk::Progress progress(cbas ? "cbas iterations" : "cem iterations", o.stages);
  for (int i = 0; i < o.stages; ++i) {
    Stage st;
    st.T = o.T;
    st.proposal = q;
    nk::Rng g = rng.split(static_cast<uint64_t>(i));
    for (int64_t j = 0; j < m; ++j) {
      q.sample(g, &pop[j * p.n]);
      cost[j] = p.cost[encode(&pop[j * p.n], p.A, p.n)];
    }
    st.evals = m;
    std::vector<int64_t> order(m);
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return cost[a] < cost[b]; });
    if (!cbas) {
      const int64_t elite = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(o.elite * m)), 1, m);
      std::vector<int> chosen(static_cast<size_t>(elite) * p.n);
      for (int64_t e = 0; e < elite; ++e)
        std::copy(&pop[order[e] * p.n], &pop[order[e] * p.n] + p.n, &chosen[e * p.n]);
      st.fit = blend(q, fit(learner, p.A, p.n, chosen, {}, o.smoothing), o.cem_rate);
    } else {
      const int64_t qi = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(o.quantile * m)) - 1, 0, m - 1);
      gamma = std::min(gamma, cost[order[qi]]);
      std::vector<double> w(m, 0.0);
      for (int64_t j = 0; j < m; ++j)
        if (cost[j] <= gamma) w[j] = std::exp(prior.log_prob(&pop[j * p.n]) - q.log_prob(&pop[j * p.n]));
      st.fit = fit(learner, p.A, p.n, pop, w, o.smoothing);
    }
    st.coverage = max_ratio(log_pi, q.log_prob_all());
    q = st.fit;
    st.tv_law = total_variation(exp_all(q.log_prob_all()), pi);
    r.evals += m;
    r.stages.push_back(std::move(st));
    progress.update(i + 1);
  }
  r.samples = pop;
  r.final_model = q;
  r.has_final = true;
  r.tv_law = r.stages.back().tv_law;
  return r;
}

}  // namespace

std::string stage_group(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "/stages/%03d", i);
  return buf;
}

void exact(const ExactOptions& o, const nk::RunEnv& env) {
  const Learner learner = parse_learner(o.learner);
  if (o.burn_in >= o.steps) throw nk::usage_error("--burn-in must be below --steps (a chain keeps its states after the burn-in)");
  int64_t chains = o.chains;
  if (o.method == "aldrift") {
    const int64_t per_chain = static_cast<int64_t>(o.stages) * (o.steps + 1);
    if (chains == 0) chains = o.budget / per_chain;
    if (chains < 1 || chains * per_chain > o.budget)
      throw nk::usage_error("--budget " + std::to_string(o.budget) + " is below what the stages need: " +
                            std::to_string(std::max<int64_t>(chains, 1)) + " chains x " + std::to_string(o.stages) +
                            " stages x (" + std::to_string(o.steps) + " steps + 1) = " +
                            std::to_string(std::max<int64_t>(chains, 1) * per_chain) + " evaluations");
  } else if ((o.method == "cem" || o.method == "cbas") && o.budget / o.stages < 2) {
    throw nk::usage_error("--budget " + std::to_string(o.budget) + " is below one stage (2 evaluations per iteration x " +
                          std::to_string(o.stages) + " stages)");
  }
  const nk::h5::File in = nk::h5::File::open(o.input);
  // A file of ours must be a problem; one written by anything else (no nk_schema) is read as it is.
  if (in.attr_string("/", "nk_schema")) in.require_schema(kProblemSchema);
  const Problem p = read_problem(in);
  const std::vector<double> log_prior = Model::from_prior(p).log_prob_all();
  const nk::Rng rng(env.seed);

  Result r;
  if (o.method == "aldrift") r = run_aldrift(p, log_prior, o, learner, chains, rng);
  else if (o.method == "sir") r = run_sir(p, log_prior, o, rng);
  else r = run_refits(p, log_prior, o, learner, o.method == "cbas", rng);

  const std::vector<double> target = exp_all(log_target(p, log_prior, o.T));
  nk::h5::Writer out(o.output, kExactSchema, o.no_clobber);
  out.write("/target/p", target.data(), {p.N}, "S");
  out.write("/samples", r.samples.data(), {static_cast<int64_t>(r.samples.size()) / p.n, p.n}, "N,J");
  if (r.has_final) write_model(out, "/final", r.final_model);
  double coverage = 0;
  for (size_t i = 0; i < r.stages.size(); ++i) {
    const Stage& st = r.stages[i];
    const std::string g = stage_group(static_cast<int>(i));
    write_model(out, g + "/proposal", st.proposal);
    write_model(out, g + "/fit", st.fit);
    out.attr(g, "T", st.T);
    out.attr(g, "evals", st.evals);
    out.attr(g, "coverage", st.coverage);
    out.attr(g, "tv_law", st.tv_law);
    if (o.method == "aldrift") {
      out.attr(g, "chains", st.chains);
      out.attr(g, "steps", int64_t{st.steps});
      out.attr(g, "burn_in", int64_t{st.burn_in});
      out.attr(g, "acceptance", st.acceptance);
    }
    coverage = std::max(coverage, st.coverage);
  }
  out.attr("/", "method", o.method);
  out.attr("/", "learner", o.method == "sir" ? std::string("none") : o.learner);
  out.attr("/", "T", o.T);
  out.attr("/", "budget", o.budget);
  out.attr("/", "evals", r.evals);
  out.attr("/", "tv_law", r.tv_law);
  if (!r.stages.empty()) out.attr("/", "coverage", coverage);
  out.commit();
  spdlog::info("exact: {} ({}) at T = {}: tv_law {:.4f}, {} evaluations{} -> {}", o.method,
               o.method == "sir" ? "prior draws" : o.learner, o.T, r.tv_law, r.evals,
               r.stages.empty() ? std::string() : fmt::format(", max coverage {:.3g}", coverage),
               nk::display_name(o.output, true));
}

}  // namespace ald
