// generate.cpp - the sampler, batched causal decoding over the KV cache, and
// LLaDA's masked-diffusion sampler.
#include "nk/lm/generate.hpp"

#include "nk/lm/loss.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <string>

#include "nk/error.hpp"
#include "nk/lm/loss.hpp"
#include "nk/rng.hpp"

namespace nk::lm {

namespace {

/// The largest logit's id (ties to the lower id), never 'skip'.
int32_t argmax(const float* z, int64_t V, int64_t skip = -1) {
  int64_t best = skip == 0 ? 1 : 0;
  for (int64_t i = best + 1; i < V; ++i)
    if (i != skip && z[i] > z[best]) best = i;
  return static_cast<int32_t>(best);
}

}  // namespace

int32_t sample(const float* logits, int64_t V, const SamplerOptions& o, double u) {
  if (o.greedy) return argmax(logits, V);
  if (!(o.temperature > 0)) throw usage_error("sampler: temperature must be > 0 (or use greedy)");
  if (!(o.top_p > 0 && o.top_p <= 1)) throw usage_error("sampler: top-p must be in (0, 1]");
  thread_local std::vector<int32_t> order;
  thread_local std::vector<double> prob;
  order.resize(static_cast<size_t>(V));
  prob.resize(static_cast<size_t>(V));
  std::iota(order.begin(), order.end(), 0);
  const int64_t k = o.top_k > 0 ? std::min<int64_t>(o.top_k, V) : V;
  const auto before = [logits](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  if (k < V || o.top_p < 1) std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
  const double best = *std::max_element(logits, logits + V);
  double total = 0;
  for (int64_t j = 0; j < k; ++j) {
    prob[static_cast<size_t>(j)] = std::exp((static_cast<double>(logits[order[static_cast<size_t>(j)]]) - best) / o.temperature);
    total += prob[static_cast<size_t>(j)];
  }
  int64_t kept = k;
  if (o.top_p < 1) {  // the smallest prefix whose mass reaches top_p (at least one token)
    double cum = 0;
    for (int64_t j = 0; j < k; ++j) {
      cum += prob[static_cast<size_t>(j)] / total;
      if (cum >= o.top_p) {
        kept = j + 1;
        break;
      }
    }
    total = 0;
    for (int64_t j = 0; j < kept; ++j) total += prob[static_cast<size_t>(j)];
  }
  double target = u * total, cum = 0;
  for (int64_t j = 0; j < kept; ++j) {
    cum += prob[static_cast<size_t>(j)];
    if (target < cum) return order[static_cast<size_t>(j)];
  }
  return order[static_cast<size_t>(kept - 1)];
}

std::vector<std::vector<int32_t>> generate_causal(const Model& model, const std::vector<std::vector<int32_t>>& prompts,
                                                  const GenerateOptions& o) {
  const Config& c = model.config();
  if (c.mode != Mode::causal) throw usage_error("generate: a diffusion model decodes with sample_diffusion, not causally");
  if (o.max_new < 1) throw usage_error("generate: max_new must be at least 1");
  if (o.batch < 1) throw usage_error("generate: batch must be at least 1");
  if (!o.logit_bias.empty() && static_cast<int64_t>(o.logit_bias.size()) != c.vocab)
    throw usage_error("generate: the logit bias has " + std::to_string(o.logit_bias.size()) + " entries for a vocabulary of " +
                      std::to_string(c.vocab));
  int64_t longest = 0;
  for (size_t b = 0; b < prompts.size(); ++b) {
    const int64_t n = static_cast<int64_t>(prompts[b].size());
    if (n == 0) throw usage_error("generate: prompt " + std::to_string(b) + " is empty (give at least one token, e.g. BOS)");
    if (n + o.max_new > c.max_seq)
      throw usage_error("generate: prompt " + std::to_string(b) + " has " + std::to_string(n) + " tokens; with " +
                        std::to_string(o.max_new) + " new ones that passes the context of " + std::to_string(c.max_seq));
    longest = std::max(longest, n);
  }
  std::vector<std::vector<int32_t>> out(prompts.size());
  if (prompts.empty()) return out;
  const int64_t chunk = std::min<int64_t>(o.batch, static_cast<int64_t>(prompts.size()));
  KvCache cache(c, {o.page_tokens, 0, chunk});
  Workspace ws(c, {chunk * longest, longest, false});
  const Rng root(o.seed);
  std::vector<int32_t> tokens, slots;
  std::vector<int64_t> offsets;
  for (size_t first = 0; first < prompts.size(); first += static_cast<size_t>(chunk)) {
    const size_t last = std::min(prompts.size(), first + static_cast<size_t>(chunk));
    std::vector<size_t> active;
    tokens.clear(), slots.clear(), offsets.assign(1, 0);
    for (size_t b = first; b < last; ++b) {
      tokens.insert(tokens.end(), prompts[b].begin(), prompts[b].end());
      offsets.push_back(static_cast<int64_t>(tokens.size()));
      slots.push_back(o.attention ? static_cast<int32_t>(b - first) : cache.open());
      if (o.attention) o.attention->reset(slots.back());
      active.push_back(b);
    }
    std::vector<int32_t> slot_of(prompts.size(), -1);
    for (size_t i = 0; i < active.size(); ++i) slot_of[active[i]] = slots[i];
    while (!active.empty()) {
      ForwardOptions fo{LogitRows::last, o.attention ? nullptr : &cache};
      fo.attention = o.attention;
      model.forward({tokens, offsets, {}, slots}, ws, fo);
      std::vector<size_t> still;
      for (size_t i = 0; i < active.size(); ++i) {
        const size_t b = active[i];
        const double u = root.split(b).split(out[b].size()).uniform();
        float* row = ws.logits() + static_cast<int64_t>(i) * c.vocab;
        for (size_t v = 0; v < o.logit_bias.size(); ++v) row[v] += o.logit_bias[v];
        if (o.on_logits) o.on_logits(b, static_cast<int64_t>(out[b].size()), row);
        const int32_t t = sample(row, c.vocab, o.sampler, u);
        out[b].push_back(t);
        if (t != o.eos && static_cast<int64_t>(out[b].size()) < o.max_new) still.push_back(b);
      }
      active = still;
      tokens.clear(), slots.clear(), offsets.assign(1, 0);
      for (size_t b : active) {
        tokens.push_back(out[b].back());
        offsets.push_back(static_cast<int64_t>(tokens.size()));
        slots.push_back(slot_of[b]);
      }
    }
    if (!o.attention)
      for (size_t b = first; b < last; ++b) cache.close(slot_of[b]);
  }
  return out;
}

std::vector<std::vector<double>> divergence_from_dense(const Model& model, const std::vector<std::vector<int32_t>>& prompts,
                                                       const std::vector<std::vector<int32_t>>& continuations,
                                                       const std::vector<std::vector<float>>& logprobs) {
  const Config& c = model.config();
  const int64_t V = c.vocab;
  if (continuations.size() != prompts.size() || logprobs.size() != prompts.size())
    throw usage_error("divergence: prompts, continuations and log-probabilities differ in count");
  std::vector<std::vector<double>> kl(prompts.size());
  std::vector<float> dense(static_cast<size_t>(V));
  for (size_t b = 0; b < prompts.size(); ++b) {
    const auto P = static_cast<int64_t>(prompts[b].size()), N = static_cast<int64_t>(continuations[b].size());
    if (N == 0) continue;
    if (static_cast<int64_t>(logprobs[b].size()) != N * V)
      throw usage_error("divergence: row " + std::to_string(b) + " has log-probabilities for " + std::to_string(logprobs[b].size() / static_cast<size_t>(V)) +
                        " steps, not " + std::to_string(N));
    // The last new token predicts nothing we kept: score prompt + N - 1 tokens.
    std::vector<int32_t> row(prompts[b]);
    row.insert(row.end(), continuations[b].begin(), continuations[b].end() - 1);
    const auto L = static_cast<int64_t>(row.size());
    Workspace ws(c, {L, L, false});
    const std::vector<int64_t> offsets{0, L};
    model.forward({row, offsets}, ws);
    for (int64_t t = 0; t < N; ++t) {
      log_softmax_rows(ws.logits() + (P - 1 + t) * V, 1, V, dense.data());
      const float* mine = logprobs[b].data() + t * V;
      double sum = 0;
      for (int64_t v = 0; v < V; ++v) {
        const double lp = dense[static_cast<size_t>(v)];
        if (lp > -80) sum += std::exp(lp) * (lp - static_cast<double>(mine[v]));
      }
      kl[b].push_back(std::max(0.0, sum));
    }
  }
  return kl;
}

std::vector<int64_t> transfer_counts(int64_t masked, int64_t steps) {
  std::vector<int64_t> counts(static_cast<size_t>(steps), masked / steps);
  for (int64_t i = 0; i < masked % steps; ++i) ++counts[static_cast<size_t>(i)];
  return counts;
}

std::vector<int32_t> sample_diffusion(const Model& model, const std::vector<int32_t>& prompt, const DiffusionOptions& o,
                                      const DiffusionStepHook& hook) {
  const Config& c = model.config();
  if (c.mode != Mode::diffusion) throw usage_error("diffusion sampling needs a diffusion model (this one is causal)");
  if (o.mask < 0 || o.mask >= c.vocab) throw usage_error("diffusion sampling: the [MASK] id is outside the vocabulary");
  if (o.gen_length < 1 || o.block < 1 || o.gen_length % o.block != 0)
    throw usage_error("diffusion sampling: the answer length (" + std::to_string(o.gen_length) +
                      ") must be a positive multiple of the block (" + std::to_string(o.block) + ")");
  const int64_t blocks = o.gen_length / o.block;
  if (o.steps < blocks || o.steps % blocks != 0)
    throw usage_error("diffusion sampling: steps (" + std::to_string(o.steps) + ") must be a multiple of the " +
                      std::to_string(blocks) + " blocks");
  const int64_t P = static_cast<int64_t>(prompt.size()), L = P + o.gen_length;
  if (L > c.max_seq)
    throw usage_error("diffusion sampling: prompt (" + std::to_string(P) + ") + answer (" + std::to_string(o.gen_length) +
                      ") passes the context of " + std::to_string(c.max_seq));
  if (o.temperature < 0) throw usage_error("diffusion sampling: temperature must be >= 0");
  std::vector<int32_t> x(prompt);
  x.resize(static_cast<size_t>(L), o.mask);
  const std::vector<int64_t> offsets{0, L};
  const std::vector<int32_t> slots{0};  // a backend's slot (it caches nothing here)
  Workspace ws(c, {L, L, false});
  if (o.shadow && !o.shadow_stats) throw usage_error("diffusion sampling: a shadow backend needs its stats");
  if (!o.reference.empty() && (static_cast<int64_t>(o.reference.size()) != o.gen_length || !o.reference_stats))
    throw usage_error("diffusion sampling: a reference answer needs " + std::to_string(o.gen_length) + " tokens (it has " +
                      std::to_string(o.reference.size()) + ") and its stats");
  std::optional<Workspace> shadow_ws;
  if (o.shadow) shadow_ws.emplace(c, WorkspaceLimits{L, L, false});
  const Rng root(o.seed);
  const int64_t per_block = o.steps / blocks;
  std::vector<int32_t> pred(static_cast<size_t>(L));
  std::vector<double> confidence(static_cast<size_t>(L));
  std::vector<int64_t> order;
  int64_t step = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t begin = P + b * o.block, end = begin + o.block;
    const std::vector<int64_t> counts = transfer_counts(o.block, per_block);
    for (int64_t i = 0; i < per_block; ++i, ++step) {
      ForwardOptions fo{.logits = LogitRows::all, .observer = o.observer, .step = step, .attention = o.attention};
      model.forward({x, offsets, {}, slots}, ws, fo);
      if (o.shadow) {
        ForwardOptions so{.logits = LogitRows::all, .step = step, .attention = o.shadow};
        model.forward({x, offsets, {}, slots}, *shadow_ws, so);
        for (int64_t p = 0; p < end; ++p) {
          if (x[static_cast<size_t>(p)] != o.mask) continue;
          const float* z = ws.logits() + p * c.vocab;
          const float* y = shadow_ws->logits() + p * c.vocab;
          o.shadow_stats->agreements += argmax(z, c.vocab, o.mask) == argmax(y, c.vocab, o.mask);
          ++o.shadow_stats->predictions;
          // KL over the vocabulary without [MASK] (never a prediction), in double.
          double mz = -std::numeric_limits<double>::infinity(), my = mz, sz = 0, sy = 0, cross = 0;
          for (int64_t v = 0; v < c.vocab; ++v)
            if (v != o.mask) mz = std::max(mz, static_cast<double>(z[v])), my = std::max(my, static_cast<double>(y[v]));
          for (int64_t v = 0; v < c.vocab; ++v)
            if (v != o.mask) sz += std::exp(z[v] - mz), sy += std::exp(y[v] - my);
          const double lz = mz + std::log(sz), ly = my + std::log(sy);
          for (int64_t v = 0; v < c.vocab; ++v)
            if (v != o.mask) {
              const double pz = std::exp(z[v] - lz);
              cross += pz * ((z[v] - lz) - (y[v] - ly));
            }
          o.shadow_stats->kl += std::max(0.0, cross);
        }
      }
      order.clear();
      for (int64_t p = 0; p < end; ++p) {
        if (x[static_cast<size_t>(p)] != o.mask) continue;
        const float* z = ws.logits() + p * c.vocab;
        // [MASK] itself is never a prediction (a trained model gives it ~0
        // probability; an untrained one must not "unmask" to it).
        int32_t best = argmax(z, c.vocab, o.mask);
        if (o.temperature > 0) {  // Gumbel-max: argmax of z / T + Gumbel noise
          Rng noise = root.split(static_cast<uint64_t>(step)).split(static_cast<uint64_t>(p));
          double top = -std::numeric_limits<double>::infinity();
          for (int64_t v = 0; v < c.vocab; ++v) {
            if (v == o.mask) {
              noise.uniform();  // one draw per id whatever the mask id, so streams line up
              continue;
            }
            const double g = static_cast<double>(z[v]) / o.temperature - std::log(-std::log(noise.uniform() + 1e-300));
            if (g > top) top = g, best = static_cast<int32_t>(v);
          }
        }
        pred[static_cast<size_t>(p)] = best;
        if (o.random_remasking) {
          confidence[static_cast<size_t>(p)] = root.split(static_cast<uint64_t>(step)).split(static_cast<uint64_t>(L + p)).uniform();
        } else {  // low-confidence remasking: keep the predictions the model is surest of
          double lse = 0, m = *std::max_element(z, z + c.vocab);
          for (int64_t v = 0; v < c.vocab; ++v)
            if (v != o.mask) lse += std::exp(static_cast<double>(z[v]) - m);
          confidence[static_cast<size_t>(p)] = std::exp(static_cast<double>(z[best]) - m) / lse;
        }
        order.push_back(p);
      }
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b2) {
        return confidence[static_cast<size_t>(a)] > confidence[static_cast<size_t>(b2)];
      });
      const int64_t take = std::min<int64_t>(counts[static_cast<size_t>(i)], static_cast<int64_t>(order.size()));
      for (int64_t j = 0; j < take; ++j) {
        const auto p = static_cast<size_t>(order[static_cast<size_t>(j)]);
        if (o.reference.empty()) {
          x[p] = pred[p];
        } else {
          const int32_t truth = o.reference[p - static_cast<size_t>(P)];
          ++o.reference_stats->committed;
          o.reference_stats->correct += pred[p] == truth;
          x[p] = truth;
        }
      }
      if (hook) hook(step, x);
    }
  }
  return x;
}

std::vector<double> diffusion_nll(const Model& model, const std::vector<std::vector<int32_t>>& rows,
                                  const std::vector<int64_t>& prompt_lengths, int32_t mask, int64_t samples, uint64_t seed,
                                  int64_t batch) {
  const Config& c = model.config();
  if (c.mode != Mode::diffusion) throw usage_error("diffusion likelihood: needs a diffusion model (this one is causal)");
  if (mask < 0 || mask >= c.vocab) throw usage_error("diffusion likelihood: the [MASK] id is outside the vocabulary");
  if (samples < 1 || batch < 1) throw usage_error("diffusion likelihood: samples and batch must be >= 1");
  if (prompt_lengths.size() != rows.size()) throw usage_error("diffusion likelihood: one prompt length per row");
  int64_t width = 0;
  for (size_t b = 0; b < rows.size(); ++b) {
    const int64_t n = static_cast<int64_t>(rows[b].size()), p = prompt_lengths[b];
    if (p < 0 || p >= n)
      throw usage_error("diffusion likelihood: row " + std::to_string(b) + " has " + std::to_string(n) + " tokens and a prompt of " +
                        std::to_string(p) + " (no answer to score)");
    if (n > c.max_seq)
      throw usage_error("diffusion likelihood: row " + std::to_string(b) + " passes the context of " + std::to_string(c.max_seq));
    width = std::max(width, n);
  }
  std::vector<double> nll(rows.size(), 0.0);
  if (rows.empty()) return nll;
  Workspace ws(c, {batch * width, width, false});
  const Rng root(seed);
  struct Draw {
    size_t row;
    double weight;                 // La / l
    std::vector<int64_t> masked;   // positions within the row
  };
  std::vector<Draw> draws;
  std::vector<int32_t> tokens;
  std::vector<int64_t> offsets;
  auto flush = [&] {
    if (draws.empty()) return;
    model.forward({tokens, offsets, {}}, ws, {LogitRows::all});
    for (size_t d = 0; d < draws.size(); ++d) {
      double ce = 0;
      for (int64_t pos : draws[d].masked) {
        const float* z = ws.logits() + (offsets[d] + pos) * c.vocab;
        double top = -std::numeric_limits<double>::infinity(), sum = 0;
        for (int64_t v = 0; v < c.vocab; ++v) top = std::max(top, static_cast<double>(z[v]));
        for (int64_t v = 0; v < c.vocab; ++v) sum += std::exp(static_cast<double>(z[v]) - top);
        ce += top + std::log(sum) - z[rows[draws[d].row][static_cast<size_t>(pos)]];
      }
      nll[draws[d].row] += draws[d].weight * ce / static_cast<double>(samples);
    }
    draws.clear(), tokens.clear(), offsets.assign(1, 0);
  };
  offsets.assign(1, 0);
  std::vector<int64_t> answer;
  for (size_t b = 0; b < rows.size(); ++b) {
    const int64_t p = prompt_lengths[b], La = static_cast<int64_t>(rows[b].size()) - p;
    for (int64_t k = 0; k < samples; ++k) {
      Rng rng = root.split(b).split(static_cast<uint64_t>(k));
      // Stratified mask counts: draw k takes l from the k-th of 'samples' equal slices of 1..La.
      const double u = (static_cast<double>(k) + rng.uniform()) / static_cast<double>(samples);
      const int64_t l = std::clamp<int64_t>(1 + static_cast<int64_t>(u * static_cast<double>(La)), 1, La);
      answer.resize(static_cast<size_t>(La));
      std::iota(answer.begin(), answer.end(), p);
      shuffle_prefix(answer, static_cast<size_t>(l), rng);
      Draw draw{b, static_cast<double>(La) / static_cast<double>(l), std::vector<int64_t>(answer.begin(), answer.begin() + l)};
      const size_t start = tokens.size();
      tokens.insert(tokens.end(), rows[b].begin(), rows[b].end());
      for (int64_t pos : draw.masked) tokens[start + static_cast<size_t>(pos)] = mask;
      offsets.push_back(static_cast<int64_t>(tokens.size()));
      draws.push_back(std::move(draw));
      if (static_cast<int64_t>(draws.size()) == batch) flush();
    }
  }
  flush();
  return nll;
}

}  // namespace nk::lm
