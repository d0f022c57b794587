// train.cpp - nk-lm train: pretraining or fine-tuning, causal (next-token
// cross-entropy) or masked diffusion (LLaDA's 1/t-weighted masked-token
// cross-entropy), over windows of a corpus; periodic validation and atomic
// checkpoints that --resume continues bit for bit.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nk-lm/nk_lm.hpp"
#include "nk/atomic_file.hpp"
#include "nk/context.hpp"
#include "nk/error.hpp"
#include "nk/lm/corpus.hpp"
#include "nk/lm/loss.hpp"
#include "nk/lm/train.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "nk/timer.hpp"

namespace nklm {

namespace {

using nk::lm::Mode;

nk::lm::Config config_from(const TrainOptions& o, int64_t vocab) {
  nk::lm::Config c;
  c.mode = o.mode == "diffusion" ? Mode::diffusion : Mode::causal;
  c.vocab = vocab;
  c.d_model = o.d_model;
  c.n_layers = o.layers;
  c.n_heads = o.heads;
  c.n_kv_heads = o.kv_heads;
  c.head_dim = o.head_dim > 0 ? o.head_dim : o.d_model / o.heads;
  c.d_ff = o.d_ff;
  c.max_seq = o.context;
  c.rope_theta = o.rope_theta;
  c.tied_head = !o.untied;
  if (o.attention == "mla") {
    c.attention = nk::lm::AttentionKind::mla;
    c.n_kv_heads = c.n_heads;
    c.kv_rank = o.kv_rank > 0 ? o.kv_rank : 4 * c.head_dim;
    c.rope_dim = o.rope_dim > 0 ? o.rope_dim : c.kv_rank / 8;
  }
  if (o.attention == "sparse-gqa") {
    c.sparse = true;
    c.selector = {o.sparse_block, o.sparse_init, o.sparse_local, o.sparse_topk};
  }
  c.validate("train");
  return c;
}

/// --init's model with what the command line changes: the context, the RoPE
/// base (long-context continued pretraining raises both) and dense or
/// sparse attention. The weights' shapes stay.
nk::lm::Config adapted(nk::lm::Config c, const TrainOptions& o) {
  if (o.context_given) c.max_seq = o.context;
  if (o.rope_given) c.rope_theta = o.rope_theta;
  if (o.attention_given) {
    if ((o.attention == "mla") != c.mla())
      throw nk::usage_error("train: --attention " + o.attention + " cannot turn --init's " + (c.mla() ? "mla" : "gqa") +
                            " model into another kind (only gqa <-> sparse-gqa)");
    c.sparse = o.attention == "sparse-gqa";
    if (c.sparse) c.selector = {o.sparse_block, o.sparse_init, o.sparse_local, o.sparse_topk};
  }
  c.validate("train");
  return c;
}

/// One batch's loss rows: causal - every position predicts the next token;
/// diffusion - the masked positions predict their clean tokens.
struct Batch {
  std::vector<int32_t> window, input;
  std::vector<int64_t> offsets, rows;
  std::vector<int32_t> targets;
  std::vector<float> weights;
  nk::lm::DiffusionBatch masked;
};

void make_batch(const nk::lm::BatchSampler& sampler, const nk::lm::Config& c, int32_t mask_id, uint64_t seed, int64_t step,
                Batch& b) {
  const int64_t B = sampler.batch(), T = sampler.context();
  b.window.resize(static_cast<size_t>(B * (T + 1)));
  sampler.fill(step, b.window.data());
  b.input.resize(static_cast<size_t>(B * T));
  for (int64_t r = 0; r < B; ++r)
    std::copy_n(b.window.begin() + r * (T + 1), T, b.input.begin() + r * T);
  b.offsets = nk::lm::uniform_offsets(B, T);
  if (c.mode == Mode::causal) {
    b.rows.resize(static_cast<size_t>(B * T));
    b.targets.resize(static_cast<size_t>(B * T));
    for (int64_t r = 0; r < B; ++r)
      for (int64_t t = 0; t < T; ++t) {
        b.rows[static_cast<size_t>(r * T + t)] = r * T + t;
        b.targets[static_cast<size_t>(r * T + t)] = b.window[static_cast<size_t>(r * (T + 1) + t + 1)];
      }
    b.weights.assign(static_cast<size_t>(B * T), 1.0f / static_cast<float>(B * T));
  } else {
    nk::lm::diffusion_mask(b.input.data(), B, T, mask_id, seed, step, b.masked);
    b.input = b.masked.noisy;
    b.rows = b.masked.rows;
    b.targets = b.masked.targets;
    b.weights = b.masked.weights;
  }
}

/// Mean loss per loss row over fixed validation batches (the same batches at every evaluation).
double validation_loss(const nk::lm::Model& model, const nk::lm::BatchSampler& val, int32_t mask_id, int64_t batches,
                       nk::lm::Workspace& ws) {
  double total = 0;
  int64_t count = 0;
  Batch b;
  for (int64_t k = 0; k < batches; ++k) {
    make_batch(val, model.config(), mask_id, 0x5eed, k, b);
    if (b.rows.empty()) continue;
    model.forward({b.input, b.offsets}, ws);
    nk::lm::Target t;
    t.token = b.targets.data();
    std::vector<float> per(b.rows.size());
    nk::lm::loss_and_grad(nk::lm::Divergence::cross_entropy, ws.logits(), ws.logit_rows(), model.config().vocab, t,
                          {b.rows, {}}, per.data(), nullptr);
    for (float x : per) total += x;
    count += static_cast<int64_t>(per.size());
  }
  return count ? total / static_cast<double>(count) : std::nan("");
}

}  // namespace

void train(const TrainOptions& o, const nk::RunEnv& env) {
  check_writable(o.output, o.no_clobber);
  check_writable(o.checkpoint, false);
  const nk::lm::Corpus corpus = nk::lm::Corpus::open(o.corpus);
  const nk::lm::Tokenizer& tok = corpus.tokenizer();
  std::optional<nk::lm::Checkpoint> start;
  if (!o.resume.empty() && !o.init.empty()) throw nk::usage_error("train: --resume and --init exclude each other");
  if (!o.resume.empty()) {
    start = nk::lm::load_checkpoint(o.resume);
    if (!start->train) throw nk::input_error(o.resume, "/train", "no optimiser state: --resume needs a file written by --checkpoint");
  } else if (!o.init.empty()) {
    start = nk::lm::load_checkpoint(o.init);
  }
  if (start && start->tokenizer && start->tokenizer->fingerprint() != tok.fingerprint())
    throw nk::usage_error("train: the model's tokenizer is not the corpus's (cut the corpus with --tokenizer MODEL)");
  const nk::lm::Config c = !o.resume.empty() ? start->weights.config()
                           : start            ? adapted(start->weights.config(), o)
                                              : config_from(o, tok.size());
  if (c.vocab != tok.size())
    throw nk::usage_error("train: the model's vocabulary (" + std::to_string(c.vocab) + ") is not the corpus tokenizer's (" +
                          std::to_string(tok.size()) + ")");
  nk::lm::ParameterStore weights(c);
  if (start) std::copy_n(start->weights.data(), weights.size(), weights.data());  // same shapes: only c's context, RoPE or attention differ
  else weights.init(env.seed);
  nk::lm::ParameterMask mask = nk::lm::ParameterMask::all(weights);
  for (const std::string& glob : o.freeze)
    if (mask.freeze(glob) == 0) throw nk::usage_error("train: --freeze '" + glob + "' matches no tensor (see nk-lm info)");
  const nk::lm::Schedule schedule{o.lr, o.min_lr, o.warmup, o.steps};
  nk::lm::AdamWConfig adamw;
  adamw.weight_decay = o.weight_decay;
  adamw.clip_norm = o.clip;
  adamw.beta2 = o.beta2;
  const int64_t T = c.max_seq;
  const uint64_t seed = start && start->train && !o.resume.empty() ? start->train->seed : env.seed;
  nk::lm::Trainer trainer(weights, mask, schedule, adamw, {o.batch * T, T, true});
  int64_t tokens_done = 0;
  if (!o.resume.empty()) {
    trainer.optimiser().load(*start->train, o.resume);
    tokens_done = start->train->tokens;
    if (start->train->step >= o.steps)
      throw nk::usage_error("train: the checkpoint is at step " + std::to_string(start->train->step) + "; --steps " +
                            std::to_string(o.steps) + " leaves nothing to do");
  }
  const nk::lm::BatchSampler sampler(corpus, nk::lm::Split::train, o.batch, T, seed);
  std::unique_ptr<nk::lm::BatchSampler> val;
  std::unique_ptr<nk::lm::Workspace> val_ws;
  if (o.eval_every > 0) {
    val = std::make_unique<nk::lm::BatchSampler>(corpus, nk::lm::Split::validation, o.batch, T, 0x5eed);
    val_ws = std::make_unique<nk::lm::Workspace>(c, nk::lm::WorkspaceLimits{o.batch * T, T, false});
  }
  std::ofstream log;
  if (!o.log.empty()) {
    log.open(o.log);
    if (!log) throw nk::io_error(o.log, "cannot write the training log");
    log << "step\ttokens\tloss\tlr\tgrad_norm\ttokens_per_s\tval_loss\n";
  }
  spdlog::info("train: {} {}model, {} parameters ({} trainable), {} layers, d {}, heads {}/{}, context {}; {} steps of {}x{} tokens",
               nk::lm::mode_name(c.mode),
               c.sparse ? fmt::format("sparse-gqa (block {}, init {}, local {}, top-{}) ", c.selector.block,
                                      c.selector.init_blocks, c.selector.local_blocks, c.selector.topk)
                        : std::string(),
               c.parameter_count(), mask.trainable_count(), c.n_layers, c.d_model, c.n_heads,
               c.n_kv_heads, T, o.steps, o.batch * o.accum, T);
  const std::string recipe = nk::run_context().command;
  const auto save_state = [&](const std::string& path) {
    nk::lm::TrainState st;
    trainer.optimiser().save(st);
    st.tokens = tokens_done;
    st.seed = seed;
    st.recipe = recipe;
    nk::lm::save_checkpoint(path, weights, &tok, &st, nk::lm::StoreAs::f32);
  };
  nk::Progress progress("train", o.stop_at > 0 ? std::min(o.stop_at, o.steps) : o.steps);
  Batch b;
  double smooth = std::nan("");
  nk::Stopwatch since_log;
  int64_t tokens_since_log = 0;
  const int64_t stop = o.stop_at > 0 ? std::min(o.stop_at, o.steps) : o.steps;
  if (o.stop_at > 0 && o.checkpoint.empty()) throw nk::usage_error("train: --stop-at pauses a run: give --checkpoint to resume it");
  for (int64_t step = trainer.steps(); step < stop; ++step) {
    const nk::lm::StepStats st = trainer.step(o.accum, [&](int64_t k, nk::lm::Workspace& ws, nk::lm::TokenBatch& batch) {
      make_batch(sampler, c, tok.mask(), seed, step * o.accum + k, b);
      batch = {b.input, b.offsets};
      trainer.model().forward(batch, ws);
      std::vector<float> w(b.weights);
      for (float& x : w) x /= static_cast<float>(o.accum);
      nk::lm::Target t;
      t.token = b.targets.data();
      const double loss = nk::lm::loss_and_grad(nk::lm::Divergence::cross_entropy, ws.logits(), ws.logit_rows(), c.vocab, t,
                                                {b.rows, w}, nullptr, ws.dlogits());
      return std::pair<double, int64_t>{loss, batch.rows()};
    });
    if (!std::isfinite(st.loss)) throw nk::Error(nk::Exit::runtime, "train: the loss became " + std::to_string(st.loss) + " at step " + std::to_string(step) + " (lower --lr)");
    tokens_done += st.tokens;
    tokens_since_log += st.tokens;
    smooth = std::isnan(smooth) ? st.loss : 0.9 * smooth + 0.1 * st.loss;
    progress.update(step + 1);
    const bool last = step + 1 == stop;
    double vloss = std::nan("");
    if (val && ((step + 1) % o.eval_every == 0 || last)) vloss = validation_loss(trainer.model(), *val, tok.mask(), o.eval_batches, *val_ws);
    if ((step + 1) % o.log_every == 0 || last || !std::isnan(vloss)) {
      const double rate = static_cast<double>(tokens_since_log) / since_log.seconds();
      if (log) {
        char line[256];
        std::snprintf(line, sizeof line, "%lld\t%lld\t%.6f\t%.6g\t%.6g\t%.1f\t%.6f\n", static_cast<long long>(step + 1),
                      static_cast<long long>(tokens_done), st.loss, st.lr, st.grad_norm, rate, vloss);
        log << line << std::flush;
      }
      if (!progress.shown() || !std::isnan(vloss))
        spdlog::info("step {}/{}: loss {:.4f} (smoothed {:.4f}){}, lr {:.3g}, grad norm {:.3g}, {:.0f} tokens/s", step + 1,
                     o.steps, st.loss, smooth, std::isnan(vloss) ? std::string() : fmt::format(", validation {:.4f}", vloss),
                     st.lr, st.grad_norm, rate);
      since_log.restart();
      tokens_since_log = 0;
    }
    if (!o.checkpoint.empty() && o.checkpoint_every > 0 && (step + 1) % o.checkpoint_every == 0 && !last) {
      const nk::PublishNow now;  // there to resume from if the run dies before its end
      save_state(o.checkpoint);
    }
  }
  progress.finish();
  if (!o.checkpoint.empty()) save_state(o.checkpoint);
  nk::lm::save_checkpoint(o.output, weights, &tok, nullptr, o.dtype == "bfloat16" ? nk::lm::StoreAs::bf16 : nk::lm::StoreAs::f32);
  spdlog::info("train: wrote {} ({} steps, {} tokens)", o.output, trainer.steps(), tokens_done);
}

}  // namespace nklm
