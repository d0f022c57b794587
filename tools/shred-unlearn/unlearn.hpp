// unlearn.hpp - the unlearning methods as loss functions over nk-lm's
// trainer: SHRED (selection + top-K KL self-distillation) and its two
// ablations, and the baselines GA, GradDiff, NPO, NPO + retain, KL-retain;
// plus the fine-tuning that makes the target and retain models.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nk/lm/checkpoint.hpp"
#include "nk/lm/model.hpp"
#include "nk/lm/train.hpp"
#include "shred-unlearn/qa.hpp"
#include "shred-unlearn/select.hpp"

namespace shred {

enum class Method { shred, shred_all, shred_random, ga, graddiff, npo, npo_retain, kl_retain };
Method parse_method(const std::string& name);
std::string method_name(Method m);
bool needs_retain(Method m);
bool is_shred(Method m);

struct UnlearnConfig {
  Method method = Method::shred;
  int64_t steps = 30, batch = 8;
  double lr = 3e-5;
  double npo_beta = 0.1;
  double retain_weight = 1.0;  ///< the retain term's coefficient (graddiff, npo-retain, kl-retain)
  SelectConfig select;         ///< shred's options
  uint64_t seed = 0;           ///< batch order
};

struct StepRecord {
  int64_t step = 0;
  double loss = 0, grad_norm = 0, seconds = 0;
};

/// One unlearning request: the forget instances (and retain rows for the
/// methods that take them) over weights that train in place. The original
/// model (SHRED's targets, NPO's and KL-retain's reference) is the weights at
/// construction.
class Unlearner {
 public:
  Unlearner(nk::lm::ParameterStore& weights, std::vector<Sequence> forget, std::vector<Sequence> retain,
            const UnlearnConfig& config);
  /// Runs 'steps' optimiser steps; after each, on_step (may be empty).
  void run(const std::function<void(const StepRecord&)>& on_step);
  const Selection& selection() const { return selection_; }
  /// Loss and its gradient for one forget batch (tests call it directly).
  double forget_loss(const std::vector<int64_t>& batch, nk::lm::Workspace& ws, const nk::lm::Model& model, float scale);

 private:
  double retain_loss(const std::vector<int64_t>& batch, nk::lm::Workspace& ws, const nk::lm::Model& model, float scale);
  nk::lm::ParameterStore& weights_;
  nk::lm::ParameterStore original_;
  std::vector<Sequence> forget_, retain_;
  UnlearnConfig config_;
  Selection selection_;
  std::vector<double> reference_logprob_;  ///< NPO: the original's answer log-likelihood per forget instance
  int64_t step_ = 0;
};

/// Batches of 'batch' indices into n items: a seeded permutation per epoch,
/// consumed in order (the last batch of an epoch may wrap into the next).
std::vector<int64_t> batch_indices(int64_t n, int64_t batch, int64_t step, uint64_t seed);

/// Answer CE, packing and fine-tuning with replay: nk-lm's shared QA code.
using nk::lm::answer_ce;
using nk::lm::finetune;
using nk::lm::FinetuneConfig;
using nk::lm::longest;
using nk::lm::pack;

/// 'steps' AdamW steps of answer CE on batches drawn from the sequences (at a
/// constant rate): relearning.
void train_answers(nk::lm::ParameterStore& weights, const std::vector<Sequence>& data, int64_t steps, int64_t batch,
                   double lr, uint64_t seed);

}  // namespace shred
