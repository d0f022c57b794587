// testbed.cpp - a real server in one process (sagesched(1) TESTBED): the
// engine thread runs the scheduler that simulate runs, but each iteration is
// one batched nk-lm forward over its prefill chunks and decode tokens through
// a paged KV cache, timed by the clock; a client thread submits requests at
// their trace times.
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "nk/error.hpp"
#include "nk/log.hpp"
#include "nk/lm/checkpoint.hpp"
#include "nk/lm/generate.hpp"
#include "nk/lm/model.hpp"
#include "nk/rng.hpp"
#include "nk/shipped.hpp"
#include "nk/timer.hpp"
#include "sagesched/engine.hpp"

namespace sage {

namespace {

using Clock = std::chrono::steady_clock;

/// The client: from its own thread, submits every request whose arrival has
/// come (seconds after t0), and wakes the engine when it waits for work.
class Client {
 public:
  Client(const std::vector<double>& arrival, Clock::time_point t0) : arrival_(arrival), t0_(t0), thread_([this] { run(); }) {}
  ~Client() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  size_t submitted() const { return submitted_.load(std::memory_order_acquire); }
  /// Blocks until more than 'count' requests are submitted.
  void wait_beyond(size_t count) {
    std::unique_lock lock(mutex_);
    wake_.wait(lock, [&] { return submitted_.load(std::memory_order_acquire) > count || stop_; });
  }
  /// The longest a submission came after its arrival time (s).
  double lateness() const {
    std::lock_guard lock(mutex_);
    return lateness_;
  }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    const size_t n = arrival_.size();
    for (size_t i = 0; i < n;) {
      const auto due = t0_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(arrival_[i]));
      if (wake_.wait_until(lock, due, [&] { return stop_; })) return;
      const double now = nk::seconds_since(t0_);
      size_t j = i + 1;
      while (j < n && arrival_[j] <= now) ++j;
      lateness_ = std::max(lateness_, now - arrival_[i]);
      submitted_.store(j, std::memory_order_release);
      i = j;
      wake_.notify_all();
    }
  }

  const std::vector<double>& arrival_;
  const Clock::time_point t0_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  double lateness_ = 0;
  std::atomic<size_t> submitted_{0};
  std::thread thread_;  // last: starts once everything above exists
};

/// The engine's backend: nk-lm with paged KV, timed by the clock.
class ModelBackend final : public Backend {
 public:
  ModelBackend(const nk::lm::Model& model, std::vector<std::vector<int32_t>> prompts, const Server& server, int64_t pages,
               const nk::lm::SamplerOptions& sampler, uint64_t seed)
      : model_(model),
        vocab_(model.config().vocab),
        ws_(model.config(), {server.max_tokens, model.config().max_seq, false}),
        cache_(model.config(), {server.block, pages, std::max<int64_t>(1, std::min<int64_t>(pages, static_cast<int64_t>(prompts.size())))}),
        sequence_(std::move(prompts)),
        slot_(sequence_.size(), -1),
        sampler_(sampler),
        rng_(seed) {}

  /// The clock starts and the client submits from here on.
  void open(const std::vector<double>& arrival) {
    t0_ = Clock::now();
    client_ = std::make_unique<Client>(arrival, t0_);
  }
  double lateness() const { return client_ ? client_->lateness() : 0; }
  int64_t kv_bytes() const { return cache_.bytes(); }

  double start(double /*now*/) override {
    visible_ = client_->submitted();
    return nk::seconds_since(t0_);
  }
  bool arrived(const Trace& /*trace*/, size_t i, double /*now*/) const override { return i < visible_; }
  double idle(const Trace& /*trace*/, double /*now*/, size_t next) override {
    client_->wait_beyond(next);
    visible_ = client_->submitted();
    return nk::seconds_since(t0_);
  }
  bool closed_form() const override { return false; }

  double execute(double now, const std::vector<Member>& batch, const Work& /*w*/) override {
    tokens_.clear();
    offsets_.assign(1, 0);
    slots_.clear();
    for (const Member& m : batch) {
      const RequestState& s = *m.state;
      const std::vector<int32_t>& seq = sequence_[static_cast<size_t>(m.id)];
      int32_t& slot = slot_[static_cast<size_t>(m.id)];
      if (slot < 0) slot = cache_.open();
      if (m.chunk > 0) {
        // Prefill (or recompute) of the sequence so far: prompt, then what it generated.
        tokens_.insert(tokens_.end(), seq.begin() + s.prefilled, seq.begin() + s.prefilled + m.chunk);
      } else {
        tokens_.push_back(seq.back());  // the last token emitted, not yet in KV
      }
      offsets_.push_back(static_cast<int64_t>(tokens_.size()));
      slots_.push_back(slot);
    }
    model_.forward({tokens_, offsets_, {}, slots_}, ws_, {nk::lm::LogitRows::last, &cache_});
    for (size_t k = 0; k < batch.size(); ++k) {
      const Member& m = batch[k];
      const RequestState& s = *m.state;
      const bool emits = m.chunk == 0 || s.prefilled + m.chunk == s.target;
      // The last token is never fed back; EOS is a token like any other.
      if (!emits || s.generated + 1 >= s.output) continue;
      std::vector<int32_t>& seq = sequence_[static_cast<size_t>(m.id)];
      const double u = rng_.split(static_cast<uint64_t>(m.id)).split(seq.size()).uniform();
      seq.push_back(nk::lm::sample(ws_.logits() + static_cast<int64_t>(k) * vocab_, vocab_, sampler_, u));
    }
    return nk::seconds_since(t0_) - now;
  }

  void released(int64_t id) override {
    int32_t& slot = slot_[static_cast<size_t>(id)];
    if (slot >= 0) cache_.close(slot);
    slot = -1;
  }

  /// A finished request's tokens: prompt then output (all but the last token).
  const std::vector<int32_t>& sequence(size_t id) const { return sequence_[id]; }

 private:
  const nk::lm::Model& model_;
  int64_t vocab_;
  nk::lm::Workspace ws_;
  nk::lm::KvCache cache_;
  std::vector<std::vector<int32_t>> sequence_;
  std::vector<int32_t> slot_;
  nk::lm::SamplerOptions sampler_;
  nk::Rng rng_;
  std::vector<int32_t> tokens_, slots_;
  std::vector<int64_t> offsets_;
  Clock::time_point t0_;
  std::unique_ptr<Client> client_;
  size_t visible_ = 0;
};

/// Request i's prompt as exactly prompt_tokens tokens: BOS, then its text's
/// tokens, repeated until long enough and cut (random ids without text: the
/// time of a step does not depend on the values).
std::vector<std::vector<int32_t>> prompt_tokens(const Trace& trace, const nk::lm::Tokenizer* tokenizer, int64_t vocab,
                                                uint64_t seed) {
  std::vector<std::vector<int32_t>> out(trace.size());
  nk::Rng rng(seed);
  for (size_t i = 0; i < trace.size(); ++i) {
    const auto p = static_cast<size_t>(trace.prompt_tokens[i]);
    std::vector<int32_t> text;
    if (tokenizer && !trace.prompt.empty()) text = tokenizer->encode(trace.prompt[i]);
    std::vector<int32_t>& seq = out[i];
    seq.reserve(p + static_cast<size_t>(trace.output_tokens[i]));
    if (tokenizer) seq.push_back(tokenizer->bos());
    nk::Rng filler = rng.split(i);
    while (seq.size() < p) {
      if (text.empty()) {
        seq.push_back(static_cast<int32_t>(filler.below(static_cast<uint64_t>(tokenizer ? 256 : vocab))));
      } else {
        for (size_t k = 0; k < text.size() && seq.size() < p; ++k) seq.push_back(text[k]);
      }
    }
    seq.resize(p);
  }
  return out;
}

}  // namespace

void testbed_verb(const TestbedOptions& o, const nk::RunEnv& env) {
  Trace trace = read_trace(o.input);
  const std::string model_path = o.model.empty() ? nk::shipped_data("lm/causal.h5") : o.model;
  const std::string profile_path =
      o.profile.empty() && o.iter_cost.empty() ? nk::shipped_data("sagesched/cpu-nklm.toml") : o.profile;
  const Profile profile = load_profile(profile_path, o.iter_cost);
  if (!(o.time_scale > 0) || !std::isfinite(o.time_scale)) throw nk::usage_error("--time-scale must be > 0");
  nk::lm::Checkpoint ck = nk::lm::load_checkpoint(model_path);
  const nk::lm::Config& c = ck.weights.config();
  if (c.mode != nk::lm::Mode::causal) {
    throw nk::input_error(model_path, "", "a masked-diffusion checkpoint: the testbed serves causal decoding");
  }
  for (size_t i = 0; i < trace.size(); ++i) {
    const int64_t p = trace.prompt_tokens[i], total = p + trace.output_tokens[i];
    if (total > c.max_seq) {
      throw nk::input_error(o.input, "/requests/output_tokens",
                            "request " + std::to_string(i) + ": prompt + output = " + std::to_string(total) +
                                " tokens, beyond the model's context of " + std::to_string(c.max_seq) +
                                " (sagesched trace --max-context " + std::to_string(c.max_seq) + ")");
    }
  }
  // Trace time x scale = wall time; every time written is in wall seconds.
  for (double& a : trace.arrival) a *= o.time_scale;
  const int64_t capacity = o.sim.server.kv_tokens > 0 ? o.sim.server.kv_tokens : profile.kv_tokens;
  if (capacity <= 0) throw nk::usage_error("testbed needs a KV capacity: --kv-tokens, or kv_tokens in the profile");
  if (capacity / o.sim.server.block < 1) throw nk::usage_error("--kv-tokens must hold at least one block");
  const int64_t pages = capacity / o.sim.server.block;
  if (pages * o.sim.server.block * c.n_layers * 2 * c.n_kv_heads * c.head_dim * 4 > (int64_t{1} << 36)) {
    throw nk::usage_error("--kv-tokens " + std::to_string(capacity) + ": the cache would pass 64 GiB");
  }
  const nk::lm::Model model(ck.weights);
  nk::lm::SamplerOptions sampler;
  sampler.greedy = o.temperature == 0;
  if (!sampler.greedy) sampler.temperature = o.temperature;
  ModelBackend backend(model, prompt_tokens(trace, ck.tokenizer ? &*ck.tokenizer : nullptr, c.vocab, env.seed), o.sim.server,
                       pages, sampler, env.seed);
  SimOptions sim = o.sim;
  sim.server.kv_tokens = pages * o.sim.server.block;
  spdlog::info("testbed: {} requests over {:.1f} s, {} ({} parameters, {} thread(s)), KV {} tokens ({:.1f} MiB), policy {}",
               trace.size(), trace.arrival.back(), model_path, c.parameter_count(), env.threads, sim.server.kv_tokens,
               static_cast<double>(backend.kv_bytes()) / (1 << 20), sim.policy);
  backend.open(trace.arrival);
  SimResult r;
  try {
    r = run_engine(trace, profile, sim, env.seed, backend);
  } catch (const nk::Error& e) {
    if (e.code() == nk::Exit::input) throw nk::Error(nk::Exit::input, "input '" + nk::display_name(o.input) + "': " + e.what());
    throw;
  }
  const double lateness = backend.lateness();
  write_run(o.output, o.no_clobber, trace, r, sim, profile,
            [&](nk::h5::Writer& out) {
              out.attr("/", "measured", int64_t{1});
              out.attr("/", "model", model_path);
              out.attr("/", "threads", static_cast<int64_t>(env.threads));
              out.attr("/", "time_scale", o.time_scale);
              out.attr("/", "temperature", o.temperature);
              out.attr("/", "client_lateness", lateness);
            },
            true);
  if (lateness > 0.01) spdlog::warn("testbed: the client submitted up to {:.3f} s late (a busy machine)", lateness);
}

}  // namespace sage
