// generate.cpp - nk-lm generate: continuations of prompts (text lines, or
// token ids) by the causal sampler with a KV cache, or by LLaDA's masked
// diffusion sampler.
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

}  // namespace

void generate(const GenerateOptions& o, const nk::RunEnv& env) {
  check_writable(o.output, o.no_clobber);
  const nk::lm::Checkpoint ck = load_model(o.model);
  const nk::lm::Config& c = ck.weights.config();
  const bool from_ids = !o.token_ids.empty();
  if (!from_ids && !ck.tokenizer) throw nk::usage_error("generate: " + o.model + " has no tokenizer; give --token-ids");
  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::string> lines;
  if (from_ids) {
    prompts = read_token_rows(o.token_ids, c.vocab, c.max_seq);
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
  const nk::lm::Model model(ck.weights);
  const int32_t eos = ck.tokenizer && !o.ignore_eos ? ck.tokenizer->eos() : -1;
  std::vector<std::vector<int32_t>> continuations(prompts.size());
  nk::Stopwatch clock;
  int64_t made = 0;
  nk::lm::ShadowStats shadow;  // --teacher-forced
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
    for (size_t b = 0; b < prompts.size(); ++b) {
      d.seed = nk::mix64(env.seed + b);
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
