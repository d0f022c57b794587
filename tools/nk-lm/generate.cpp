// generate.cpp - nk-lm generate: continuations of prompts (text lines, or
// token ids) by the causal sampler with a KV cache, or by LLaDA's masked
// diffusion sampler.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "nk-lm/nk_lm.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/lm/block_mask_attention.hpp"
#include "nk/lm/generate.hpp"
#include "nk/lm/key_subset_attention.hpp"
#include "nk/lm/loss.hpp"
#include "nk/log.hpp"
#include "nk/rng.hpp"
#include "nk/timer.hpp"

namespace nklm {

namespace {

std::vector<std::string> read_prompt_lines(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream file;
  std::istream* in = &std::cin;
  if (!path.empty() && path != "-") {
    file.open(path, std::ios::binary);
    if (!file) throw nk::io_error(path, "cannot read the prompts");
    in = &file;
  }
  std::string line;
  while (std::getline(*in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  if (lines.empty()) throw nk::input_error(path.empty() || path == "-" ? "-" : path, "", "no prompts (one per line)");
  return lines;
}

/// 'bytes' as a JSON string: quotes, backslashes and control characters
/// escaped, valid UTF-8 kept, each byte of invalid UTF-8 replaced by U+FFFD
/// (a byte-level model may emit half a character).
std::string json_string(std::string_view bytes) {
  std::string out = "\"";
  for (size_t i = 0; i < bytes.size();) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c < 0x20) {
      const char* named = c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : nullptr;
      if (named) {
        out += named;
      } else {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      }
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else {
      // A well-formed sequence: lead byte, then 1-3 continuation bytes, no overlong or surrogate forms.
      const size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
      bool ok = n > 0 && i + n <= bytes.size();
      for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(bytes[i + k]) & 0xc0) == 0x80;
      if (ok && n == 3) {
        const auto c1 = static_cast<unsigned char>(bytes[i + 1]);
        ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0);
      }
      if (ok && n == 4) {
        const auto c1 = static_cast<unsigned char>(bytes[i + 1]);
        ok = !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90);
      }
      if (ok) {
        out.append(bytes.substr(i, n));
        i += n;
      } else {
        out += "\xef\xbf\xbd";  // U+FFFD
        ++i;
      }
    }
  }
  return out + "\"";
}

/// Per-step KL values: their mean, maximum and the spikes above a level.
struct KlSummary {
  int64_t steps = 0, spikes = 0;
  double sum = 0, max = 0;
  void add(double v, double level) {
    ++steps, sum += v, max = std::max(max, v);
    if (v > level) ++spikes;
  }
  double mean() const { return steps ? sum / static_cast<double>(steps) : 0.0; }
};

}  // namespace

void generate(const GenerateOptions& o, const nk::RunEnv& env) {
  check_writable(o.output, o.no_clobber);
  const nk::lm::Checkpoint ck = load_model(o.model);
  const nk::lm::Config& c = ck.weights.config();
  const bool from_ids = !o.token_ids.empty();
  if (!from_ids && !ck.tokenizer) throw nk::usage_error("generate: " + o.model + " has no tokenizer; give --token-ids");
  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::string> lines;
  std::vector<std::vector<int32_t>> references;  // --reference: each row's answer
  if (o.reference && (!from_ids || c.mode != nk::lm::Mode::diffusion))
    throw nk::usage_error("generate: --reference forces a diffusion model's sampler along the answers of --token-ids rows");
  if (from_ids) {
    prompts = read_token_rows(o.token_ids, c.vocab, c.max_seq);
    if (o.reference) {
      const std::vector<int64_t> lengths = prompt_lengths(o.token_ids, prompts.size(), o.prompt_length);
      const int32_t mask = ck.tokenizer ? ck.tokenizer->mask() : static_cast<int32_t>(c.vocab - 2);
      for (size_t b = 0; b < prompts.size(); ++b) {
        const auto P = lengths[b], have = static_cast<int64_t>(prompts[b].size());
        if (P < 1 || P + o.max_new > have)
          throw nk::input_error(o.token_ids, "/tokens", "row " + std::to_string(b) + " has " + std::to_string(have) + " tokens; --reference needs its prompt of " +
                                                           std::to_string(P) + " and an answer of --max-new " + std::to_string(o.max_new));
        references.emplace_back(prompts[b].begin() + P, prompts[b].begin() + P + o.max_new);
        for (int32_t t : references.back())
          if (t == mask) throw nk::input_error(o.token_ids, "/tokens", "row " + std::to_string(b) + "'s answer holds the [MASK] id");
        prompts[b].resize(static_cast<size_t>(P));
      }
    }
  } else {
    lines = read_prompt_lines(o.prompts);
    for (const std::string& line : lines) {
      std::vector<int32_t> ids{ck.tokenizer->bos()};
      const std::vector<int32_t> text = ck.tokenizer->encode(line);
      ids.insert(ids.end(), text.begin(), text.end());
      prompts.push_back(std::move(ids));
    }
  }
  std::unique_ptr<nk::lm::BlockMaskAttention> sparse;
  if (!o.sparse.name.empty()) {
    if (c.mode != nk::lm::Mode::diffusion) throw nk::usage_error("generate: --sparse-policy needs a diffusion model (" + o.model + " is causal)");
    nk::dllm::check_policy(o.sparse, true, {{"policy", "--sparse-policy"}, {"block", "--sparse-block"}, {"score", "--sparse-score"},
                                            {"samples", "--sparse-samples"}});
    sparse = std::make_unique<nk::lm::BlockMaskAttention>(c, o.sparse);
  }
  if ((!o.keys.method.empty() || o.divergence) && c.mode != nk::lm::Mode::causal)
    throw nk::usage_error(std::string("generate: ") + (o.divergence ? "--divergence" : "--key-index") + " needs a causal model (" +
                          o.model + " is diffusion)");
  std::unique_ptr<nk::lm::KeySelector> selector;
  std::unique_ptr<nk::lm::KeySubsetAttention> indexed;
  if (!o.keys.method.empty()) {
    if (o.keys.method != "louver" && (o.keys.has_threshold || o.keys.mass > 0 || o.keys.topk > 0))
      throw nk::usage_error("generate: --threshold, --mass and --topk-oracle set Louver's T (--key-index louver)");
    if (o.keys.method == "louver" && static_cast<int>(o.keys.has_threshold) + static_cast<int>(o.keys.mass > 0) + static_cast<int>(o.keys.topk > 0) != 1)
      throw nk::usage_error("generate: --key-index louver needs exactly one of --threshold, --mass and --topk-oracle");
    nk::lm::KeySelectorOptions k = o.keys;
    k.seed = env.seed;
    selector = nk::lm::make_key_selector(k, c.head_dim);
    indexed = std::make_unique<nk::lm::KeySubsetAttention>(c, selector.get(), std::min<int64_t>(o.batch, static_cast<int64_t>(prompts.size())),
                                                            o.measure_missed);
  }
  const nk::lm::Model model(ck.weights);
  const int32_t eos = ck.tokenizer && !o.ignore_eos ? ck.tokenizer->eos() : -1;
  std::vector<std::vector<int32_t>> continuations(prompts.size());
  nk::Stopwatch clock;
  int64_t made = 0;
  nk::lm::ShadowStats shadow;  // --teacher-forced
  nk::lm::ReferenceStats reference;  // --reference
  std::vector<std::vector<float>> logprobs;  // --divergence: [b] -> [new tokens, vocab]
  double first_logits = -1;                  // causal: seconds to the first logits (the prefill)
  if (c.mode == nk::lm::Mode::causal) {
    nk::lm::GenerateOptions g;
    g.max_new = o.max_new;
    g.sampler.greedy = o.greedy;
    g.sampler.temperature = o.temperature;
    g.sampler.top_k = o.top_k;
    g.sampler.top_p = o.top_p;
    g.seed = env.seed;
    g.eos = eos;
    g.batch = o.batch;
    g.attention = indexed.get();
    // --divergence keeps each step's log-softmax; the first logits time the prefill.
    if (o.divergence) logprobs.assign(prompts.size(), {});
    g.on_logits = [&](size_t b, int64_t, const float* row) {
      if (first_logits < 0) first_logits = clock.seconds();
      if (!o.divergence) return;
      std::vector<float>& lp = logprobs[b];
      lp.resize(lp.size() + static_cast<size_t>(c.vocab));
      nk::lm::log_softmax_rows(row, 1, c.vocab, lp.data() + lp.size() - static_cast<size_t>(c.vocab));
    };
    continuations = nk::lm::generate_causal(model, prompts, g);
  } else {
    if (!ck.tokenizer && c.vocab < 1) throw nk::usage_error("generate: no [MASK] id");
    nk::lm::DiffusionOptions d;
    d.gen_length = o.max_new;
    d.block = o.block > 0 ? o.block : o.max_new;
    d.steps = o.steps > 0 ? o.steps : o.max_new;
    d.temperature = o.greedy ? 0.0 : o.temperature;
    d.random_remasking = o.random_remasking;
    d.mask = ck.tokenizer ? ck.tokenizer->mask() : static_cast<int32_t>(c.vocab - 2);
    if (o.teacher_forced) {
      d.shadow = sparse.get(), d.shadow_stats = &shadow;
    } else {
      d.attention = sparse.get();
    }
    if (o.reference) d.reference_stats = &reference;
    for (size_t b = 0; b < prompts.size(); ++b) {
      d.seed = nk::mix64(env.seed + b);
      if (o.reference) d.reference = references[b];
      if (sparse) sparse->reset();
      const std::vector<int32_t> x = nk::lm::sample_diffusion(model, prompts[b], d);
      continuations[b].assign(x.begin() + static_cast<std::ptrdiff_t>(prompts[b].size()), x.end());
      // The answer ends at its first EOS, as a causal one does.
      for (size_t t = 0; t < continuations[b].size(); ++t)
        if (continuations[b][t] == eos) {
          continuations[b].resize(t + 1);
          break;
        }
    }
  }
  const double seconds = clock.seconds();
  for (const auto& cont : continuations) made += static_cast<int64_t>(cont.size());
  spdlog::info("generate: {} sequences, {} new tokens in {:.2f} s ({:.0f} tokens/s)", prompts.size(), made, seconds,
               static_cast<double>(made) / seconds);
  const double reference_accuracy =
      static_cast<double>(reference.correct) / static_cast<double>(std::max<int64_t>(1, reference.committed));
  if (o.reference)
    spdlog::info("generate: forced along the reference answers, {} of {} unmasked positions predicted right ({:.4f})", reference.correct,
                 reference.committed, reference_accuracy);
  std::vector<std::vector<double>> kl;  // --divergence: [b] -> [new tokens]
  if (o.divergence) kl = nk::lm::divergence_from_dense(model, prompts, continuations, logprobs);
  KlSummary kls;
  for (const auto& row : kl)
    for (double v : row) kls.add(v, o.spike_level);
  if (o.divergence)
    spdlog::info("generate: KL(dense || generated) per step: mean {:.5f}, max {:.4f} nats; {} of {} steps above {} (spikes)",
                 kls.mean(), kls.max, kls.spikes, kls.steps, o.spike_level);
  const double decode_seconds = first_logits >= 0 ? seconds - first_logits : seconds;
  const int64_t decoded = made - static_cast<int64_t>(prompts.size());  // tokens after each prompt's first
  if (indexed) {
    const auto& st = indexed->stats();
    spdlog::info("generate: --key-index {}: {:.4f} of the keys read ({} queries); append {:.3f} s, select {:.3f} s, attend {:.3f} s, "
                 "index builds {:.3f} s{}", o.keys.method, st.density(), st.queries, st.append_seconds, st.select_seconds,
                 st.attend_seconds, st.build_seconds,
                 o.measure_missed ? fmt::format("; softmax mass left out: mean {:.2e}, max {:.2e}", st.missed_sum / static_cast<double>(std::max<int64_t>(1, st.queries)), st.missed_max) : "");
  }
  int64_t anchors = 0, layer_steps = 0;
  if (sparse) {
    for (int64_t l = 0; l < c.n_layers; ++l) anchors += sparse->planner().anchors(l), layer_steps += sparse->planner().steps(l);
    const auto& st = sparse->stats();
    spdlog::info("generate: --sparse-policy {} at sparsity {}: {:.3f} of the blocks read, {} anchors in {} layer-steps; "
                 "attention {:.3f} s, planning {:.3f} s, packing {:.3f} s of {:.3f} s",
                 o.sparse.name, o.sparse.name == "dense" ? 0.0 : o.sparse.sparsity, st.density(), anchors, layer_steps,
                 st.attention_seconds, st.plan_seconds, st.pack_seconds, seconds);
    if (o.teacher_forced)
      spdlog::info("generate: teacher-forced, the policy's predictions agree with the model's at {:.4f} of {} positions, "
                   "KL {:.5f} nats a position", static_cast<double>(shadow.agreements) / static_cast<double>(std::max<int64_t>(1, shadow.predictions)),
                   shadow.predictions, shadow.kl / static_cast<double>(std::max<int64_t>(1, shadow.predictions)));
  }
  if (!o.output.empty()) {
    // /tokens [B, T + N]: prompt then continuation, -1 after an EOS (and after a shorter prompt's end).
    int64_t T = 0;
    for (const auto& p : prompts) T = std::max<int64_t>(T, static_cast<int64_t>(p.size()));
    std::vector<std::vector<int32_t>> full(prompts.size());
    std::vector<int64_t> lengths;
    for (size_t b = 0; b < prompts.size(); ++b) {
      full[b] = prompts[b];
      full[b].resize(static_cast<size_t>(T), -1);
      full[b].insert(full[b].end(), continuations[b].begin(), continuations[b].end());
      lengths.push_back(static_cast<int64_t>(prompts[b].size()));
    }
    nk::h5::Writer out(o.output, kTokensSchema, o.no_clobber);
    const auto B = static_cast<int64_t>(prompts.size());
    out.write("/tokens", pad_rows(full, T + o.max_new).data(), {B, T + o.max_new}, "B,T");
    out.write("/prompt_lengths", lengths.data(), {B}, "B");
    out.attr("/", "mode", nk::lm::mode_name(c.mode));
    out.attr("/", "max_new", o.max_new);
    out.attr("/", "seconds", seconds);
    if (o.reference) {
      out.attr("/", "reference_tokens", reference.committed);
      out.attr("/", "reference_accuracy", reference_accuracy);
    }
    if (c.mode == nk::lm::Mode::causal) {
      out.attr("/", "decode_seconds", decode_seconds);
      out.attr("/", "ms_per_token", decoded > 0 ? 1e3 * decode_seconds / static_cast<double>(decoded) : 0.0);
    }
    if (indexed) {
      const auto& st = indexed->stats();
      out.attr("/", "key_index", o.keys.method);
      if (o.keys.method == "louver") {
        if (o.keys.has_threshold) out.attr("/", "threshold", o.keys.threshold);
        if (o.keys.mass > 0) out.attr("/", "mass", o.keys.mass);
        if (o.keys.topk > 0) out.attr("/", "topk_oracle", o.keys.topk);
      }
      if (o.keys.method == "quest" || o.keys.method == "ivf") out.attr("/", "budget", o.keys.budget);
      out.attr("/", "density", st.density());
      out.attr("/", "queries", st.queries);
      out.attr("/", "append_seconds", st.append_seconds);
      out.attr("/", "select_seconds", st.select_seconds);
      out.attr("/", "attend_seconds", st.attend_seconds);
      out.attr("/", "build_seconds", st.build_seconds);
      out.attr("/", "prefill_attention_seconds", st.prefill_seconds);
      if (o.measure_missed) {
        out.attr("/", "missed_mean", st.missed_sum / static_cast<double>(std::max<int64_t>(1, st.queries)));
        out.attr("/", "missed_max", st.missed_max);
      }
    }
    if (o.divergence) {
      const auto B = static_cast<int64_t>(prompts.size());
      std::vector<double> table(static_cast<size_t>(B * o.max_new), -1.0);  // -1: no step (past an EOS)
      for (size_t b = 0; b < kl.size(); ++b) std::copy(kl[b].begin(), kl[b].end(), table.begin() + static_cast<std::ptrdiff_t>(b) * o.max_new);
      out.write("/kl", table.data(), {B, o.max_new}, "B,N");
      out.attr("/kl", "units", std::string("nats: KL(dense || generated) of step t's next-token distribution; -1 after EOS"));
      out.attr("/", "mean_kl", kls.mean());
      out.attr("/", "max_kl", kls.max);
      out.attr("/", "spikes", kls.spikes);
      out.attr("/", "spike_level", o.spike_level);
    }
    if (sparse) {
      const auto& st = sparse->stats();
      out.attr("/", "sparse_policy", o.sparse.name);
      out.attr("/", "sparsity", o.sparse.name == "dense" ? 0.0 : o.sparse.sparsity);
      out.attr("/", "sparse_block", o.sparse.block);
      out.attr("/", "density", st.density());
      out.attr("/", "anchors", anchors);
      out.attr("/", "layer_steps", layer_steps);
      out.attr("/", "attention_seconds", st.attention_seconds);
      out.attr("/", "plan_seconds", st.plan_seconds);
      if (o.teacher_forced) {
        out.attr("/", "teacher_forced", int64_t{1});
        out.attr("/", "predictions", shadow.predictions);
        out.attr("/", "agreement", static_cast<double>(shadow.agreements) / static_cast<double>(std::max<int64_t>(1, shadow.predictions)));
        out.attr("/", "kl_per_prediction", shadow.kl / static_cast<double>(std::max<int64_t>(1, shadow.predictions)));
      }
    }
    out.commit();
  }
  if (ck.tokenizer && o.output != "-" && (o.output.empty() || !from_ids)) {
    for (size_t b = 0; b < prompts.size(); ++b) {
      std::vector<int32_t> shown = continuations[b];
      const std::string text = ck.tokenizer->decode(shown);
      const std::string_view prompt = lines.empty() ? std::string_view() : std::string_view(lines[b]);
      if (o.jsonl) {
        const std::string line = "{\"prompt\": " + json_string(prompt) + ", \"completion\": " + json_string(text) + "}\n";
        std::fwrite(line.data(), 1, line.size(), stdout);
        continue;
      }
      std::fwrite(prompt.data(), 1, prompt.size(), stdout);
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fputc('\n', stdout);
    }
  }
}

}  // namespace nklm
