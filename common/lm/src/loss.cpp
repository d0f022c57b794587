// loss.cpp - log-probabilities, top-K, and the divergences with their logit
// gradients. Every divergence is taken over "bins": the vocabulary itself
// (full), the K ids plus the rest (topk_rest) or the K ids renormalised
// (restricted). With P, Q the student's and target's bin probabilities and
// h_b = P_b dL/dP_b, the gradient with respect to the student's logits is
//   dz_i = h_b - P_b sum_c h_c          for the id i that is bin b, and
//   dz_i = p_i / P_rest (h_rest - P_rest sum_c h_c)  for an id in the rest bin,
// zero outside a restricted support. The h_b have closed forms that stay
// finite where P_b underflows (FKL: -Q_b; RKL: P_b (log P_b - log Q_b + 1);
// JSD: P_b log(P_b / M_b) / 2).
#include "nk/lm/loss.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "nk/error.hpp"
#include "nk/lm/layers.hpp"
#include "nk/lm/model.hpp"

namespace nk::lm {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// log sum exp of n floats, in double.
double log_sum_exp(const float* x, int64_t n) {
  double best = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < n; ++i) best = std::max(best, static_cast<double>(x[i]));
  if (!std::isfinite(best)) return best;
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(x[i]) - best);
  return best + std::log(sum);
}

/// p log(p / m) with 0 log 0 = 0, from logs.
double xlogratio(double logp, double logm) { return logp == -std::numeric_limits<double>::infinity() ? 0.0 : std::exp(logp) * (logp - logm); }

double log1m(double s) { return s >= 1 ? -std::numeric_limits<double>::infinity() : std::log1p(-s); }

/// The loss over bins and h_b = P_b dL/dP_b.
double bin_loss(Divergence div, const std::vector<double>& logP, const std::vector<double>& logQ, size_t bins,
                std::vector<double>& h) {
  double loss = 0;
  for (size_t b = 0; b < bins; ++b) {
    const double lp = logP[b], lq = logQ[b], P = std::exp(lp), Q = std::exp(lq);
    switch (div) {
      case Divergence::forward_kl:
        loss += xlogratio(lq, lp);
        h[b] = -Q;
        break;
      case Divergence::reverse_kl:
        loss += xlogratio(lp, lq);
        h[b] = P == 0 ? 0.0 : P * (lp - lq + 1);
        break;
      case Divergence::jsd: {
        const double M = 0.5 * (P + Q), lm = std::log(M);
        loss += 0.5 * (xlogratio(lq, lm) + xlogratio(lp, lm));
        h[b] = P == 0 ? 0.0 : 0.5 * P * (lp - lm);
        break;
      }
      case Divergence::cross_entropy:
        break;
    }
  }
  return loss;
}

const char* divergence_name(Divergence d) {
  switch (d) {
    case Divergence::cross_entropy: return "cross-entropy";
    case Divergence::forward_kl: return "forward KL";
    case Divergence::reverse_kl: return "reverse KL";
    case Divergence::jsd: return "JSD";
  }
  return "?";
}

struct RowScratch {
  std::vector<double> lp, logP, logQ, h;
  std::vector<float> e;  ///< exp(z - max z), the cross-entropy path
  std::vector<char> seen;
  explicit RowScratch(int64_t V)
      : lp(static_cast<size_t>(V)), logP(static_cast<size_t>(V) + 1), logQ(static_cast<size_t>(V) + 1),
        h(static_cast<size_t>(V) + 1), e(static_cast<size_t>(V)), seen(static_cast<size_t>(V), 0) {}
};

/// Cross-entropy of one row against token y, the hot path of pretraining:
/// exp(z - max) in float through Eigen's vectorised exp (libm's scalar double
/// exp over the vocabulary was a tenth of a training step), the sum and the
/// loss in double. Returns -log p(y); adds w (p - onehot(y)) into drow.
double cross_entropy_row(const float* z, int64_t V, int32_t y, double w, float* drow, RowScratch& s) {
  float* e = s.e.data();
  float best = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < V; ++i) best = std::max(best, z[i]);
  for (int64_t i = 0; i < V; ++i) e[i] = z[i] - best;
  detail::exp_inplace(e, V);
  double sum = 0;  // in index order: the same bits wherever the row lives
  for (int64_t i = 0; i < V; ++i) sum += static_cast<double>(e[i]);
  if (drow) {
    const auto scale = static_cast<float>(w / sum);
    for (int64_t i = 0; i < V; ++i) drow[i] += scale * e[i];
    drow[y] -= static_cast<float>(w);
  }
  return static_cast<double>(best) + std::log(sum) - static_cast<double>(z[y]);
}

/// One loss row: returns loss_r; writes w * dz into drow when not null.
double loss_row(Divergence div, const float* z, int64_t V, const Target& t, int64_t r, double w, float* drow,
                RowScratch& s) {
  if (t.kind == Target::Kind::token) {
    const int32_t y = t.token[r];
    if (y < 0 || y >= V) throw usage_error("loss: target token " + std::to_string(y) + " outside the vocabulary");
    return cross_entropy_row(z, V, y, w, drow, s);
  }
  const double lse = log_sum_exp(z, V);
  for (int64_t i = 0; i < V; ++i) s.lp[static_cast<size_t>(i)] = static_cast<double>(z[i]) - lse;
  const auto add = [&](int64_t i, double g) {
    if (drow) drow[i] += static_cast<float>(w * g);
  };
  if (t.kind == Target::Kind::full) {
    const float* q = t.logits + r * t.stride;
    const double lq = log_sum_exp(q, V);
    for (int64_t i = 0; i < V; ++i) {
      s.logP[static_cast<size_t>(i)] = s.lp[static_cast<size_t>(i)];
      s.logQ[static_cast<size_t>(i)] = static_cast<double>(q[i]) - lq;
    }
    const double loss = bin_loss(div, s.logP, s.logQ, static_cast<size_t>(V), s.h);
    if (drow) {
      const double sum_h = std::accumulate(s.h.begin(), s.h.begin() + V, 0.0);
      for (int64_t i = 0; i < V; ++i) add(i, s.h[static_cast<size_t>(i)] - std::exp(s.logP[static_cast<size_t>(i)]) * sum_h);
    }
    return loss;
  }
  // topk_rest and restricted: K bins from the ids (plus the rest).
  const int64_t K = t.k;
  const int32_t* ids = t.ids + r * K;
  const float* vals = t.values + r * K;
  for (int64_t j = 0; j < K; ++j) {
    const int32_t id = ids[j];
    if (id < 0 || id >= V) throw usage_error("loss: target id " + std::to_string(id) + " outside the vocabulary");
    if (s.seen[static_cast<size_t>(id)]) {
      for (int64_t m = 0; m < j; ++m) s.seen[static_cast<size_t>(ids[m])] = 0;
      throw usage_error("loss: target row " + std::to_string(r) + " names id " + std::to_string(id) + " twice");
    }
    s.seen[static_cast<size_t>(id)] = 1;
  }
  for (int64_t j = 0; j < K; ++j) s.seen[static_cast<size_t>(ids[j])] = 0;
  double loss = 0;
  if (t.kind == Target::Kind::topk_rest) {
    double sp = 0, sq = 0;
    for (int64_t j = 0; j < K; ++j) {
      s.logP[static_cast<size_t>(j)] = s.lp[static_cast<size_t>(ids[j])];
      s.logQ[static_cast<size_t>(j)] = vals[j];
      sp += std::exp(s.logP[static_cast<size_t>(j)]);
      sq += std::exp(static_cast<double>(vals[j]));
    }
    s.logP[static_cast<size_t>(K)] = log1m(sp);
    s.logQ[static_cast<size_t>(K)] = log1m(sq);
    loss = bin_loss(div, s.logP, s.logQ, static_cast<size_t>(K + 1), s.h);
    if (drow) {
      const double sum_h = std::accumulate(s.h.begin(), s.h.begin() + K + 1, 0.0);
      const double P_rest = std::exp(s.logP[static_cast<size_t>(K)]);
      const double rest = P_rest > 0 ? (s.h[static_cast<size_t>(K)] - P_rest * sum_h) / P_rest : 0.0;
      for (int64_t j = 0; j < K; ++j) s.seen[static_cast<size_t>(ids[j])] = 1;
      for (int64_t i = 0; i < V; ++i)
        if (!s.seen[static_cast<size_t>(i)]) add(i, std::exp(s.lp[static_cast<size_t>(i)]) * rest);
      for (int64_t j = 0; j < K; ++j) {
        s.seen[static_cast<size_t>(ids[j])] = 0;
        add(ids[j], s.h[static_cast<size_t>(j)] - std::exp(s.logP[static_cast<size_t>(j)]) * sum_h);
      }
    }
    return loss;
  }
  // restricted
  double best_p = -std::numeric_limits<double>::infinity(), best_q = best_p;
  for (int64_t j = 0; j < K; ++j) {
    best_p = std::max(best_p, s.lp[static_cast<size_t>(ids[j])]);
    best_q = std::max(best_q, static_cast<double>(vals[j]));
  }
  double zp = 0, zq = 0;
  for (int64_t j = 0; j < K; ++j) {
    zp += std::exp(s.lp[static_cast<size_t>(ids[j])] - best_p);
    zq += std::exp(static_cast<double>(vals[j]) - best_q);
  }
  for (int64_t j = 0; j < K; ++j) {
    s.logP[static_cast<size_t>(j)] = s.lp[static_cast<size_t>(ids[j])] - best_p - std::log(zp);
    s.logQ[static_cast<size_t>(j)] = static_cast<double>(vals[j]) - best_q - std::log(zq);
  }
  loss = bin_loss(div, s.logP, s.logQ, static_cast<size_t>(K), s.h);
  if (drow) {
    const double sum_h = std::accumulate(s.h.begin(), s.h.begin() + K, 0.0);
    for (int64_t j = 0; j < K; ++j) add(ids[j], s.h[static_cast<size_t>(j)] - std::exp(s.logP[static_cast<size_t>(j)]) * sum_h);
  }
  return loss;
}

}  // namespace

void log_softmax_rows(const float* logits, int64_t rows, int64_t V, float* out) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const double lse = log_sum_exp(logits + r * V, V);
    for (int64_t i = 0; i < V; ++i) out[r * V + i] = static_cast<float>(static_cast<double>(logits[r * V + i]) - lse);
  }
}

void next_token_logprob(const float* logits, int64_t V, const TokenBatch& batch, float* logprob) {
  const int64_t S = batch.segments();
  for (int64_t s = 0; s < S; ++s) {
    const int64_t begin = batch.offsets[static_cast<size_t>(s)], end = batch.offsets[static_cast<size_t>(s + 1)];
    if (begin < end) logprob[begin] = static_cast<float>(kNaN);
#pragma omp parallel for schedule(static)
    for (int64_t r = begin + 1; r < end; ++r) {
      const float* z = logits + (r - 1) * V;
      const int32_t y = batch.tokens[static_cast<size_t>(r)];
      logprob[r] = static_cast<float>(static_cast<double>(z[y]) - log_sum_exp(z, V));
    }
  }
}

void top_k(const float* logits, int64_t rows, int64_t V, int64_t K, int32_t* ids, float* values, const int32_t* force) {
  if (K < 1 || K > V) throw usage_error("top-k: K must be in 1.." + std::to_string(V) + ", got " + std::to_string(K));
#pragma omp parallel
  {
    std::vector<int32_t> order(static_cast<size_t>(V));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const float* z = logits + r * V;
      std::iota(order.begin(), order.end(), 0);
      const auto before = [z](int32_t a, int32_t b) { return z[a] > z[b] || (z[a] == z[b] && a < b); };
      std::partial_sort(order.begin(), order.begin() + K, order.end(), before);
      if (force) {
        const int32_t f = force[r];
        if (std::find(order.begin(), order.begin() + K, f) == order.begin() + K) order[static_cast<size_t>(K - 1)] = f;
      }
      for (int64_t j = 0; j < K; ++j) {
        ids[r * K + j] = order[static_cast<size_t>(j)];
        values[r * K + j] = z[order[static_cast<size_t>(j)]];
      }
    }
  }
}

double loss_and_grad(Divergence div, const float* logits, int64_t logit_rows, int64_t V, const Target& target,
                     const LossRows& rows, float* loss, float* dlogits, bool accumulate) {
  const bool token = target.kind == Target::Kind::token;
  if ((div == Divergence::cross_entropy) != token)
    throw usage_error(std::string("loss: ") + divergence_name(div) + (token ? " needs a target distribution" : " takes a target token"));
  if ((target.kind == Target::Kind::topk_rest || target.kind == Target::Kind::restricted) &&
      (target.k < 1 || target.k > V || !target.ids || !target.values))
    throw usage_error("loss: a top-K target needs ids and values with 1 <= k <= V");
  if (target.kind == Target::Kind::full && (!target.logits || target.stride < V))
    throw usage_error("loss: a full target needs logits with a stride of at least V");
  if (!rows.weights.empty() && rows.weights.size() != rows.rows.size())
    throw usage_error("loss: one weight per loss row, or none");
  const int64_t R = static_cast<int64_t>(rows.rows.size());
  for (int64_t r = 0; r < R; ++r)
    if (rows.rows[static_cast<size_t>(r)] < 0 || rows.rows[static_cast<size_t>(r)] >= logit_rows)
      throw usage_error("loss: row " + std::to_string(rows.rows[static_cast<size_t>(r)]) + " outside the " +
                        std::to_string(logit_rows) + " logit rows");
  if (dlogits && !accumulate) std::fill(dlogits, dlogits + logit_rows * V, 0.0f);
  // A logits row may appear twice (two targets for one position): rows are
  // processed in order by one thread when that happens, in parallel otherwise.
  std::vector<int64_t> sorted(rows.rows.begin(), rows.rows.end());
  std::sort(sorted.begin(), sorted.end());
  const bool distinct = std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
  std::vector<double> per_row(static_cast<size_t>(R));
  std::string failure;
#pragma omp parallel if (distinct)
  {
    RowScratch scratch(V);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < R; ++r) {
      try {
        const int64_t row = rows.rows[static_cast<size_t>(r)];
        const double w = rows.weights.empty() ? 1.0 : static_cast<double>(rows.weights[static_cast<size_t>(r)]);
        per_row[static_cast<size_t>(r)] =
            loss_row(div, logits + row * V, V, target, r, w, dlogits ? dlogits + row * V : nullptr, scratch);
      } catch (const Error& e) {
#pragma omp critical(nk_lm_loss)
        if (failure.empty()) failure = e.what();
      }
    }
  }
  if (!failure.empty()) throw usage_error(failure);
  double total = 0;
  for (int64_t r = 0; r < R; ++r) {
    const double w = rows.weights.empty() ? 1.0 : static_cast<double>(rows.weights[static_cast<size_t>(r)]);
    if (loss) loss[r] = static_cast<float>(per_row[static_cast<size_t>(r)]);
    total += w * per_row[static_cast<size_t>(r)];
  }
  return total;
}

double divergence(Divergence div, const float* student_logits, const float* target_logits, int64_t V) {
  Target t;
  t.kind = Target::Kind::full;
  t.logits = target_logits;
  t.stride = V;
  RowScratch scratch(V);
  return loss_row(div, student_logits, V, t, 0, 1.0, nullptr, scratch);
}

}  // namespace nk::lm
