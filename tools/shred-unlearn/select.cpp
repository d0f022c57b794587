// select.cpp - SHRED's bottom-P selection and its top-K demoted targets.
#include "shred-unlearn/select.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "nk/error.hpp"
#include "nk/lm/loss.hpp"
#include "nk/rng.hpp"

namespace shred {

void parse_demote(const std::string& text, SelectConfig& c) {
  if (text == "min") {
    c.demote = Demote::min;
  } else if (text == "zero") {
    c.demote = Demote::zero;
  } else if (text.rfind("shift:", 0) == 0) {
    c.demote = Demote::shift;
    char* end = nullptr;
    c.shift = std::strtod(text.c_str() + 6, &end);
    if (end == text.c_str() + 6 || *end != '\0' || !std::isfinite(c.shift) || c.shift < 0)
      throw nk::usage_error("--demote shift:D needs a finite D >= 0, not '" + text.substr(6) + "'");
  } else {
    throw nk::usage_error("--demote must be min, shift:D or zero, not '" + text + "'");
  }
}

std::vector<int64_t> pick_positions(const std::vector<float>& logprob, int64_t answer_start, int64_t length,
                                    const SelectConfig& c, int64_t instance) {
  const int64_t first = answer_start + c.skip;
  if (first >= length)
    throw nk::Error(nk::Exit::input, "select: instance " + std::to_string(instance) + " has " +
                                         std::to_string(length - answer_start) + " answer tokens; --skip-tokens " +
                                         std::to_string(c.skip) + " leaves none to select");
  std::vector<int64_t> cand(static_cast<size_t>(length - first));
  std::iota(cand.begin(), cand.end(), first);
  if (c.pick == Pick::all) return cand;
  const int64_t n = static_cast<int64_t>(cand.size());
  const int64_t count = std::min<int64_t>(
      n, std::max<int64_t>(1, static_cast<int64_t>(std::floor(c.percent / 100.0 * static_cast<double>(n) + 0.5))));
  if (c.pick == Pick::random) {
    nk::Rng rng = nk::Rng(c.seed).split(static_cast<uint64_t>(instance));
    nk::shuffle_prefix(cand, static_cast<size_t>(count), rng);
    cand.resize(static_cast<size_t>(count));
    std::sort(cand.begin(), cand.end());
    return cand;
  }
  std::stable_sort(cand.begin(), cand.end(), [&](int64_t a, int64_t b) {
    return logprob[static_cast<size_t>(a)] < logprob[static_cast<size_t>(b)];
  });
  cand.resize(static_cast<size_t>(count));
  std::sort(cand.begin(), cand.end());
  return cand;
}

void demote_logits(const float* z, int64_t K, int64_t gold, const SelectConfig& c, float* out) {
  std::copy(z, z + K, out);
  switch (c.demote) {
    case Demote::min: {
      float lowest = std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < K; ++j)
        if (j != gold) lowest = std::min(lowest, z[j]);
      out[gold] = static_cast<float>(std::min(z[gold], lowest) - c.margin);
      break;
    }
    case Demote::shift:
      out[gold] = static_cast<float>(z[gold] - c.shift);
      break;
    case Demote::zero:
      out[gold] = -std::numeric_limits<float>::infinity();
      break;
  }
}

Selection select(const nk::lm::Model& model, const std::vector<Sequence>& seqs, const SelectConfig& c) {
  const nk::lm::Config& cfg = model.config();
  if (c.topk < 2 || c.topk > cfg.vocab)
    throw nk::Error(nk::Exit::input, "select: --topk " + std::to_string(c.topk) + " must be in 2.." +
                                         std::to_string(cfg.vocab) + " (the model's vocabulary)");
  if (!(c.percent > 0 && c.percent <= 100))
    throw nk::Error(nk::Exit::input, "select: --percent " + std::to_string(c.percent) + " must be in (0, 100]");
  Selection s;
  s.N = static_cast<int64_t>(seqs.size());
  s.K = c.topk;
  for (const Sequence& q : seqs) s.T = std::max(s.T, q.size());
  const int64_t N = s.N, T = s.T, K = s.K, V = cfg.vocab;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  s.tokens.assign(static_cast<size_t>(N * T), -1);
  s.answer_start.resize(static_cast<size_t>(N));
  s.logprob.assign(static_cast<size_t>(N * T), nan);
  s.forget_mask.assign(static_cast<size_t>(N * T), -1);
  s.support.assign(static_cast<size_t>(N * T * K), -1);
  s.support_logits.assign(static_cast<size_t>(N * T * K), 0.0f);
  s.target.assign(static_cast<size_t>(N * T * K), 0.0f);
  s.target_logits.assign(static_cast<size_t>(N * T * K), 0.0f);
  if (N == 0) return s;
  nk::lm::Workspace ws(cfg, {std::max<int64_t>(T, 2048), T, false});
  std::vector<float> lp, lsm(static_cast<size_t>(V));
  std::vector<int32_t> ids(static_cast<size_t>(K));
  std::vector<float> vals(static_cast<size_t>(K));
  double coverage_sum = 0;
  int64_t positions = 0;
  for (int64_t first = 0; first < N;) {
    Packed p;
    int64_t last = first;
    while (last < N && p.rows() + seqs[static_cast<size_t>(last)].size() <= ws.limits().max_tokens)
      p.add(seqs[static_cast<size_t>(last++)].tokens);
    const nk::lm::TokenBatch batch = p.batch();
    model.forward(batch, ws);
    lp.resize(static_cast<size_t>(p.rows()));
    nk::lm::next_token_logprob(ws.logits(), V, batch, lp.data());
    for (int64_t i = first; i < last; ++i) {
      const Sequence& q = seqs[static_cast<size_t>(i)];
      const int64_t base = p.offsets[static_cast<size_t>(i - first)], L = q.size();
      s.answer_start[static_cast<size_t>(i)] = q.answer_start;
      std::vector<float> row_lp(lp.begin() + base, lp.begin() + base + L);
      for (int64_t t = 0; t < L; ++t) {
        s.tokens[static_cast<size_t>(i * T + t)] = q.tokens[static_cast<size_t>(t)];
        if (t > 0) s.logprob[static_cast<size_t>(i * T + t)] = row_lp[static_cast<size_t>(t)];
        if (t > 0) s.forget_mask[static_cast<size_t>(i * T + t)] = 0;
      }
      for (int64_t t : pick_positions(row_lp, q.answer_start, L, c, i))
        s.forget_mask[static_cast<size_t>(i * T + t)] = 1;
      for (int64_t t = 1; t < L; ++t) {
        const float* logits = ws.logits() + (base + t - 1) * V;
        const int32_t gold = q.tokens[static_cast<size_t>(t)];
        nk::lm::top_k(logits, 1, V, K, ids.data(), vals.data(), &gold);
        const size_t at = static_cast<size_t>((i * T + t) * K);
        std::copy(ids.begin(), ids.end(), s.support.begin() + static_cast<std::ptrdiff_t>(at));
        std::copy(vals.begin(), vals.end(), s.support_logits.begin() + static_cast<std::ptrdiff_t>(at));
        const int64_t g = std::find(ids.begin(), ids.end(), gold) - ids.begin();
        float* tz = s.target_logits.data() + at;
        if (s.forget_mask[static_cast<size_t>(i * T + t)] == 1) {
          demote_logits(vals.data(), K, g, c, tz);
          ++s.forget_positions;
        } else {
          std::copy(vals.begin(), vals.end(), tz);
          ++s.benign_positions;
        }
        double best = -std::numeric_limits<double>::infinity(), z = 0;
        for (int64_t j = 0; j < K; ++j) best = std::max(best, static_cast<double>(tz[j]));
        for (int64_t j = 0; j < K; ++j) z += std::exp(static_cast<double>(tz[j]) - best);
        for (int64_t j = 0; j < K; ++j)
          s.target[at + static_cast<size_t>(j)] = static_cast<float>(std::exp(static_cast<double>(tz[j]) - best) / z);
        // The original's mass on S: the log-softmax of the whole row at S's ids.
        double mass = 0, lbest = -std::numeric_limits<double>::infinity(), lz = 0;
        for (int64_t v = 0; v < V; ++v) lbest = std::max(lbest, static_cast<double>(logits[v]));
        for (int64_t v = 0; v < V; ++v) lz += std::exp(static_cast<double>(logits[v]) - lbest);
        for (int64_t j = 0; j < K; ++j)
          mass += std::exp(static_cast<double>(vals[static_cast<size_t>(j)]) - lbest) / lz;
        coverage_sum += mass;
        s.coverage_min = std::min(s.coverage_min, mass);
        ++positions;
      }
    }
    first = last;
  }
  s.coverage_mean = positions ? coverage_sum / static_cast<double>(positions) : 0.0;
  return s;
}

}  // namespace shred
