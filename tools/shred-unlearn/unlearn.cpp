// unlearn.cpp - SHRED's objective and the baselines' as losses on logits,
// run by nk-lm's trainer (AdamW at a constant rate, gradients clipped).
#include "shred-unlearn/unlearn.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "nk/error.hpp"
#include "nk/lm/loss.hpp"
#include "nk/rng.hpp"
#include "nk/timer.hpp"

namespace shred {

namespace {

const std::vector<std::pair<Method, const char*>> kMethods = {{Method::shred, "shred"},
                                                              {Method::shred_all, "shred-all"},
                                                              {Method::shred_random, "shred-random"},
                                                              {Method::ga, "ga"},
                                                              {Method::graddiff, "graddiff"},
                                                              {Method::npo, "npo"},
                                                              {Method::npo_retain, "npo-retain"},
                                                              {Method::kl_retain, "kl-retain"}};

/// Mean NPO loss over the batch and the per-token CE weights -2 sigmoid(beta
/// l_i) / B of its gradient, l_i = log pi(y_i) - log pi_ref(y_i).
double npo_weights(const std::vector<const Sequence*>& seqs, const std::vector<double>& ref, const float* lp_rows,
                   const std::vector<int64_t>& offsets, double beta, float scale, std::vector<float>& weights) {
  const double B = static_cast<double>(seqs.size());
  double loss = 0;
  weights.clear();
  for (size_t i = 0; i < seqs.size(); ++i) {
    const Sequence& s = *seqs[i];
    double sum = 0;
    for (int64_t t = s.answer_start; t < s.size(); ++t) sum += lp_rows[offsets[i] + t];
    const double l = sum - ref[i];
    // -(2/beta) log sigmoid(-beta l) = (2/beta) softplus(beta l)
    const double x = beta * l;
    loss += 2.0 / beta * (x > 30 ? x : std::log1p(std::exp(x))) / B;
    const double w = -2.0 / (1.0 + std::exp(-x)) / B * scale;
    for (int64_t t = s.answer_start; t < s.size(); ++t) weights.push_back(static_cast<float>(w));
  }
  return loss;
}

}  // namespace

Method parse_method(const std::string& name) {
  for (const auto& [m, n] : kMethods)
    if (name == n) return m;
  throw nk::usage_error("unknown --method '" + name +
                        "' (shred, shred-all, shred-random, ga, graddiff, npo, npo-retain, kl-retain)");
}

std::string method_name(Method m) {
  for (const auto& [k, n] : kMethods)
    if (k == m) return n;
  return "?";
}

bool needs_retain(Method m) {
  return m == Method::graddiff || m == Method::npo_retain || m == Method::kl_retain;
}
bool is_shred(Method m) {
  return m == Method::shred || m == Method::shred_all || m == Method::shred_random;
}

std::vector<int64_t> batch_indices(int64_t n, int64_t batch, int64_t step, uint64_t seed) {
  std::vector<int64_t> out;
  if (n <= 0) return out;
  int64_t pos = step * batch;
  std::vector<int64_t> perm;
  int64_t epoch = -1;
  for (int64_t k = 0; k < batch; ++k, ++pos) {
    const int64_t e = pos / n;
    if (e != epoch) {
      epoch = e;
      perm.resize(static_cast<size_t>(n));
      std::iota(perm.begin(), perm.end(), 0);
      nk::Rng rng = nk::Rng(seed).split(static_cast<uint64_t>(e));
      nk::shuffle(perm, rng);
    }
    out.push_back(perm[static_cast<size_t>(pos % n)]);
  }
  return out;
}

Unlearner::Unlearner(nk::lm::ParameterStore& weights, std::vector<Sequence> forget, std::vector<Sequence> retain,
                     const UnlearnConfig& config)
    : weights_(weights), original_(weights), forget_(std::move(forget)), retain_(std::move(retain)), config_(config) {
  if (forget_.empty()) throw nk::usage_error("run: the forget set is empty");
  if (needs_retain(config_.method) && retain_.empty())
    throw nk::usage_error("run: --method " + method_name(config_.method) +
                          " needs retain rows and the split leaves none");
  if (config_.batch < 1 || config_.steps < 0) throw nk::usage_error("run: --batch must be >= 1 and --steps >= 0");
  const nk::lm::Model original(original_);
  if (is_shred(config_.method)) {
    SelectConfig sc = config_.select;
    if (config_.method == Method::shred_all) sc.pick = Pick::all;
    if (config_.method == Method::shred_random) sc.pick = Pick::random;
    selection_ = select(original, forget_, sc);
  }
  if (config_.method == Method::npo || config_.method == Method::npo_retain) {
    const std::vector<std::vector<float>> lp = score(original, forget_);
    for (size_t i = 0; i < forget_.size(); ++i) reference_logprob_.push_back(answer_logprob_sum(forget_[i], lp[i]));
  }
}

double Unlearner::forget_loss(const std::vector<int64_t>& idx, nk::lm::Workspace& ws, const nk::lm::Model& model,
                              float scale) {
  std::vector<const Sequence*> seqs;
  for (int64_t i : idx) seqs.push_back(&forget_[static_cast<size_t>(i)]);
  const Packed p = pack(seqs);
  const nk::lm::TokenBatch batch = p.batch();
  model.forward(batch, ws);
  const int64_t V = model.config().vocab;
  switch (config_.method) {
    case Method::shred:
    case Method::shred_all:
    case Method::shred_random: {
      const Selection& s = selection_;
      std::vector<int64_t> rows;
      std::vector<int32_t> ids;
      std::vector<float> values;
      for (size_t b = 0; b < idx.size(); ++b) {
        const int64_t i = idx[b];
        for (int64_t t = 1; t < seqs[b]->size(); ++t) {
          if (s.forget_mask[static_cast<size_t>(i * s.T + t)] < 0) continue;
          rows.push_back(p.offsets[b] + t - 1);
          const size_t at = static_cast<size_t>((i * s.T + t) * s.K);
          ids.insert(ids.end(), s.support.begin() + static_cast<std::ptrdiff_t>(at),
                     s.support.begin() + static_cast<std::ptrdiff_t>(at + s.K));
          values.insert(values.end(), s.target_logits.begin() + static_cast<std::ptrdiff_t>(at),
                        s.target_logits.begin() + static_cast<std::ptrdiff_t>(at + s.K));
        }
      }
      const std::vector<float> w(rows.size(), scale / static_cast<float>(rows.size()));
      nk::lm::Target target;
      target.kind = nk::lm::Target::Kind::restricted;
      target.ids = ids.data();
      target.values = values.data();
      target.k = s.K;
      return nk::lm::loss_and_grad(nk::lm::Divergence::forward_kl, ws.logits(), ws.logit_rows(), V, target, {rows, w},
                                   nullptr, ws.dlogits()) /
             scale;
    }
    case Method::ga:
    case Method::graddiff:
    case Method::kl_retain:
      return -answer_ce(seqs, batch, ws, V, -scale, false);
    case Method::npo:
    case Method::npo_retain: {
      std::vector<float> lp(static_cast<size_t>(p.rows()));
      nk::lm::next_token_logprob(ws.logits(), V, batch, lp.data());
      std::vector<double> ref;
      for (int64_t i : idx) ref.push_back(reference_logprob_[static_cast<size_t>(i)]);
      std::vector<float> w;
      const double loss = npo_weights(seqs, ref, lp.data(), p.offsets, config_.npo_beta, scale, w);
      std::vector<int64_t> rows;
      std::vector<int32_t> targets;
      for (size_t b = 0; b < seqs.size(); ++b)
        for (int64_t t = seqs[b]->answer_start; t < seqs[b]->size(); ++t) {
          rows.push_back(p.offsets[b] + t - 1);
          targets.push_back(seqs[b]->tokens[static_cast<size_t>(t)]);
        }
      nk::lm::Target target;
      target.token = targets.data();
      nk::lm::loss_and_grad(nk::lm::Divergence::cross_entropy, ws.logits(), ws.logit_rows(), V, target, {rows, w},
                            nullptr, ws.dlogits());
      return loss;
    }
  }
  return 0;
}

double Unlearner::retain_loss(const std::vector<int64_t>& idx, nk::lm::Workspace& ws, const nk::lm::Model& model,
                              float scale) {
  std::vector<const Sequence*> seqs;
  for (int64_t i : idx) seqs.push_back(&retain_[static_cast<size_t>(i)]);
  const Packed p = pack(seqs);
  const nk::lm::TokenBatch batch = p.batch();
  const int64_t V = model.config().vocab;
  if (config_.method != Method::kl_retain) {
    model.forward(batch, ws);
    return answer_ce(seqs, batch, ws, V, scale, false);
  }
  // KL(original || current) at every position of the retain rows.
  const nk::lm::Model original(original_);
  nk::lm::Workspace ref_ws(model.config(), {p.rows(), longest(retain_), false});
  original.forward(batch, ref_ws);
  const std::vector<float> target_logits(ref_ws.logits(), ref_ws.logits() + p.rows() * V);
  model.forward(batch, ws);
  std::vector<int64_t> rows;
  for (size_t b = 0; b < seqs.size(); ++b)
    for (int64_t t = 1; t < seqs[b]->size(); ++t) rows.push_back(p.offsets[b] + t - 1);
  std::vector<float> shifted(rows.size() * static_cast<size_t>(V));
  for (size_t r = 0; r < rows.size(); ++r)
    std::copy_n(target_logits.begin() + rows[r] * V, V,
                shifted.begin() + static_cast<std::ptrdiff_t>(r * static_cast<size_t>(V)));
  const std::vector<float> w(rows.size(), scale / static_cast<float>(rows.size()));
  nk::lm::Target target;
  target.kind = nk::lm::Target::Kind::full;
  target.logits = shifted.data();
  target.stride = V;
  return nk::lm::loss_and_grad(nk::lm::Divergence::forward_kl, ws.logits(), ws.logit_rows(), V, target, {rows, w},
                               nullptr, ws.dlogits()) /
         scale;
}

void Unlearner::run(const std::function<void(const StepRecord&)>& on_step) {
  const int64_t span = std::max(longest(forget_), longest(retain_));
  const nk::lm::Schedule schedule{config_.lr, 1.0, 1, std::max<int64_t>(config_.steps, 2)};
  nk::lm::AdamWConfig adamw;
  adamw.weight_decay = 0.0;  // decay would move every weight, forget or not
  nk::lm::Trainer trainer(weights_, nk::lm::ParameterMask::all(weights_), schedule, adamw,
                          {config_.batch * span, span, true});
  // A retain weight of 0 drops the retain term (its losses are divided by the weight: 0/0).
  const bool with_retain = needs_retain(config_.method) && config_.retain_weight > 0;
  double seconds = 0;
  for (int64_t k = 0; k < config_.steps; ++k, ++step_) {
    const std::vector<int64_t> fb =
        batch_indices(static_cast<int64_t>(forget_.size()), config_.batch, step_, config_.seed);
    const std::vector<int64_t> rb = with_retain ? batch_indices(static_cast<int64_t>(retain_.size()), config_.batch,
                                                                step_, config_.seed ^ 0x7e7a1full)
                                                : std::vector<int64_t>{};
    std::vector<const Sequence*> keep;
    Packed fp, rp;
    const nk::lm::StepStats st =
        trainer.step(with_retain ? 2 : 1, [&](int64_t micro, nk::lm::Workspace& ws, nk::lm::TokenBatch& batch) {
          if (micro == 0) {
            std::vector<const Sequence*> s;
            for (int64_t i : fb) s.push_back(&forget_[static_cast<size_t>(i)]);
            fp = pack(s);
            batch = fp.batch();
            const double loss = forget_loss(fb, ws, trainer.model(), 1.0f);
            return std::pair<double, int64_t>{loss, fp.rows()};
          }
          std::vector<const Sequence*> s;
          for (int64_t i : rb) s.push_back(&retain_[static_cast<size_t>(i)]);
          rp = pack(s);
          batch = rp.batch();
          const double loss = retain_loss(rb, ws, trainer.model(), static_cast<float>(config_.retain_weight));
          return std::pair<double, int64_t>{config_.retain_weight * loss, rp.rows()};
        });
    if (!std::isfinite(st.loss))
      throw nk::Error(nk::Exit::runtime, "run: the loss became " + std::to_string(st.loss) + " at step " +
                                             std::to_string(step_) + " (lower --lr)");
    seconds += st.seconds;
    if (on_step) on_step({step_ + 1, st.loss, st.grad_norm, seconds});
  }
}

void train_answers(nk::lm::ParameterStore& weights, const std::vector<Sequence>& data, int64_t steps, int64_t batch,
                   double lr, uint64_t seed) {
  if (data.empty()) throw nk::usage_error("relearn: nothing to train on");
  const int64_t span = longest(data);
  const nk::lm::Schedule schedule{lr, 1.0, 1, std::max<int64_t>(steps, 2)};
  nk::lm::AdamWConfig adamw;
  adamw.weight_decay = 0.0;
  nk::lm::Trainer trainer(weights, nk::lm::ParameterMask::all(weights), schedule, adamw, {batch * span, span, true});
  const int64_t V = weights.config().vocab;
  for (int64_t k = 0; k < steps; ++k) {
    std::vector<const Sequence*> seqs;
    for (int64_t i : batch_indices(static_cast<int64_t>(data.size()), batch, k, seed))
      seqs.push_back(&data[static_cast<size_t>(i)]);
    Packed p;
    trainer.step(1, [&](int64_t, nk::lm::Workspace& ws, nk::lm::TokenBatch& b) {
      p = pack(seqs);
      b = p.batch();
      trainer.model().forward(b, ws);
      return std::pair<double, int64_t>{answer_ce(seqs, b, ws, V, 1.0f, false), p.rows()};
    });
  }
}

}  // namespace shred
