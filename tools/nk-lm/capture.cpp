// capture.cpp - nk-lm capture: what the hooks see while the model runs over
// a prompt (or, for a diffusion model, over a whole denoising trajectory),
// written for the tools that read activations, attention and key caches.
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "nk-lm/nk_lm.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/lm/capture.hpp"
#include "nk/lm/generate.hpp"
#include "nk/log.hpp"
#include "nk/lm/corpus.hpp"
#include "nk/progress.hpp"
#include "nk/shard.hpp"
#include "nk/rng.hpp"

namespace nklm {

namespace {

/// --corpus: every row (add_windows) of this shard's documents through one
/// forward each, the records of row r at step r, written by write_capture_rows.
void capture_corpus(const CaptureOptions& o, const nk::RunEnv& env, const nk::lm::Checkpoint& ck) {
  const nk::lm::Config& c = ck.weights.config();
  if (!ck.tokenizer) throw nk::usage_error("capture: " + o.model + " has no tokenizer to check the corpus against");
  std::vector<std::vector<int32_t>> rows;
  if (o.stream) {
    // Long-context rows: the split's documents concatenated (EOS between), cut into whole windows of the context.
    const nk::lm::Corpus corpus = nk::lm::Corpus::open(o.corpus);
    if (corpus.tokenizer().fingerprint() != ck.tokenizer->fingerprint())
      throw nk::usage_error("capture: " + o.corpus + " was cut with another tokenizer than the model's");
    const std::vector<int32_t> stream = corpus.stream(o.split == "train" ? nk::lm::Split::train : nk::lm::Split::validation);
    const auto [first, last] = nk::shard_range(env.shard, static_cast<int64_t>(stream.size()) / c.max_seq);
    for (int64_t w = first; w < last; ++w)
      rows.emplace_back(stream.begin() + w * c.max_seq, stream.begin() + (w + 1) * c.max_seq);
    if (rows.empty())
      throw nk::usage_error("capture: the " + o.split + " split of " + o.corpus + " holds no window of " +
                            std::to_string(c.max_seq) + " tokens in this shard");
  } else {
    corpus_rows(o.corpus, o.split, *ck.tokenizer, c.max_seq, env.shard, "capture", rows);
  }
  if (o.max_rows > 0 && static_cast<int64_t>(rows.size()) > o.max_rows) rows.resize(static_cast<size_t>(o.max_rows));
  int64_t tokens = 0;
  for (const auto& row : rows) tokens += static_cast<int64_t>(row.size());
  const int64_t kept = o.layers.empty() ? c.n_layers + 1 : static_cast<int64_t>(o.layers.size());
  const double bytes = 4.0 * static_cast<double>(tokens) * static_cast<double>(kept) *
                       static_cast<double>(o.resid_only ? c.d_model : 2 * c.d_model + (c.n_heads + 2 * c.n_kv_heads) * c.head_dim);
  if (bytes > 16e9)  // held in memory until written: shard the corpus instead
    throw nk::usage_error("capture: " + std::to_string(static_cast<int64_t>(bytes / 1e6)) +
                          " MB for this shard; take fewer layers or a smaller --shard");
  const nk::lm::Model model(ck.weights);
  nk::lm::CaptureObserver observer(c, o.layers, o.resid_only);
  nk::lm::Workspace ws(c, {c.max_seq, c.max_seq, false});
  nk::Progress progress("capture", static_cast<int64_t>(rows.size()));
  for (size_t r = 0; r < rows.size(); ++r) {
    const std::vector<int64_t> offsets{0, static_cast<int64_t>(rows[r].size())};
    model.forward({rows[r], offsets}, ws, {nk::lm::LogitRows::last, nullptr, &observer, static_cast<int64_t>(r)});
    progress.update(static_cast<int64_t>(r) + 1);
  }
  nk::h5::Writer out(o.output, kCaptureSchema, o.no_clobber);
  nk::lm::write_capture_rows(out, observer, rows);
  nk::lm::write_query_key_weights(out, ck.weights, observer);
  out.attr("/", "corpus", o.corpus);
  out.attr("/", "split", o.split);
  out.attr("/", "shard", env.shard.text());
  out.commit();
  spdlog::info("capture: {} rows, {} tokens of {} ({} split, shard {})", rows.size(), tokens, o.corpus, o.split,
               env.shard.text());
}

}  // namespace

void capture(const CaptureOptions& o, const nk::RunEnv& env) {
  if (!o.text.empty() + !o.token_ids.empty() + !o.corpus.empty() != 1)
    throw nk::usage_error("capture: give exactly one of --text, --token-ids, --corpus");
  if (!o.corpus.empty() && (!o.trajectory.empty() || !o.louver.empty() || o.output.empty()))
    throw nk::usage_error("capture: --corpus writes -o only (no --trajectory, no --louver)");
  for (const std::string* path : {&o.output, &o.trajectory, &o.louver}) check_writable(*path, o.no_clobber);
  const nk::lm::Checkpoint ck = load_model(o.model);
  const nk::lm::Config& c = ck.weights.config();
  if (!o.corpus.empty()) return capture_corpus(o, env, ck);
  std::vector<int32_t> tokens;
  if (!o.token_ids.empty()) {
    const auto rows = read_token_rows(o.token_ids, c.vocab, c.max_seq);
    if (rows.size() != 1) throw nk::input_error(o.token_ids, "/tokens", "capture takes one sequence ([T] or [1,T])");
    tokens = rows[0];
  } else {
    if (!ck.tokenizer) throw nk::usage_error("capture: " + o.model + " has no tokenizer; give --token-ids");
    std::ifstream f(o.text, std::ios::binary);
    if (!f) throw nk::io_error(o.text, "cannot read");
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    tokens = {ck.tokenizer->bos()};
    const auto ids = ck.tokenizer->encode(text);
    tokens.insert(tokens.end(), ids.begin(), ids.end());
    if (static_cast<int64_t>(tokens.size()) > c.max_seq)
      throw nk::input_error(o.text, "", std::to_string(tokens.size()) + " tokens (with BOS) pass the model's context of " +
                                            std::to_string(c.max_seq) + "; capture a shorter text");
  }
  const nk::lm::Model model(ck.weights);
  nk::lm::CaptureObserver observer(c, o.layers);
  std::vector<int32_t> sequence = tokens;
  if (!o.trajectory.empty()) {
    if (c.mode != nk::lm::Mode::diffusion)
      throw nk::usage_error("capture: --trajectory follows a diffusion model's denoising; " + o.model + " is causal");
    nk::lm::DiffusionOptions d;
    d.gen_length = o.max_new;
    d.block = o.block > 0 ? o.block : o.max_new;
    d.steps = o.steps > 0 ? o.steps : o.max_new;
    d.temperature = 0;
    d.seed = nk::mix64(env.seed);
    d.mask = ck.tokenizer ? ck.tokenizer->mask() : static_cast<int32_t>(c.vocab - 2);
    d.observer = &observer;
    sequence = nk::lm::sample_diffusion(model, tokens, d);
    nk::h5::Writer traj(o.trajectory, "dllm-sparse.trajectory/1", o.no_clobber);
    nk::lm::write_trajectory(traj, observer);
    traj.attr("/", "prompt_length", static_cast<int64_t>(tokens.size()));
    traj.commit();
  } else {
    nk::lm::Workspace ws(c, {static_cast<int64_t>(tokens.size()), static_cast<int64_t>(tokens.size()), false});
    const std::vector<int64_t> offsets{0, static_cast<int64_t>(tokens.size())};
    model.forward({tokens, offsets}, ws, {nk::lm::LogitRows::last, nullptr, &observer, 0});
  }
  if (!o.louver.empty()) {
    nk::h5::Writer kv(o.louver, "louver-index.kv/1", o.no_clobber);
    nk::lm::write_louver_kv(kv, observer, o.louver_layer, o.louver_queries);
    kv.commit();
  }
  if (!o.output.empty()) {
    nk::h5::Writer out(o.output, kCaptureSchema, o.no_clobber);
    nk::lm::write_capture(out, observer, sequence);
    nk::lm::write_query_key_weights(out, ck.weights, observer);
    out.commit();
  }
  spdlog::info("capture: {} tokens, {} records (layer x step)", sequence.size(), observer.records().size());
}

}  // namespace nklm
