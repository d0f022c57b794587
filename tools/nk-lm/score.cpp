// score.cpp - nk-lm score: per-token log-probabilities, perplexity and bits
// per byte of a text, token ids or a corpus split; optionally the raw logits
// and the top-K logits of every position.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "nk-lm/nk_lm.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/lm/corpus.hpp"
#include "nk/lm/generate.hpp"
#include "nk/lm/loss.hpp"
#include "nk/lm/model.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"

namespace nklm {

namespace {

/// The root attributes both kinds of score share.
void write_totals(nk::h5::Writer& out, double ppl, int64_t scored, double nats, int64_t bytes) {
  out.attr("/", "perplexity", ppl);
  out.attr("/", "scored_tokens", scored);
  out.attr("/", "nats", nats);
  if (bytes > 0) {
    out.attr("/", "bits_per_byte", nats / std::log(2.0) / static_cast<double>(bytes));
    out.attr("/", "bytes", bytes);
  }
}

/// A diffusion model has no next-token probabilities: each row's answer
/// (after its prompt) gets LLaDA's Monte-Carlo bound on -log p(answer | prompt).
void score_diffusion(const ScoreOptions& o, const nk::RunEnv& env, const nk::lm::Checkpoint& ck,
                     const std::vector<std::vector<int32_t>>& rows, int64_t bytes) {
  const nk::lm::Config& c = ck.weights.config();
  const std::vector<int64_t> prompts = prompt_lengths(o.token_ids, rows.size(), o.prompt_length);
  for (size_t b = 0; b < rows.size(); ++b)
    if (prompts[b] >= static_cast<int64_t>(rows[b].size()))
      throw nk::input_error(o.token_ids.empty() ? o.text + o.corpus : o.token_ids, "/tokens",
                            "row " + std::to_string(b) + " has " + std::to_string(rows[b].size()) + " tokens, none after its prompt of " +
                                std::to_string(prompts[b]));
  const int32_t mask = ck.tokenizer ? ck.tokenizer->mask() : static_cast<int32_t>(c.vocab - 2);
  const nk::lm::Model model(ck.weights);
  const std::vector<double> nll = nk::lm::diffusion_nll(model, rows, prompts, mask, o.samples, env.seed, o.batch);
  int64_t width = 0, scored = 0;
  double nats = 0;
  std::vector<int64_t> answer(rows.size());
  for (size_t b = 0; b < rows.size(); ++b) {
    width = std::max<int64_t>(width, static_cast<int64_t>(rows[b].size()));
    answer[b] = static_cast<int64_t>(rows[b].size()) - prompts[b];
    scored += answer[b], nats += nll[b];
  }
  const auto B = static_cast<int64_t>(rows.size());
  const double ppl = std::exp(nats / static_cast<double>(scored));
  nk::h5::Writer out(o.output, kScoreSchema, o.no_clobber);
  out.write("/tokens", pad_rows(rows, width).data(), {B, width}, "B,T");
  out.write("/nll", nll.data(), {B}, "B", "nats");
  out.write("/answer_tokens", answer.data(), {B}, "B");
  out.write("/prompt_lengths", prompts.data(), {B}, "B");
  out.attr("/", "likelihood", std::string("diffusion bound"));
  out.attr("/", "samples", o.samples);
  write_totals(out, ppl, scored, nats, bytes);
  out.commit();
  spdlog::info("score: {} answer tokens in {} rows, perplexity <= {:.3f} (LLaDA's bound, {} draws a row)", scored, B, ppl, o.samples);
}

}  // namespace

void score(const ScoreOptions& o, const nk::RunEnv& env) {
  const int sources = !o.text.empty() + !o.token_ids.empty() + !o.corpus.empty();
  if (sources != 1) throw nk::usage_error("score: give exactly one of --text, --token-ids, --corpus");
  check_writable(o.output, o.no_clobber);
  const nk::lm::Checkpoint ck = load_model(o.model);
  const nk::lm::Config& c = ck.weights.config();
  const bool diffusion = c.mode == nk::lm::Mode::diffusion;
  if (diffusion && (o.logits || o.top_k > 0))
    throw nk::usage_error("score: " + o.model + " is a diffusion model; --logits and --top-k are next-token outputs of a causal one");
  if (o.top_k < 0 || o.top_k > c.vocab) throw nk::usage_error("score: --top-k must be in 0.." + std::to_string(c.vocab));
  std::vector<std::vector<int32_t>> rows;
  int64_t bytes = 0;  // of the text scored, when there is text
  if (!o.token_ids.empty()) {
    rows = read_token_rows(o.token_ids, c.vocab, c.max_seq);
  } else {
    if (!ck.tokenizer) throw nk::usage_error("score: " + o.model + " has no tokenizer; give --token-ids");
    const nk::lm::Tokenizer& tok = *ck.tokenizer;
    if (!o.text.empty()) {
      std::ifstream f(o.text, std::ios::binary);
      if (!f) throw nk::io_error(o.text, "cannot read");
      const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      bytes = static_cast<int64_t>(text.size());
      add_windows(tok.encode(text), tok.bos(), c.max_seq, rows);
    } else {
      bytes = corpus_rows(o.corpus, o.split, tok, c.max_seq, env.shard, "score", rows);
    }
  }
  if (diffusion) {
    score_diffusion(o, env, ck, rows, bytes);
    return;
  }
  int64_t width = 0;
  for (const auto& r : rows) width = std::max<int64_t>(width, static_cast<int64_t>(r.size()));
  const int64_t B = static_cast<int64_t>(rows.size()), V = c.vocab, K = o.top_k;
  if (o.logits && static_cast<double>(B) * static_cast<double>(width) * static_cast<double>(V) * 4 > 8e9)
    throw nk::usage_error("score: --logits would write " + std::to_string(B * width * V * 4 / 1000000) + " MB; score fewer rows or use --top-k");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> logprob(static_cast<size_t>(B * width), nan), logits, topv;
  std::vector<int32_t> topi;
  if (o.logits) logits.assign(static_cast<size_t>(B * width * V), nan);
  if (K > 0) topi.assign(static_cast<size_t>(B * width * K), -1), topv.assign(static_cast<size_t>(B * width * K), nan);
  const nk::lm::Model model(ck.weights);
  const int64_t per = std::max<int64_t>(1, o.batch);
  nk::lm::Workspace ws(c, {per * width, width, false});
  nk::Progress progress("score", B);
  std::vector<int32_t> tokens, ids;
  std::vector<int64_t> offsets;
  std::vector<float> lp, vals;
  double nats = 0;
  int64_t scored = 0;
  for (int64_t first = 0; first < B; first += per) {
    const int64_t last = std::min(B, first + per);
    tokens.clear(), offsets.assign(1, 0);
    for (int64_t b = first; b < last; ++b) {
      tokens.insert(tokens.end(), rows[static_cast<size_t>(b)].begin(), rows[static_cast<size_t>(b)].end());
      offsets.push_back(static_cast<int64_t>(tokens.size()));
    }
    const nk::lm::TokenBatch batch{tokens, offsets};
    model.forward(batch, ws);
    lp.resize(tokens.size());
    nk::lm::next_token_logprob(ws.logits(), V, batch, lp.data());
    if (K > 0) {
      ids.resize(tokens.size() * static_cast<size_t>(K)), vals.resize(tokens.size() * static_cast<size_t>(K));
      nk::lm::top_k(ws.logits(), batch.rows(), V, K, ids.data(), vals.data());
    }
    for (int64_t b = first; b < last; ++b) {
      const int64_t begin = offsets[static_cast<size_t>(b - first)], n = offsets[static_cast<size_t>(b - first + 1)] - begin;
      for (int64_t t = 0; t < n; ++t) {
        const float x = lp[static_cast<size_t>(begin + t)];
        logprob[static_cast<size_t>(b * width + t)] = x;
        if (t > 0) nats -= x, ++scored;
        if (o.logits) std::copy_n(ws.logits() + (begin + t) * V, V, logits.begin() + (b * width + t) * V);
        if (K > 0) {
          std::copy_n(ids.begin() + (begin + t) * K, K, topi.begin() + (b * width + t) * K);
          std::copy_n(vals.begin() + (begin + t) * K, K, topv.begin() + (b * width + t) * K);
        }
      }
    }
    progress.update(last);
  }
  progress.finish();
  const double ppl = scored ? std::exp(nats / static_cast<double>(scored)) : std::nan("");
  nk::h5::Writer out(o.output, kScoreSchema, o.no_clobber);
  out.write("/tokens", pad_rows(rows, width).data(), {B, width}, "B,T");
  out.allow_nonfinite("/logprob");  // NaN past each sequence's end
  out.write("/logprob", logprob.data(), {B, width}, "B,T", "nats");
  out.allow_nonfinite("/logits");  // NaN past each sequence's end
  if (o.logits) out.write("/logits", logits.data(), {B, width, V}, "B,T,V");
  if (K > 0) {
    out.write("/topk/ids", topi.data(), {B, width, K}, "B,T,K");
    out.allow_nonfinite("/topk/logits");  // NaN past each sequence's end
    out.write("/topk/logits", topv.data(), {B, width, K}, "B,T,K");
  }
  write_totals(out, ppl, scored, nats, bytes);
  out.commit();
  if (bytes > 0)
    spdlog::info("score: {} tokens, perplexity {:.3f}, {:.4f} bits per byte", scored, ppl, nats / std::log(2.0) / static_cast<double>(bytes));
  else
    spdlog::info("score: {} tokens, perplexity {:.3f}", scored, ppl);
}

}  // namespace nklm
