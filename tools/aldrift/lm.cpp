// lm.cpp - the lm verb: ALDRIFT, SIR and CEM over a causal language model's
// strings, each measured by its mean cost and KL(q || L), against the
// importance-sampling reference point of pi_T.
#include "aldrift/lm.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

#include "aldrift/lm_cost.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/kernels/vector.hpp"
#include "nk/lm/checkpoint.hpp"
#include "nk/lm/generate.hpp"
#include "nk/lm/loss.hpp"
#include "nk/lm/model.hpp"
#include "nk/lm/train.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "nk/rng.hpp"

namespace ald {

IsEstimate importance_estimate(const std::vector<double>& d, double T) {
  IsEstimate e;
  const size_t N = d.size();
  if (N == 0) return e;
  const double dmin = *std::min_element(d.begin(), d.end());
  std::vector<double> w(N);
  double a = 0, b = 0, w2 = 0;
  for (size_t j = 0; j < N; ++j) {
    w[j] = std::exp(-T * (d[j] - dmin));
    a += w[j], b += w[j] * d[j], w2 += w[j] * w[j];
  }
  a /= static_cast<double>(N), b /= static_cast<double>(N);
  e.mean_cost = b / a;
  e.log_z = std::log(a) - T * dmin;
  e.kl = -T * (e.mean_cost - dmin) - std::log(a);
  e.ess = a * a * static_cast<double>(N) * static_cast<double>(N) / w2;
  if (N < 2) return e;
  // Influence functions of the ratio b / a and of f(a, b) = -T b / a - log a.
  const double ga = T * b / (a * a) - 1.0 / a, gb = -T / a;
  double s_mean = 0, s_kl = 0;
  for (size_t j = 0; j < N; ++j) {
    const double phi_mean = w[j] * (d[j] - e.mean_cost) / a;
    const double phi_kl = ga * (w[j] - a) + gb * (w[j] * d[j] - b);
    s_mean += phi_mean * phi_mean, s_kl += phi_kl * phi_kl;
  }
  const double n = static_cast<double>(N);
  e.mean_cost_se = std::sqrt(s_mean / (n - 1) / n);
  e.kl_se = std::sqrt(s_kl / (n - 1) / n);
  return e;
}

namespace {

using Strings = std::vector<std::vector<int32_t>>;

double mean_of(const std::vector<double>& x) {
  return x.empty() ? std::nan("") : std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size());
}
double se_of(const std::vector<double>& x) {
  if (x.size() < 2) return std::nan("");
  const double m = mean_of(x);
  double s = 0;
  for (const double v : x) s += (v - m) * (v - m);
  return std::sqrt(s / static_cast<double>(x.size() - 1) / static_cast<double>(x.size()));
}

/// A model strings are drawn from and scored under: a network and an
/// optional logit bias added to every row (the bias learner's adapter).
struct Proposal {
  const nk::lm::ParameterStore* weights = nullptr;
  std::vector<float> bias;
};

/// The prior, its tokenizer, the prefix every string continues, and the cost.
struct Setting {
  nk::lm::Checkpoint prior;
  std::vector<int32_t> prefix;  ///< BOS + the prompt's tokens
  const TextCost* cost = nullptr;
  const LmOptions* o = nullptr;
  int64_t evals = 0;          ///< cost calls of the methods
  int64_t measure_evals = 0;  ///< cost calls of the measurements (mean cost of q's draws, the reference)
  std::vector<double> reference;  ///< d of the reference's prior draws (empty: none)

  const nk::lm::Tokenizer& tok() const { return *prior.tokenizer; }
  int64_t width() const { return static_cast<int64_t>(prefix.size()) + o->length; }
  int64_t vocab() const { return prior.weights.config().vocab; }
  Proposal prior_proposal() const { return {&prior.weights, {}}; }

  /// m strings of o->length tokens from q (no EOS stop).
  Strings draw(const Proposal& q, int64_t m, uint64_t seed) const {
    const nk::lm::Model model(*q.weights);
    nk::lm::GenerateOptions g;
    g.max_new = o->length;
    g.seed = seed;
    g.eos = -1;
    g.batch = o->batch;
    g.logit_bias = q.bias;
    return nk::lm::generate_causal(model, std::vector<std::vector<int32_t>>(static_cast<size_t>(m), prefix), g);
  }

  /// Runs 'weights' over the strings in batches; for each batch calls
  /// visit(first, last, logits, offsets) with the logits of every row.
  template <class Visit>
  void forward_all(const nk::lm::ParameterStore& weights, const Strings& s, Visit&& visit) const {
    const nk::lm::Model model(weights);
    const int64_t W = width();
    nk::lm::Workspace ws(weights.config(), {o->batch * W, W, false});
    std::vector<int32_t> tokens;
    std::vector<int64_t> offsets;
    for (size_t first = 0; first < s.size(); first += static_cast<size_t>(o->batch)) {
      const size_t last = std::min(s.size(), first + static_cast<size_t>(o->batch));
      tokens.clear(), offsets.assign(1, 0);
      for (size_t b = first; b < last; ++b) {
        tokens.insert(tokens.end(), prefix.begin(), prefix.end());
        tokens.insert(tokens.end(), s[b].begin(), s[b].end());
        offsets.push_back(static_cast<int64_t>(tokens.size()));
      }
      const nk::lm::TokenBatch batch{tokens, offsets};
      model.forward(batch, ws);
      visit(first, last, ws.logits(), batch);
    }
  }

  /// Sums a batch's next-token log-probabilities over each string's tokens.
  void sum_strings(const float* logits, const nk::lm::TokenBatch& batch, size_t first, size_t last, std::vector<float>& lp,
                   std::vector<double>& out) const {
    const int64_t P = static_cast<int64_t>(prefix.size()), W = width();
    lp.resize(batch.tokens.size());
    nk::lm::next_token_logprob(logits, vocab(), batch, lp.data());
    for (size_t b = first; b < last; ++b) {
      const int64_t begin = batch.offsets[b - first];
      double sum = 0;
      for (int64_t t = P; t < W; ++t) sum += lp[static_cast<size_t>(begin + t)];
      out[b] = sum;
    }
  }

  /// log q(s) and log L(s) of each string (one pass when q is the prior's network).
  void score(const Proposal& q, const Strings& s, std::vector<double>& log_q, std::vector<double>& log_prior) const {
    log_q.assign(s.size(), 0.0), log_prior.assign(s.size(), 0.0);
    const bool shared = q.weights == &prior.weights;
    const int64_t V = vocab();
    std::vector<float> lp;
    forward_all(*q.weights, s, [&](size_t first, size_t last, float* logits, const nk::lm::TokenBatch& batch) {
      if (shared) sum_strings(logits, batch, first, last, lp, log_prior);
      if (!q.bias.empty())
        for (int64_t r = 0; r < batch.rows(); ++r)
          for (int64_t v = 0; v < V; ++v) logits[r * V + v] += q.bias[static_cast<size_t>(v)];
      sum_strings(logits, batch, first, last, lp, log_q);
    });
    if (!shared)
      forward_all(prior.weights, s, [&](size_t first, size_t last, float* logits, const nk::lm::TokenBatch& batch) {
        sum_strings(logits, batch, first, last, lp, log_prior);
      });
  }

  std::vector<std::string> texts(const Strings& s) const {
    std::vector<std::string> t;
    t.reserve(s.size());
    for (const auto& x : s) t.push_back(tok().decode(x));
    return t;
  }

  /// d of each string.
  std::vector<double> costs(const Strings& s, bool measure) {
    const std::vector<double> d = (*cost)(texts(s));
    (measure ? measure_evals : evals) += static_cast<int64_t>(s.size());
    return d;
  }

  /// The prior's next-token logits z [R, V] and targets y [R] of every
  /// token of the samples (R = samples x length), the bias learner's data.
  struct BiasRows {
    std::vector<float> z;
    std::vector<int32_t> y;
    int64_t R = 0;
  };
  BiasRows bias_rows(const Strings& samples) const {
    const int64_t V = vocab(), P = static_cast<int64_t>(prefix.size()), W = width(), L = o->length;
    BiasRows d;
    d.R = static_cast<int64_t>(samples.size()) * L;
    if (static_cast<double>(d.R) * static_cast<double>(V) * 4 > 8e9)
      throw nk::usage_error("lm: the bias fit would hold " + std::to_string(d.R * V * 4 / 1000000) +
                            " MB of logits; use fewer --chains or a shorter --length");
    d.z.resize(static_cast<size_t>(d.R * V));
    d.y.resize(static_cast<size_t>(d.R));
    forward_all(prior.weights, samples, [&](size_t first, size_t last, float* logits, const nk::lm::TokenBatch& batch) {
      for (size_t b = first; b < last; ++b) {
        const int64_t begin = batch.offsets[b - first];
        for (int64_t t = P; t < W; ++t) {
          const int64_t r = static_cast<int64_t>(b) * L + (t - P);
          std::copy_n(logits + (begin + t - 1) * V, V, d.z.begin() + r * V);
          d.y[static_cast<size_t>(r)] = batch.tokens[static_cast<size_t>(begin + t)];
        }
      }
    });
    return d;
  }

  /// Sum of lse(z + b) - z_y - b_y over the rows of the selected strings
  /// (every string when skip < 0; else those of fold 'skip' when keep, the
  /// others when not), and with sum_p the sum of softmax(z + b) over those
  /// rows; fixed chunks of strings summed in order (the same sums for any
  /// thread count); softmax rows through nk::kernels.
  double bias_nll(const BiasRows& d, const std::vector<int>& fold, int skip, bool keep, const std::vector<double>& b,
                  std::vector<double>* sum_p) const {
    constexpr int64_t kChunks = 64;
    const int64_t V = vocab(), L = o->length, S = d.R / L;
    const std::vector<float> bf(b.begin(), b.end());
    std::vector<double> nll(kChunks, 0.0);
    std::vector<std::vector<double>> part(sum_p ? kChunks : 0);
    const auto used = [&](int64_t j) { return skip < 0 || ((fold[static_cast<size_t>(j)] == skip) == keep); };
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t k = 0; k < kChunks; ++k) {
      const int64_t first = S * k / kChunks, last = S * (k + 1) / kChunks;
      std::vector<double> lse(static_cast<size_t>((last - first) * L));
      if (sum_p) part[static_cast<size_t>(k)].assign(static_cast<size_t>(V), 0.0);
      for (int64_t j = first; j < last;) {
        if (!used(j)) {
          ++j;
          continue;
        }
        int64_t end = j + 1;  // one kernel call per run of selected strings
        while (end < last && used(end)) ++end;
        const int64_t r0 = j * L, r1 = end * L;
        nk::kernels::softmax_rows_biased(d.z.data() + r0 * V, r1 - r0, V, bf.data(), lse.data(),
                                         sum_p ? part[static_cast<size_t>(k)].data() : nullptr);
        j = end;
        for (int64_t r = r0; r < r1; ++r) {
          const int32_t t = d.y[static_cast<size_t>(r)];
          nll[static_cast<size_t>(k)] +=
              lse[static_cast<size_t>(r - r0)] - static_cast<double>(d.z[static_cast<size_t>(r * V + t)] + bf[static_cast<size_t>(t)]);
        }
      }
    }
    double J = 0;
    for (const double x : nll) J += x;
    if (sum_p) {
      sum_p->assign(static_cast<size_t>(V), 0.0);
      for (const auto& pk : part)
        for (int64_t v = 0; v < V; ++v) (*sum_p)[static_cast<size_t>(v)] += pk[static_cast<size_t>(v)];
    }
    return J;
  }

  /// The MAP logit bias on the rows bias_nll selects:
  ///   J(b) = sum over tokens of [lse(z + b) - z_y - b_y] + l2 |b|^2 / 2
  /// (a N(0, 1 / l2) prior on each b_v), convex in b; minimised from b by
  /// diagonally preconditioned gradient steps (preconditioner: the mean
  /// softmax + l2 per token, a bound on the Hessian's diagonal) with
  /// backtracking.
  void map_bias(const BiasRows& d, const std::vector<int>& fold, int skip, double l2, std::vector<double>& b) const {
    const int64_t V = vocab(), L = o->length, S = d.R / L;
    std::vector<double> counts(static_cast<size_t>(V), 0.0);
    int64_t rows = 0;
    for (int64_t j = 0; j < S; ++j) {
      if (skip >= 0 && fold[static_cast<size_t>(j)] == skip) continue;
      rows += L;
      for (int64_t r = j * L; r < (j + 1) * L; ++r) counts[static_cast<size_t>(d.y[static_cast<size_t>(r)])] += 1.0;
    }
    if (rows == 0) return;
    const double R = static_cast<double>(rows), lambda = l2 / R;
    for (double& c : counts) c /= R;
    const auto objective = [&](const std::vector<double>& x, std::vector<double>& p) {
      double sq = 0;
      for (const double v : x) sq += v * v;
      const double J = bias_nll(d, fold, skip, false, x, &p) / R + 0.5 * lambda * sq;
      for (double& v : p) v /= R;
      return J;
    };
    std::vector<double> p, p_trial, step(static_cast<size_t>(V)), trial(static_cast<size_t>(V));
    double J = objective(b, p);
    for (int it = 0; it < 200; ++it) {
      double largest = 0;
      for (int64_t v = 0; v < V; ++v) {
        const size_t i = static_cast<size_t>(v);
        step[i] = (p[i] - counts[i] + lambda * b[i]) / (p[i] + lambda);
        largest = std::max(largest, std::abs(step[i]));
      }
      if (largest < 1e-4) break;
      double eta = 1.0, Jt = J;
      for (int back = 0; back < 30; ++back, eta *= 0.5) {
        for (size_t i = 0; i < b.size(); ++i) trial[i] = b[i] - eta * step[i];
        Jt = objective(trial, p_trial);  // the gradient's part comes with it: no second pass once accepted
        if (Jt <= J) break;
      }
      if (!(Jt < J)) break;
      b.swap(trial);
      p.swap(p_trial);
      J = Jt;
    }
  }

  /// The bias learner: the MAP logit bias over the frozen prior on the
  /// samples, from the current bias. With --bias-l2 cv the prior's precision
  /// is chosen among bias_l2_grid by K-fold cross-validation: strings are
  /// dealt to folds in groups of 'group' consecutive ones (a chain's states
  /// stay together, so correlated strings never straddle a fold), each
  /// precision is fitted without a fold and scored by the held-out NLL, the
  /// least total NLL wins (ties: the larger precision), then the fit runs
  /// on every string. Returns the precision used.
  double fit_bias(std::vector<float>& bias, const Strings& samples, int64_t group) const {
    const BiasRows d = bias_rows(samples);
    const int64_t S = static_cast<int64_t>(samples.size());
    std::vector<int> fold(static_cast<size_t>(S), 0);
    std::vector<double> start(bias.begin(), bias.end());
    if (start.empty()) start.assign(static_cast<size_t>(vocab()), 0.0);
    double l2 = o->bias_l2;
    const int K = o->bias_folds;
    if (o->bias_l2_cv && S / std::max<int64_t>(1, group) >= K) {
      for (int64_t j = 0; j < S; ++j) fold[static_cast<size_t>(j)] = static_cast<int>((j / std::max<int64_t>(1, group)) % K);
      double best = INFINITY;
      for (const double c : o->bias_l2_grid) {
        double held = 0;
        for (int f = 0; f < K; ++f) {
          std::vector<double> b = start;
          map_bias(d, fold, f, c, b);
          held += bias_nll(d, fold, f, true, b, nullptr);
        }
        spdlog::debug("lm: bias l2 {:g}: held-out NLL {:.6g} per token", c, held / static_cast<double>(d.R));
        if (held < best || (held == best && c > l2)) best = held, l2 = c;
      }
    }
    map_bias(d, fold, -1, l2, start);
    bias.assign(start.begin(), start.end());
    return l2;
  }

  /// The full learner: cross-entropy fine-tuning of every weight on the
  /// samples: fit_epochs passes in shuffled mini-batches of fit_batch, AdamW
  /// at a constant fit_lr, no weight decay, gradient norm clipped to 1.
  void fine_tune(nk::lm::ParameterStore& w, const Strings& samples, const nk::Rng& rng) const {
    if (samples.empty()) return;
    const int64_t m = static_cast<int64_t>(samples.size()), B = std::min(o->fit_batch, m);
    const int64_t per_epoch = (m + B - 1) / B, total = per_epoch * o->fit_epochs;
    const int64_t P = static_cast<int64_t>(prefix.size()), W = width();
    nk::lm::AdamWConfig adamw;
    adamw.weight_decay = 0.0;
    nk::lm::Trainer trainer(w, nk::lm::ParameterMask::all(w), nk::lm::Schedule{o->fit_lr, 1.0, 1, total + 1}, adamw,
                            {B * W, W, true});
    std::vector<int64_t> order(static_cast<size_t>(m));
    std::vector<int32_t> tokens, targets;
    std::vector<int64_t> offsets, rows;
    std::vector<float> weights;
    for (int epoch = 0; epoch < o->fit_epochs; ++epoch) {
      std::iota(order.begin(), order.end(), 0);
      nk::Rng shuffle = rng.split(static_cast<uint64_t>(epoch));
      for (int64_t i = m - 1; i > 0; --i) std::swap(order[static_cast<size_t>(i)], order[shuffle.below(static_cast<uint64_t>(i + 1))]);
      for (int64_t first = 0; first < m; first += B) {
        const int64_t last = std::min(m, first + B);
        trainer.step(1, [&](int64_t, nk::lm::Workspace& ws, nk::lm::TokenBatch& batch) {
          tokens.clear(), targets.clear(), rows.clear(), offsets.assign(1, 0);
          for (int64_t k = first; k < last; ++k) {
            const auto& s = samples[static_cast<size_t>(order[static_cast<size_t>(k)])];
            const int64_t begin = static_cast<int64_t>(tokens.size());
            tokens.insert(tokens.end(), prefix.begin(), prefix.end());
            tokens.insert(tokens.end(), s.begin(), s.end());
            offsets.push_back(static_cast<int64_t>(tokens.size()));
            for (int64_t t = P; t < W; ++t) rows.push_back(begin + t - 1), targets.push_back(tokens[static_cast<size_t>(begin + t)]);
          }
          weights.assign(rows.size(), 1.0f / static_cast<float>(rows.size()));
          batch = {tokens, offsets};
          trainer.model().forward(batch, ws);
          nk::lm::Target target;
          target.token = targets.data();
          const double loss = nk::lm::loss_and_grad(nk::lm::Divergence::cross_entropy, ws.logits(), ws.logit_rows(),
                                                    w.config().vocab, target, {rows, weights}, nullptr, ws.dlogits());
          return std::pair<double, int64_t>{loss, batch.rows()};
        });
      }
    }
  }
};

/// A method's current model q: the prior's network with a bias (bias
/// learner), or its own fine-tuned copy of the weights (full learner).
struct Fitted {
  std::unique_ptr<nk::lm::ParameterStore> own;
  Proposal q;
  explicit Fitted(const Setting& s) : q(s.prior_proposal()) {}
  /// Fits q to the samples; returns the bias learner's precision (NaN for full).
  double fit(const Setting& s, const Strings& samples, int64_t group, const nk::Rng& rng) {
    if (s.o->learner == "bias") {
      return s.fit_bias(q.bias, samples, group);
    } else {
      if (!own) own = std::make_unique<nk::lm::ParameterStore>(s.prior.weights), q.weights = own.get();
      s.fine_tune(*own, samples, rng);
    }
    return NAN;
  }
};

/// What one stage (or SIR's single step) leaves.
struct Stage {
  double T = 0;
  Strings samples;
  std::vector<double> costs, log_prior;
  int64_t evals = 0;
  double mean_cost = 0, acceptance = NAN, coverage = NAN;
  double elite_mean_cost = NAN, threshold = NAN, population_mean_cost = NAN;
  // The fitted model, measured from kl_samples draws.
  double kl = NAN, kl_se = NAN, q_mean_cost = NAN, q_mean_cost_se = NAN;
  double kl_target = NAN;  ///< KL(q || pi_T) = KL(q || L) + T E_q[d] + log Z(T), log Z from the reference
  double bias_l2 = NAN;    ///< the bias learner's precision (chosen by cross-validation with --bias-l2 cv)
};

/// KL(q || L) and E_q[d] from o.kl_samples draws of q.
void measure(Setting& s, const Proposal& q, uint64_t seed, double T, Stage& st) {
  if (s.o->kl_samples <= 0) return;
  const Strings draws = s.draw(q, s.o->kl_samples, seed);
  std::vector<double> lq, lp;
  s.score(q, draws, lq, lp);
  std::vector<double> diff(draws.size());
  for (size_t j = 0; j < draws.size(); ++j) diff[j] = lq[j] - lp[j];
  st.kl = mean_of(diff), st.kl_se = se_of(diff);
  const std::vector<double> d = s.costs(draws, true);
  st.q_mean_cost = mean_of(d), st.q_mean_cost_se = se_of(d);
  if (!s.reference.empty()) st.kl_target = st.kl + T * st.q_mean_cost + importance_estimate(s.reference, T).log_z;
}

std::vector<Stage> run_aldrift_lm(Setting& s, Fitted& f, const nk::Rng& rng, nk::Progress& progress,
                                  int64_t& done) {
  const LmOptions& o = *s.o;
  std::vector<Stage> stages;
  const int64_t per_chain = o.steps + 1;
  for (int i = 0; i < o.stages; ++i) {
    const nk::Rng r = rng.split(static_cast<uint64_t>(i));
    Stage st;
    st.T = o.T * (i + 1) / o.stages;
    const int64_t before = s.evals;
    // All proposals at once: chain c starts from draw c (steps + 1) and proposes the next 'steps'.
    const Strings draws = s.draw(f.q, o.chains * per_chain, r.split(0)());
    std::vector<double> lq, lp;
    s.score(f.q, draws, lq, lp);
    const std::vector<double> d = s.costs(draws, false);
    // log importance weight of pi_{T_i} against q (up to the constant).
    std::vector<double> lw(draws.size());
    for (size_t j = 0; j < draws.size(); ++j) lw[j] = lp[j] - st.T * d[j] - lq[j];
    const double top = *std::max_element(lw.begin(), lw.end());
    double mean_w = 0;
    for (const double x : lw) mean_w += std::exp(x - top);
    mean_w /= static_cast<double>(lw.size());
    st.coverage = 1.0 / mean_w;  // max_j w_j / mean_j w_j over the stage's draws
    int64_t accepted = 0;
    for (int64_t c = 0; c < o.chains; ++c) {
      nk::Rng u = r.split(1).split(static_cast<uint64_t>(c));
      size_t state = static_cast<size_t>(c * per_chain);
      for (int m = 1; m <= o.steps; ++m) {
        const size_t proposal = static_cast<size_t>(c * per_chain + m);
        if (std::log(u.uniform()) < lw[proposal] - lw[state]) state = proposal, ++accepted;
        if (m > o.burn_in) {
          st.samples.push_back(draws[state]);
          st.costs.push_back(d[state]);
          st.log_prior.push_back(lp[state]);
        }
      }
    }
    st.acceptance = static_cast<double>(accepted) / static_cast<double>(o.chains * o.steps);
    st.mean_cost = mean_of(st.costs);
    st.evals = s.evals - before;
    st.bias_l2 = f.fit(s, st.samples, std::max(1, o.steps - o.burn_in), r.split(2));
    measure(s, f.q, r.split(3)(), st.T, st);
    progress.update(++done);
    spdlog::info("aldrift stage {}/{}: T {:.4g}, acceptance {:.3f}, coverage {:.3g}, mean cost {:.4f}; fit: KL(q||L) {:.4f}, "
                 "E_q[d] {:.4f}, KL(q||pi_T_i) {:.4f}",
                 i + 1, o.stages, st.T, st.acceptance, st.coverage, st.mean_cost, st.kl, st.q_mean_cost, st.kl_target);
    stages.push_back(std::move(st));
  }
  return stages;
}

std::vector<Stage> run_cem_lm(Setting& s, Fitted& f, const nk::Rng& rng, nk::Progress& progress,
                              int64_t& done) {
  const LmOptions& o = *s.o;
  std::vector<Stage> stages;
  const int64_t population = o.chains * (o.steps + 1);
  const int64_t elites = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(o.elite * static_cast<double>(population))));
  for (int i = 0; i < o.stages; ++i) {
    const nk::Rng r = rng.split(static_cast<uint64_t>(i));
    Stage st;
    const int64_t before = s.evals;
    const Strings draws = s.draw(f.q, population, r.split(0)());
    const std::vector<double> d = s.costs(draws, false);
    std::vector<size_t> order(draws.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return d[a] < d[b]; });
    std::vector<double> lq, lp;
    s.score(f.q, draws, lq, lp);
    for (int64_t k = 0; k < elites; ++k) {
      const size_t j = order[static_cast<size_t>(k)];
      st.samples.push_back(draws[j]);
      st.costs.push_back(d[j]);
      st.log_prior.push_back(lp[j]);
    }
    st.population_mean_cost = mean_of(d);
    st.elite_mean_cost = st.mean_cost = mean_of(st.costs);
    st.threshold = st.costs.back();
    st.evals = s.evals - before;
    st.bias_l2 = f.fit(s, st.samples, 1, r.split(2));
    measure(s, f.q, r.split(3)(), o.T, st);
    progress.update(++done);
    spdlog::info("cem stage {}/{}: population mean cost {:.4f}, elite threshold {:.4f}; fit: KL(q||L) {:.4f}, E_q[d] {:.4f}", i + 1,
                 o.stages, st.population_mean_cost, st.threshold, st.kl, st.q_mean_cost);
    stages.push_back(std::move(st));
  }
  return stages;
}

/// SIR: 'budget' prior draws weighted by exp(-T d), 'keep' kept by systematic resampling.
Stage run_sir_lm(Setting& s, int64_t budget, int64_t keep, const nk::Rng& rng, IsEstimate& is) {
  const LmOptions& o = *s.o;
  Stage st;
  st.T = o.T;
  const int64_t before = s.evals;
  const Strings draws = s.draw(s.prior_proposal(), budget, rng.split(0)());
  const std::vector<double> d = s.costs(draws, false);
  std::vector<double> lq, lp;
  s.score(s.prior_proposal(), draws, lq, lp);
  is = importance_estimate(d, o.T);
  const double dmin = *std::min_element(d.begin(), d.end());
  std::vector<double> cum(d.size());
  double total = 0;
  for (size_t j = 0; j < d.size(); ++j) cum[j] = total += std::exp(-o.T * (d[j] - dmin));
  nk::Rng u = rng.split(1);
  const double start = u.uniform();
  size_t j = 0;
  for (int64_t k = 0; k < keep; ++k) {
    const double target = (static_cast<double>(k) + start) / static_cast<double>(keep) * total;
    while (j + 1 < cum.size() && cum[j] <= target) ++j;
    st.samples.push_back(draws[j]);
    st.costs.push_back(d[j]);
    st.log_prior.push_back(lp[j]);
  }
  st.mean_cost = mean_of(st.costs);
  st.kl = is.kl, st.kl_se = is.kl_se;
  st.evals = s.evals - before;
  return st;
}

void write_stage(nk::h5::Writer& out, const Setting& s, const std::string& g, const Stage& st) {
  const int64_t m = static_cast<int64_t>(st.samples.size()), L = s.o->length;
  std::vector<int32_t> flat;
  flat.reserve(static_cast<size_t>(m * L));
  for (const auto& x : st.samples) flat.insert(flat.end(), x.begin(), x.end());
  out.write(g + "/tokens", flat.data(), {m, L}, "M,L");
  out.write(g + "/costs", st.costs.data(), {m}, "M");
  out.write(g + "/log_prior", st.log_prior.data(), {m}, "M", "nats");
  out.write_strings(g + "/text", s.texts(st.samples), "M");
  out.attr(g, "T", st.T);
  out.attr(g, "evals", st.evals);
  out.attr(g, "mean_cost", st.mean_cost);
  const auto put = [&](const char* name, double v) {
    if (!std::isnan(v)) out.attr(g, name, v);
  };
  put("acceptance", st.acceptance);
  put("coverage", st.coverage);
  put("elite_mean_cost", st.elite_mean_cost);
  put("threshold", st.threshold);
  put("population_mean_cost", st.population_mean_cost);
  put("kl", st.kl);
  put("kl_se", st.kl_se);
  put("q_mean_cost", st.q_mean_cost);
  put("q_mean_cost_se", st.q_mean_cost_se);
  put("kl_target", st.kl_target);
  put("bias_l2", st.bias_l2);
}

std::string stage_name(const std::string& method, size_t i) {
  char name[32];
  std::snprintf(name, sizeof name, "/stages/%03zu", i);
  return "/" + method + name;
}

/// A staged method's stages, final model and summary attributes under /method.
void write_method(nk::h5::Writer& out, const Setting& s, const std::string& method, const std::vector<Stage>& st,
                  const Fitted& f, int64_t evals) {
  for (size_t i = 0; i < st.size(); ++i) write_stage(out, s, stage_name(method, i), st[i]);
  const std::string g = "/" + method;
  if (!f.q.bias.empty()) out.write(g + "/bias", f.q.bias.data(), {s.vocab()}, "V");
  out.attr(g, "evals", evals);
  out.attr(g, "mean_cost", st.back().mean_cost);
  if (!std::isnan(st.back().kl)) {
    out.attr(g, "kl", st.back().kl);
    out.attr(g, "kl_se", st.back().kl_se);
    out.attr(g, "q_mean_cost", st.back().q_mean_cost);
  }
}

}  // namespace

void lm(const LmOptions& o, const nk::RunEnv& env) {
  if (o.burn_in >= o.steps)
    throw nk::usage_error("lm: --burn-in " + std::to_string(o.burn_in) + " leaves no samples of --steps " + std::to_string(o.steps));
  if (o.methods.empty()) throw nk::usage_error("lm: --methods names none");
  if (!o.save_model.empty() && o.learner != "full")
    throw nk::usage_error("lm: --save-model writes a fine-tuned network: it needs --learner full (the bias learner's adapter is /aldrift/bias)");
  const auto has = [&](const char* m) { return std::find(o.methods.begin(), o.methods.end(), m) != o.methods.end(); };
  const TextCost cost = TextCost::parse(o.cost, o.wordnet_root);
  nk::h5::Writer out(o.output, kLmSchema, o.no_clobber);
  Setting s{.prior = nk::lm::load_checkpoint(o.prior), .prefix = {}, .cost = &cost, .o = &o, .evals = 0, .measure_evals = 0, .reference = {}};
  const nk::lm::Config& c = s.prior.weights.config();
  if (c.mode != nk::lm::Mode::causal)
    throw nk::usage_error("lm: --prior " + o.prior + " is a " + nk::lm::mode_name(c.mode) + " model; ALDRIFT's strings need a causal one");
  if (!s.prior.tokenizer) throw nk::usage_error("lm: --prior " + o.prior + " has no tokenizer (costs read the strings as text)");
  s.prefix.push_back(s.tok().bos());
  for (const int32_t t : s.tok().encode(o.prompt)) s.prefix.push_back(t);
  if (s.width() > c.max_seq)
    throw nk::usage_error("lm: the prompt (" + std::to_string(s.prefix.size()) + " tokens with BOS) and --length " +
                          std::to_string(o.length) + " pass the model's context of " + std::to_string(c.max_seq));
  const nk::Rng rng(env.seed);
  const int64_t budget = static_cast<int64_t>(o.stages) * o.chains * (o.steps + 1);
  const int64_t keep = o.chains * (o.steps - o.burn_in);
  spdlog::info("lm: {} ({} parameters), cost {}, T {}, {} stages x {} chains x {} moves: {} cost calls per method", o.prior,
               c.parameter_count(), o.cost, o.T, o.stages, o.chains, o.steps, budget);
  int64_t done = 0;
  const int64_t work = (o.reference > 0) + (has("aldrift") ? o.stages : 0) + (has("cem") ? o.stages : 0) + has("sir") + 1;
  nk::Progress progress("lm", work);

  // The prior itself: E_L[d] (KL 0).
  Stage prior_stage;
  measure(s, s.prior_proposal(), rng.split(90)(), 0.0, prior_stage);
  progress.update(++done);
  if (o.kl_samples > 0) {
    out.attr("/", "prior_mean_cost", prior_stage.q_mean_cost);
    out.attr("/", "prior_mean_cost_se", prior_stage.q_mean_cost_se);
    out.attr("/", "prior_kl", prior_stage.kl);
  }

  if (o.reference > 0) {
    std::vector<double> d;
    d.reserve(static_cast<size_t>(o.reference));
    const int64_t chunk = 4096;
    for (int64_t first = 0; first < o.reference; first += chunk) {
      const int64_t m = std::min(chunk, o.reference - first);
      const std::vector<double> dc = s.costs(s.draw(s.prior_proposal(), m, rng.split(91).split(static_cast<uint64_t>(first / chunk))()), true);
      d.insert(d.end(), dc.begin(), dc.end());
    }
    const IsEstimate ref = importance_estimate(d, o.T);
    s.reference = d;
    out.write("/reference/costs", d.data(), {o.reference}, "N");
    out.attr("/reference", "draws", o.reference);
    out.attr("/reference", "mean_cost", ref.mean_cost);
    out.attr("/reference", "mean_cost_se", ref.mean_cost_se);
    out.attr("/reference", "kl", ref.kl);
    out.attr("/reference", "kl_se", ref.kl_se);
    out.attr("/reference", "log_z", ref.log_z);
    out.attr("/reference", "ess", ref.ess);
    out.attr("/reference", "prior_mean_cost", mean_of(d));
    progress.update(++done);
    spdlog::info("lm: reference from {} prior draws: E_pi[d] {:.4f} +- {:.4f}, KL(pi||L) {:.4f} +- {:.4f} (ESS {:.0f}); E_L[d] {:.4f}",
                 o.reference, ref.mean_cost, ref.mean_cost_se, ref.kl, ref.kl_se, ref.ess, mean_of(d));
  }

  if (has("aldrift")) {
    Fitted f(s);
    const int64_t before = s.evals;
    const std::vector<Stage> st = run_aldrift_lm(s, f, rng.split(1), progress, done);
    write_method(out, s, "aldrift", st, f, s.evals - before);
    if (!o.save_model.empty()) nk::lm::save_checkpoint(o.save_model, *f.q.weights, &s.tok(), nullptr, nk::lm::StoreAs::f32);
  }
  if (has("sir")) {
    IsEstimate is;
    const int64_t before = s.evals;
    const Stage st = run_sir_lm(s, budget, keep, rng.split(2), is);
    write_stage(out, s, "/sir", st);
    out.attr("/sir", "ess", is.ess);
    out.attr("/sir", "is_mean_cost", is.mean_cost);
    std::vector<std::vector<int32_t>> distinct = st.samples;
    std::sort(distinct.begin(), distinct.end());
    out.attr("/sir", "distinct", static_cast<int64_t>(std::unique(distinct.begin(), distinct.end()) - distinct.begin()));
    progress.update(++done);
    spdlog::info("sir: {} prior draws, ESS {:.1f}, resampled mean cost {:.4f}, IS KL {:.4f}", s.evals - before, is.ess,
                 st.mean_cost, is.kl);
  }
  if (has("cem")) {
    Fitted f(s);
    const int64_t before = s.evals;
    const std::vector<Stage> st = run_cem_lm(s, f, rng.split(3), progress, done);
    write_method(out, s, "cem", st, f, s.evals - before);
  }
  progress.finish();
  out.attr("/", "prior", o.prior);
  out.attr("/", "cost", o.cost);
  out.attr("/", "learner", o.learner);
  if (o.bias_l2_cv) {
    out.attr("/", "bias_l2", std::string("cv"));
    out.write("/bias_l2_grid", o.bias_l2_grid.data(), {static_cast<int64_t>(o.bias_l2_grid.size())}, "G");
    out.attr("/", "bias_folds", int64_t{o.bias_folds});
  } else {
    out.attr("/", "bias_l2", o.bias_l2);
  }
  out.attr("/", "prompt", o.prompt);
  out.attr("/", "T", o.T);
  out.attr("/", "stages", int64_t{o.stages});
  out.attr("/", "chains", o.chains);
  out.attr("/", "steps", int64_t{o.steps});
  out.attr("/", "burn_in", int64_t{o.burn_in});
  out.attr("/", "length", o.length);
  out.attr("/", "fit_epochs", int64_t{o.fit_epochs});
  out.attr("/", "fit_lr", o.fit_lr);
  out.attr("/", "budget", budget);
  out.attr("/", "measure_evals", s.measure_evals);
  out.commit();
}

}  // namespace ald
