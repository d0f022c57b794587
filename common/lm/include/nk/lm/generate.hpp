// generate.hpp - decoding. Causal: batched prefill, then one token per
// sequence per step through the KV cache, sampled greedily or with
// temperature / top-k / top-p. Diffusion: LLaDA's sampler - the answer starts
// all [MASK]; semi-autoregressive blocks left to right; each of a block's
// steps predicts every masked position at once and keeps the most confident
// predictions (low-confidence remasking: the rest stay masked).
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "nk/lm/model.hpp"

namespace nk::lm {

struct SamplerOptions {
  bool greedy = false;       ///< argmax (ties to the lower id); the others are then ignored
  double temperature = 1.0;  ///< logits / temperature (> 0)
  int64_t top_k = 0;         ///< keep the k most likely tokens (0: all)
  double top_p = 1.0;        ///< then the smallest set whose probability reaches top_p (nucleus)
};

/// One token from a row of logits; u in [0, 1) is the caller's uniform (so a
/// draw can be keyed by sequence and position): the inverse CDF over the kept
/// tokens in order of probability (ties to the lower id).
int32_t sample(const float* logits, int64_t V, const SamplerOptions& options, double u);

struct GenerateOptions {
  int64_t max_new = 64;
  SamplerOptions sampler;
  uint64_t seed = 0;
  int32_t eos = -1;          ///< stop a sequence after it emits this id (-1: never)
  int64_t batch = 8;         ///< sequences decoded together
  int64_t page_tokens = 16;  ///< KV-cache page size
  /// [vocab] added to every row of logits before sampling: a logit-bias
  /// adapter over a frozen model (empty: none).
  std::span<const float> logit_bias = {};
  /// Every layer's attention through this backend, which owns the cache (a
  /// KeySubsetAttention: decoding through a key index); it must hold at
  /// least 'batch' slots, which are reset before each prompt. Null: the
  /// model's own paged KV cache.
  AttentionBackend* attention = nullptr;
  /// Called with each step's logits (after the bias, before sampling) of
  /// prompt b's t-th new token: [vocab].
  std::function<void(size_t b, int64_t t, const float* logits)> on_logits = {};
};

/// The continuation of each prompt (EOS included when emitted). The draw for
/// prompt b at new token t is Rng(seed).split(b).split(t).uniform(), so the
/// batch size does not change the result. A prompt that is empty or whose
/// length + max_new passes the context is a usage error.
std::vector<std::vector<int32_t>> generate_causal(const Model& model, const std::vector<std::vector<int32_t>>& prompts,
                                                  const GenerateOptions& options);

/// How far each step's distribution was from the model's own: for prompt b
/// and its continuation, logprobs[b] holds the log-softmax [vocab] that
/// produced each new token (GenerateOptions::on_logits); the model scores
/// prompt + continuation with its own dense attention in one teacher-forced
/// forward, and row b's value t is KL(dense || logprobs[b][t]) in nats.
std::vector<std::vector<double>> divergence_from_dense(const Model& model, const std::vector<std::vector<int32_t>>& prompts,
                                                       const std::vector<std::vector<int32_t>>& continuations,
                                                       const std::vector<std::vector<float>>& logprobs);

/// Teacher-forced fidelity of a second attention (a shadow backend) along
/// the sampler's own trajectory: at every step the same sequence also goes
/// through the shadow, and at each position the step predicts, the two
/// argmax predictions ([MASK] excluded) and their distributions are compared.
struct ShadowStats {
  int64_t predictions = 0;  ///< positions compared
  int64_t agreements = 0;   ///< equal argmax predictions
  double kl = 0;            ///< summed KL(sampler's || shadow's) over them, nats
};

/// A diffusion sampler forced along a known answer: at each position it
/// unmasks, the sampler writes the reference token and counts whether its
/// own prediction there was that token.
struct ReferenceStats {
  int64_t committed = 0;  ///< answer positions unmasked (each once)
  int64_t correct = 0;    ///< of them, predicted as the reference token
};

struct DiffusionOptions {
  int64_t gen_length = 64;   ///< answer tokens, all [MASK] at the start
  int64_t steps = 32;        ///< denoising steps over the whole answer
  int64_t block = 32;        ///< semi-autoregressive block length (gen_length a multiple of it)
  double temperature = 0.0;  ///< 0: argmax predictions; > 0: Gumbel-max on logits / temperature
  bool random_remasking = false;  ///< keep random predictions instead of the most confident
  uint64_t seed = 0;
  int32_t mask = -1;         ///< the [MASK] id (the tokenizer's)
  Observer* observer = nullptr;  ///< sees every denoising step's forward (Site::step = the step)
  /// Every layer's attention at every step through this backend (a
  /// BlockMaskAttention: Step-dLLM's block masks); null: the model's own.
  AttentionBackend* attention = nullptr;
  /// When set, every step is also run through this backend and compared
  /// (the tokens stay the sampler's own): results added to *shadow_stats.
  AttentionBackend* shadow = nullptr;
  ShadowStats* shadow_stats = nullptr;
  /// When set (gen_length tokens): teacher forcing toward a known answer. The
  /// sampler still decides which positions to unmask at each step (by its
  /// confidence), but writes the reference token there and adds to
  /// *reference_stats whether its prediction was right: a task accuracy on
  /// real text along the sampler's own schedule.
  std::span<const int32_t> reference = {};
  ReferenceStats* reference_stats = nullptr;
};

/// Called after each denoising step with the step index and the whole
/// sequence (prompt + answer, [MASK] where still masked).
using DiffusionStepHook = std::function<void(int64_t step, std::span<const int32_t> sequence)>;

/// LLaDA's sampler over one prompt; returns prompt + answer. Deterministic
/// for a seed. [MASK] is never a prediction (an untrained model could
/// otherwise "unmask" to it).
std::vector<int32_t> sample_diffusion(const Model& model, const std::vector<int32_t>& prompt,
                                      const DiffusionOptions& options, const DiffusionStepHook& hook = {});

/// LLaDA's Monte-Carlo bound on -log p(answer | prompt) under a diffusion
/// model, in nats per row: for each of 'samples' draws, l answer tokens
/// (l stratified over 1..La across the draws, La = the answer's length) are
/// masked at uniformly chosen positions, and (La / l) times the masked
/// tokens' cross-entropy given the rest is one estimate; the mean is an
/// upper bound on the answer's negative log-likelihood (exact when La = 1).
/// Row b's answer is rows[b][prompt_lengths[b]..]; draw k of row b uses
/// Rng(seed).split(b).split(k). Rows are packed 'batch' draws per forward.
std::vector<double> diffusion_nll(const Model& model, const std::vector<std::vector<int32_t>>& rows,
                                  const std::vector<int64_t>& prompt_lengths, int32_t mask, int64_t samples, uint64_t seed,
                                  int64_t batch = 16);

/// LLaDA's transfer schedule: how many of a block's 'masked' tokens each of
/// its 'steps' unmasks (equal shares, the remainder to the first steps).
std::vector<int64_t> transfer_counts(int64_t masked, int64_t steps);

}  // namespace nk::lm
