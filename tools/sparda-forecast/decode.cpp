// decode.cpp - decoding through the offload engine, replayed over a trace:
// for each position of --positions and each layer, the blocks a mode picks
// are brought to the device pool and attended over (the query's own partial
// block is the device-resident tail). Modes:
//   sync      the selector's blocks, fetched at the layer (sparse offload)
//   forecast  layer l's Forecast picks layer l+1's blocks, fetched while
//             layer l computes (layer 0: its own w_curr, fetched at once);
//             --verify also runs the selector and fetches its misses at the
//             layer, and attends over the selector's blocks (= sync)
//   infinigen as forecast, by InfiniGen's speculation
//   resident  every block on the device: the selector's, no copies
#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <tuple>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/lm/checkpoint.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "nk/shard.hpp"
#include "nk/rng.hpp"
#include "nk/timer.hpp"
#include "nk/kernels/cuda_call.hpp"
#include "sparda-forecast/decode_gpu.hpp"
#include "sparda-forecast/engine.hpp"
#include "sparda-forecast/forecast.hpp"
#include "sparda-forecast/generate.hpp"
#include "sparda-forecast/sparda.hpp"

namespace sparda {

namespace {

using Clock = std::chrono::steady_clock;

/// The blocks of one layer's selection for every sequence, as engine keys
/// (the query's own block excluded: it is the tail), and per (sequence,
/// group) the blocks in increasing order with their index among the keys
/// (-1: the tail).
struct Plan {
  std::vector<Engine::Key> keys;
  std::vector<std::vector<std::pair<int32_t, int64_t>>> blocks;  ///< [seq * Hkv + g]
};

Plan make_plan(const std::vector<std::vector<int32_t>>& selection, int64_t layer, int64_t t, int64_t Hkv, int64_t K,
               int64_t block) {
  Plan p;
  const int64_t S = static_cast<int64_t>(selection.size()), own = t / block;
  p.blocks.resize(static_cast<size_t>(S * Hkv));
  for (int64_t s = 0; s < S; ++s)
    for (int64_t g = 0; g < Hkv; ++g) {
      auto& list = p.blocks[static_cast<size_t>(s * Hkv + g)];
      for (int64_t e = 0; e < K; ++e) {
        const int32_t j = selection[static_cast<size_t>(s)][static_cast<size_t>(g * K + e)];
        if (j < 0) continue;
        if (j == own) {
          list.push_back({j, -1});
        } else {
          list.push_back({j, static_cast<int64_t>(p.keys.size())});
          p.keys.push_back({static_cast<int32_t>(s), static_cast<int32_t>(layer), static_cast<int32_t>(g), j});
        }
      }
      std::sort(list.begin(), list.end());
    }
  return p;
}

struct Run {
  std::vector<std::vector<float>> out;  ///< per layer [S, Hq, P, d]
  std::vector<double> step_s, step_bytes;
  EngineStats stats;
  double select_s = 0, attend_s = 0, wall_s = 0;
};

struct Replay {
  const Trace& trace;
  const DecodeOptions& o;
  std::vector<Target> tg;             ///< per layer: its q, k, pooled keys and (for layer m) the attn_in of m-1
  std::vector<std::vector<float>> v;  ///< per layer, sequence-major
  const Forecast* fc = nullptr;
  std::vector<Speculator> sp;
  const nk_cuda_offload* gpu = nullptr;  ///< --device cuda: the offload family
  int64_t begin = 0, end = 0;
  int64_t s0 = 0, s1 = 0;  ///< the sequences replayed (--shard); index i below is sequence s0 + i

  /// The selection of target layer m at t for every sequence: [Hkv * K] each.
  std::vector<std::vector<int32_t>> select(int64_t m, int64_t t, const Scorer& by, const GpuReplay* dev) const {
    if (dev && !by.infinigen) return dev->select(m, t, by, o.selector);
    std::vector<std::vector<int32_t>> out;
    for (int64_t s = s0; s < s1; ++s)
      out.push_back(t < trace.length(s)
                        ? select_layer(trace, tg[static_cast<size_t>(m)], o.selector, by, s, t, t + 1)
                        : std::vector<int32_t>(static_cast<size_t>(trace.kv_heads * o.selector.width()), -1));
    return out;
  }
  Scorer scorer(Kind kind, int64_t m) const {
    if (kind == Kind::forecast) return {&fc->wf[static_cast<size_t>(m)], nullptr};
    if (kind == Kind::infinigen) return {nullptr, &sp[static_cast<size_t>(m)]};
    return {};
  }

  Run run(Kind kind, bool verify, double bandwidth, int64_t device_blocks) const {
    const int64_t L = trace.layers, S = s1 - s0, Hq = trace.heads, Hkv = trace.kv_heads, d = trace.head_dim,
                  K = o.selector.width(), B = o.selector.block, P = end - begin;
    const bool lookahead = kind == Kind::forecast || kind == Kind::infinigen;
    const int64_t pool = kind == Kind::resident ? 0 : device_blocks;
    const auto made = gpu ? std::make_unique<Engine>(*gpu, d, B, pool, kind == Kind::resident ? 0 : S * L * Hkv)
                          : std::make_unique<Engine>(d, B, pool, bandwidth);
    Engine& engine = *made;
    const auto dev = gpu ? std::make_unique<GpuReplay>(*gpu, engine, trace, tg, v, kind == Kind::resident, s0, s1, pool)
                         : nullptr;
    std::vector<float> gpu_out(gpu ? static_cast<size_t>(S * Hq * d) : 0);
    for (int64_t l = 0; l < L; ++l)
      for (int64_t i = 0; i < S; ++i)
        for (int64_t g = 0; g < Hkv; ++g) {
          const int64_t s = s0 + i, at = (Hkv * trace.offsets[s] + g * trace.length(s)) * d;
          engine.set_host(i, l, g, tg[static_cast<size_t>(l)].k.data() + at, v[static_cast<size_t>(l)].data() + at);
        }
    Run r;
    r.out.assign(static_cast<size_t>(L), std::vector<float>(static_cast<size_t>(S * Hq * P * d)));
    std::vector<float> q(static_cast<size_t>(Hq * d)), o1(q.size());
    nk::Progress progress("decode", P);
    const auto wall0 = Clock::now();
    for (int64_t t = begin; t < end; ++t) {
      const auto step0 = Clock::now();
      const int64_t bytes0 = engine.stats().bytes;
      std::vector<std::vector<int32_t>> ahead_sel;
      Engine::Ticket ahead;
      for (int64_t l = 0; l < L; ++l) {
        // This layer's blocks: the selector's, or what the previous layer forecast (and fetched).
        auto t0 = Clock::now();
        std::vector<std::vector<int32_t>> sel;
        Engine::Ticket ticket;
        bool fetched = false;
        if (!lookahead) {
          sel = select(l, t, {}, dev.get());
        } else if (l == 0) {
          sel = select(0, t, scorer(kind, 0), dev.get());
        } else {
          sel = std::move(ahead_sel), ticket = std::move(ahead), fetched = true;
        }
        if (verify && lookahead) {
          if (fetched) engine.release(ticket);  // the forecast's blocks stay cached: the selector's hit them
          sel = select(l, t, {}, dev.get());
          fetched = false;
        }
        // This layer's blocks go on the link first (unless the previous layer
        // sent them ahead), then the next layer's, which cross while this
        // layer computes.
        const Plan plan = make_plan(sel, l, t, Hkv, K, B);
        if (kind != Kind::resident && !fetched) ticket = engine.fetch(plan.keys);
        if (lookahead && l + 1 < L) {
          ahead_sel = select(l + 1, t, scorer(kind, l + 1), dev.get());
          ahead = engine.fetch(make_plan(ahead_sel, l + 1, t, Hkv, K, B).keys);
        }
        r.select_s += nk::seconds_since(t0);
        if (kind != Kind::resident) engine.wait(ticket);
        // Attend, per sequence.
        t0 = Clock::now();
        const Target& x = tg[static_cast<size_t>(l)];
        if (dev) dev->attend(l, t, plan.blocks, engine, ticket, gpu_out);
        for (int64_t i = 0; i < S; ++i) {
          const int64_t s = s0 + i, T = trace.length(s), off = trace.offsets[s];
          if (t >= T) {  // this sequence has ended: undefined
            float* dst = r.out[static_cast<size_t>(l)].data();
            for (int64_t h = 0; h < Hq; ++h) std::fill_n(dst + ((i * Hq + h) * P + t - begin) * d, d, std::nanf(""));
            continue;
          }
          if (dev) {
            float* dst = r.out[static_cast<size_t>(l)].data();
            for (int64_t h = 0; h < Hq; ++h)
              std::copy_n(gpu_out.begin() + (i * Hq + h) * d, d, dst + ((i * Hq + h) * P + t - begin) * d);
            continue;
          }
          std::vector<std::vector<BlockRef>> refs(static_cast<size_t>(Hkv));
          for (int64_t g = 0; g < Hkv; ++g) {
            const float* hk = x.k.data() + (Hkv * off + g * T) * d;
            const float* hv = v[static_cast<size_t>(l)].data() + (Hkv * off + g * T) * d;
            for (const auto& [j, key] : plan.blocks[static_cast<size_t>(i * Hkv + g)]) {
              if (key < 0 || kind == Kind::resident)
                refs[static_cast<size_t>(g)].push_back(
                    {hk + j * B * d, hv + j * B * d, B, static_cast<int64_t>(j) * B});
              else
                refs[static_cast<size_t>(g)].push_back(engine.device(ticket, static_cast<size_t>(key)));
            }
          }
          for (int64_t h = 0; h < Hq; ++h) std::copy_n(x.q.data() + (Hq * off + h * T + t) * d, d, q.begin() + h * d);
          sparse_attend(q.data(), Hq, Hkv, d, t, refs, o1.data());
          float* dst = r.out[static_cast<size_t>(l)].data();
          for (int64_t h = 0; h < Hq; ++h) std::copy_n(o1.begin() + h * d, d, dst + ((i * Hq + h) * P + t - begin) * d);
        }
        r.attend_s += nk::seconds_since(t0);
        if (kind != Kind::resident) engine.release(ticket);
      }
      r.step_s.push_back(nk::seconds_since(step0));
      r.step_bytes.push_back(static_cast<double>(engine.stats().bytes - bytes0));
      progress.update(t - begin + 1);
    }
    progress.finish();
    r.wall_s = nk::seconds_since(wall0);
    r.stats = engine.stats();
    return r;
  }
};

/// --bandwidth: GB/s (0: uncapped) or auto (bytes/s < 0).
double parse_bandwidth(const std::string& text) {
  if (text == "auto") return -1;
  size_t used = 0;
  double v = -1;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !std::isfinite(v) || v < 0 || v > 1e6)
    throw nk::usage_error("--bandwidth '" + text + "' is not GB/s in 0..1e6 (0: uncapped) or auto");
  return v * 1e9;
}

/// /stats of a decode (per step and totals) and the run's attributes.
void write_stats(nk::h5::Writer& out, const DecodeOptions& o, const std::string& axis,
                 const std::vector<double>& step_s, const std::vector<double>& step_bytes, const EngineStats& stats,
                 double select_s, double attend_s, double wall_s, double bandwidth, int64_t block_bytes,
                 int64_t device_blocks) {
  const int64_t n = static_cast<int64_t>(step_s.size());
  out.write("/stats/step_seconds", step_s.data(), {n}, axis, "s");
  out.write("/stats/step_bytes", step_bytes.data(), {n}, axis, "B");
  const auto scalar = [&](const char* name, auto value) { out.write(std::string("/stats/") + name, &value, {1}, "1"); };
  scalar("requested", stats.requested);
  scalar("hits", stats.hits);
  scalar("misses", stats.misses);
  scalar("bytes", stats.bytes);
  scalar("transfers", stats.transfers);
  scalar("block_bytes", block_bytes);
  scalar("wait_seconds", stats.wait_s);
  scalar("copy_busy_seconds", stats.copy_busy_s);
  scalar("select_seconds", select_s);
  scalar("attend_seconds", attend_s);
  scalar("wall_seconds", wall_s);
  scalar("bandwidth", bandwidth);
  out.attr("/", "mode", o.mode);
  out.attr("/", "verify", static_cast<int64_t>(o.verify));
  out.attr("/", "device_blocks", device_blocks);
  out.attr("/", "block", o.selector.block);
  out.attr("/", "topk", o.selector.topk);
}

/// The median of x past its first entry (a cold first step), or of x.
double warm_median(std::vector<double> x) {
  if (x.size() > 1) x.erase(x.begin());
  std::sort(x.begin(), x.end());
  return x.empty() ? 0 : x[x.size() / 2];
}

struct ModelRun {
  std::vector<double> step_s, step_bytes;
  std::vector<int32_t> tokens;  ///< [B, steps]
  EngineStats stats;
  double prefill_s = 0, select_s = 0, attend_s = 0, wall_s = 0;
  double prefill_bytes = 0, prefill_wait_s = 0, project_s = 0, score_s = 0;
};

/// The paper's decode shapes at 4 layers (MiniCPM4.1-8B-like attention and
/// MLP), random weights: what timing needs, not what a model knows.
nk::lm::Config bench_config(int64_t context) {
  nk::lm::Config c;
  c.vocab = 512, c.d_model = 4096, c.n_layers = 4, c.n_heads = 32, c.n_kv_heads = 8, c.head_dim = 128, c.d_ff = 14336;
  c.max_seq = context, c.rope_theta = 1e6, c.tied_head = true;
  return c;
}

ModelRun run_model(const nk::lm::ParameterStore& weights, const DecodeOptions& o, const nk::RunEnv& env, Kind kind,
                   bool verify, double bandwidth, int64_t device_blocks, const Forecast* fc, int64_t steps) {
  const nk::lm::Config& c = weights.config();
  const nk::lm::Model model(weights);
  const int64_t B = o.batch, N = o.prompt_tokens, chunk = std::min(o.chunk, N);
  OffloadBackend backend(c, kind, verify, o.selector, fc, B, N + steps, device_blocks, bandwidth);
  nk::lm::Workspace ws(c, {B * std::max<int64_t>(chunk, 1), std::max<int64_t>(chunk, 1), false});
  std::vector<int32_t> slots(static_cast<size_t>(B)), next(static_cast<size_t>(B));
  for (int64_t s = 0; s < B; ++s) slots[static_cast<size_t>(s)] = static_cast<int32_t>(s);
  ModelRun r;
  auto t0 = Clock::now();
  // Bench shapes: the prompt's cache synthesised (without a prefill's hours) but for its last
  // --prefill-tokens, which are prefilled; a model: the whole prompt is prefilled.
  const int64_t synthesized = o.model.empty() ? N - o.prefill_tokens : 0;
  if (synthesized > 0) backend.synthesize(synthesized, env.seed);
  if (o.model.empty() && o.prefill_tokens == 0) {
    nk::Rng rng(env.seed);
    for (auto& t : next) t = static_cast<int32_t>(rng.below(static_cast<uint64_t>(c.vocab - 4)));
  } else {
    // Chunked prefill of random prompts, every slot in each forward.
    nk::Rng rng(env.seed);
    for (int64_t done = synthesized; done < N; done += chunk) {
      const int64_t len = std::min(chunk, N - done);
      std::vector<int32_t> tokens;
      std::vector<int64_t> offsets{0};
      for (int64_t s = 0; s < B; ++s) {
        for (int64_t i = 0; i < len; ++i)
          tokens.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(c.vocab - 4))));
        offsets.push_back(static_cast<int64_t>(tokens.size()));
      }
      nk::lm::ForwardOptions fo;
      fo.logits = nk::lm::LogitRows::last, fo.attention = &backend;
      model.forward({tokens, offsets, {}, slots}, ws, fo);
    }
    for (int64_t s = 0; s < B; ++s) {
      const float* row = ws.logits() + s * c.vocab;
      next[static_cast<size_t>(s)] = static_cast<int32_t>(std::max_element(row, row + c.vocab) - row);
    }
  }
  r.prefill_s = nk::seconds_since(t0);
  r.prefill_bytes = static_cast<double>(backend.stats().bytes), r.prefill_wait_s = backend.stats().wait_s;
  const EngineStats before = backend.stats();
  const double select0 = backend.select_seconds(), attend0 = backend.attend_seconds(),
               project0 = backend.project_seconds(), score0 = backend.score_seconds();
  std::vector<int64_t> offsets(static_cast<size_t>(B + 1));
  for (int64_t s = 0; s <= B; ++s) offsets[static_cast<size_t>(s)] = s;
  nk::Progress progress("decode", steps);
  nk::Rng token_rng(env.seed ^ 0x70cull);
  const auto wall0 = Clock::now();
  for (int64_t step = 0; step < steps; ++step) {
    t0 = Clock::now();
    const int64_t bytes0 = backend.stats().bytes;
    nk::lm::ForwardOptions fo;
    fo.logits = nk::lm::LogitRows::last, fo.attention = &backend, fo.step = step;
    model.forward({next, offsets, {}, slots}, ws, fo);
    for (int64_t s = 0; s < B; ++s) {
      const float* row = ws.logits() + s * c.vocab;
      next[static_cast<size_t>(s)] = static_cast<int32_t>(std::max_element(row, row + c.vocab) - row);
    }
    // Random weights: greedy decoding falls into a loop of one token, whose
    // queries would pick the same blocks every step; random tokens keep the
    // selection moving as text does.
    if (o.model.empty())
      for (auto& t : next) t = static_cast<int32_t>(token_rng.below(static_cast<uint64_t>(c.vocab)));
    r.step_s.push_back(nk::seconds_since(t0));
    r.step_bytes.push_back(static_cast<double>(backend.stats().bytes - bytes0));
    r.tokens.insert(r.tokens.end(), next.begin(), next.end());
    progress.update(step + 1);
  }
  progress.finish();
  r.wall_s = nk::seconds_since(wall0);
  r.stats = backend.stats();
  r.stats.requested -= before.requested, r.stats.hits -= before.hits, r.stats.misses -= before.misses;
  r.stats.bytes -= before.bytes, r.stats.transfers -= before.transfers, r.stats.wait_s -= before.wait_s;
  r.stats.copy_busy_s -= before.copy_busy_s;
  r.select_s = backend.select_seconds() - select0, r.attend_s = backend.attend_seconds() - attend0;
  r.project_s = backend.project_seconds() - project0, r.score_s = backend.score_seconds() - score0;
  return r;
}

double parse_bandwidth(const std::string& text);

void decode_model(const DecodeOptions& o, const nk::RunEnv& env) {
  const Kind kind = parse_mode(o.mode);
  if (kind == Kind::infinigen)
    throw nk::usage_error(
        "decode --mode infinigen replays traces only (-i); a model decodes in sync, forecast or resident");
  if (o.verify && kind != Kind::forecast) throw nk::usage_error("--verify applies to --mode forecast and infinigen");
  if (!o.model.empty() && !o.forecast.empty() && kind != Kind::forecast)
    throw nk::usage_error("--forecast applies to --mode forecast");
  double bandwidth = parse_bandwidth(o.bandwidth);
  const int64_t context = o.prompt_tokens + o.steps + 1;
  std::unique_ptr<nk::lm::Checkpoint> ck;
  std::unique_ptr<nk::lm::ParameterStore> bench;
  if (o.model.empty()) {
    const nk::lm::Config c = bench_config(context);
    c.validate("--bench-shapes");
    const double weights_bytes = 4.0 * static_cast<double>(c.parameter_count());
    const double pools = 2.0 * 4.0 * static_cast<double>(o.batch) *
                         static_cast<double>(c.n_layers * c.n_kv_heads * c.head_dim) *
                         static_cast<double>(context + o.selector.block);
    if (1.1 * (weights_bytes + pools) > nk::h5::available_memory_bytes())
      throw nk::usage_error("--bench-shapes at " + std::to_string(o.prompt_tokens) + " tokens x batch " +
                            std::to_string(o.batch) + " needs " +
                            std::to_string(static_cast<int64_t>((weights_bytes + pools) / 1e9)) +
                            " GB, more than is available");
    bench = std::make_unique<nk::lm::ParameterStore>(c);
    bench->init(env.seed);
  } else {
    ck = std::make_unique<nk::lm::Checkpoint>(nk::lm::load_checkpoint(o.model));
    const nk::lm::Config& c = ck->weights.config();
    if (c.mla() || c.mode != nk::lm::Mode::causal)
      throw nk::usage_error("decode: " + o.model + " is not a causal grouped-query model");
    if (context > c.max_seq)
      throw nk::usage_error("decode: --prompt-tokens + --steps = " + std::to_string(context) +
                            " pass the model's context of " + std::to_string(c.max_seq));
  }
  const nk::lm::ParameterStore& weights = bench ? *bench : ck->weights;
  const nk::lm::Config& c = weights.config();
  if (o.prompt_tokens < o.selector.block) throw nk::usage_error("--prompt-tokens must hold at least one --block");
  if (o.prefill_tokens > 0 && !o.model.empty())
    throw nk::usage_error("--prefill-tokens applies to --bench-shapes (a model prefills its whole prompt)");
  if (o.prefill_tokens > o.prompt_tokens) throw nk::usage_error("--prefill-tokens exceeds --prompt-tokens");
  Forecast fc;
  if (kind == Kind::forecast) {
    if (!o.forecast.empty()) {
      fc = Forecast::read_for(o.forecast, c.n_layers, c.n_kv_heads, c.head_dim, c.d_model, c.rope_theta);
    } else if (!bench && Forecast::embedded(o.model)) {
      fc = Forecast::read_embedded(o.model, c.n_layers, c.n_kv_heads, c.head_dim, c.d_model, c.rope_theta);
    } else if (bench) {
      // Timing only: random Forecasts pick wrong blocks, which costs the same without --verify.
      fc.layers = c.n_layers, fc.kv_heads = c.n_kv_heads, fc.head_dim = c.head_dim, fc.d_model = c.d_model;
      nk::Rng rng(env.seed ^ 0x5eedull);
      for (int64_t m = 0; m < c.n_layers; ++m) {
        Matrix w(c.d_model, c.n_kv_heads * c.head_dim);
        for (int64_t i = 0; i < w.size(); ++i) w.data()[i] = rng.normal() / std::sqrt(static_cast<double>(c.d_model));
        fc.w.push_back(std::move(w));
      }
      fc.finalize();
    } else {
      throw nk::usage_error("--mode forecast with --model needs --forecast FILE (train on a capture of that model) or a model "
                            "written by train --model");
    }
  }
  nk::h5::Writer out(o.output, kDecodeSchema, o.no_clobber);
  const int64_t block_bytes = 2 * o.selector.block * c.head_dim * static_cast<int64_t>(sizeof(float));
  const int64_t device_blocks = static_cast<int64_t>(o.device_mib * 1048576.0 / static_cast<double>(block_bytes));
  double tc = 0;
  if (bandwidth < 0) {
    // Warm steps only: the first step of a run finds the device pool empty.
    const int64_t k = std::max<int64_t>(2, o.calibrate_steps);
    const ModelRun resident = run_model(weights, o, env, Kind::resident, false, 0, 0, nullptr, k);
    const ModelRun sync = run_model(weights, o, env, Kind::sync, false, 0, device_blocks, nullptr, k);
    tc = warm_median(resident.step_s);
    const double bytes = warm_median(sync.step_bytes);
    bandwidth = std::max(1.0, bytes / std::max(tc, 1e-9));
    spdlog::info("--bandwidth auto: {:.3f} GB/s (resident {:.1f} ms a step, sync copies {:.1f} MiB a step)",
                 bandwidth / 1e9, tc * 1e3, bytes / 1048576.0);
  }
  const ModelRun r = run_model(weights, o, env, kind, o.verify, bandwidth, device_blocks, &fc, o.steps);
  out.write("/tokens", r.tokens.data(), {o.steps, o.batch}, "steps,B");
  write_stats(out, o, "steps", r.step_s, r.step_bytes, r.stats, r.select_s, r.attend_s, r.wall_s, bandwidth,
              block_bytes, device_blocks);
  out.write("/stats/prefill_seconds", &r.prefill_s, {1}, "1");
  out.write("/stats/prefill_bytes", &r.prefill_bytes, {1}, "1");
  out.write("/stats/prefill_wait_seconds", &r.prefill_wait_s, {1}, "1");
  out.write("/stats/project_seconds", &r.project_s, {1}, "1");
  out.write("/stats/score_seconds", &r.score_s, {1}, "1");
  out.attr("/", "prefill_tokens", o.model.empty() ? o.prefill_tokens : o.prompt_tokens);
  out.attr("/", "model", o.model.empty() ? std::string("bench-shapes") : o.model);
  out.attr("/", "prompt_tokens", o.prompt_tokens);
  out.attr("/", "batch", o.batch);
  out.attr("/", "steps", o.steps);
  out.attr("/", "parameters", c.parameter_count());
  out.commit();
  std::vector<double> sorted = r.step_s;
  std::sort(sorted.begin(), sorted.end());
  spdlog::info(
      "decode {} ({}): batch {} after {} tokens, median step {:.1f} ms; {} of {} blocks hit, {:.1f} MiB copied, {:.3f} "
      "s waiting",
      o.mode, o.model.empty() ? "bench shapes" : o.model, o.batch, o.prompt_tokens, sorted[sorted.size() / 2] * 1e3,
      r.stats.hits, r.stats.requested, static_cast<double>(r.stats.bytes) / 1048576.0, r.stats.wait_s);
}

}  // namespace

void decode(const DecodeOptions& o, const nk::RunEnv& env) {
  // The copy thread stands in for a DMA engine, which takes no compute core:
  // it gets one of its own (OpenMP's idle workers spin and would starve it).
  const int compute_threads = std::max(1, env.threads - 1);
  omp_set_num_threads(compute_threads);
  Eigen::setNbThreads(compute_threads);
  if (!o.model.empty() || o.bench_shapes) {
    if (!o.model.empty() && o.bench_shapes) throw nk::usage_error("give --model or --bench-shapes, not both");
    if (!env.shard.whole()) throw nk::usage_error("decode: --shard splits a trace's sequences; a model's decode runs whole");
    if (env.cuda())
      spdlog::info("decode: a model decodes on the CPU (nk-lm's forward has no CUDA path); --device cuda replays traces");
    return decode_model(o, env);
  }
  const Trace trace = Trace::open(o.input);
  require_selector(trace, o.selector);
  const Kind kind = parse_mode(o.mode);
  const bool lookahead = kind == Kind::forecast || kind == Kind::infinigen;
  if (kind == Kind::forecast && o.forecast.empty())
    throw nk::usage_error("--mode forecast needs --forecast FILE (sparda-forecast train)");
  if (kind != Kind::forecast && !o.forecast.empty()) throw nk::usage_error("--forecast applies to --mode forecast");
  if (o.verify && !lookahead) throw nk::usage_error("--verify applies to --mode forecast and infinigen");
  double bandwidth = parse_bandwidth(o.bandwidth);
  const int64_t longest = trace.longest();
  Replay rp{trace, o, {}, {}, nullptr, {}, nullptr, 0, longest};
  if (env.cuda() && bandwidth != 0)
    spdlog::info("decode: a --bandwidth cap models the link on the CPU engine: replaying on the CPU");
  else if (env.cuda())
    rp.gpu = &nk::kernels::cuda_family<nk_cuda_offload>("sparda-forecast decode");
  std::tie(rp.begin, rp.end) = parse_positions(o.positions, longest);
  std::tie(rp.s0, rp.s1) = nk::shard_range(env.shard, trace.sequences());
  if (rp.s1 == rp.s0) throw nk::usage_error("decode: shard " + env.shard.text() + " holds none of the trace's sequences");
  const Forecast fc = kind == Kind::forecast ? Forecast::read(o.forecast, trace) : Forecast{};
  rp.fc = &fc;
  for (int64_t l = 0; l < trace.layers; ++l) {
    if (!trace.has(l, "v"))
      throw nk::input_error(trace.path(), Trace::name(l, "v"), "missing: decoding attends over the values");
    rp.tg.push_back(load_target(trace, l, o.selector.block, true, true));
    rp.v.push_back(trace.read(l, "v"));
    if (kind == Kind::infinigen) rp.sp.push_back(make_speculator(trace, rp.tg.back(), o.rank));
  }
  nk::h5::Writer out(o.output, kDecodeSchema, o.no_clobber);
  const int64_t block_bytes = 2 * o.selector.block * trace.head_dim * static_cast<int64_t>(sizeof(float));
  const int64_t device_blocks = static_cast<int64_t>(o.device_mib * 1048576.0 / static_cast<double>(block_bytes));
  if (bandwidth < 0) {
    // auto: the link moves sync's misses of a step in the time resident computes a step.
    const Run resident = rp.run(Kind::resident, false, 0, 0);
    const Run sync = rp.run(Kind::sync, false, 0, device_blocks);
    const double tc = warm_median(resident.step_s), bytes = warm_median(sync.step_bytes);
    bandwidth = std::max(1.0, bytes / std::max(tc, 1e-9));
    spdlog::info("--bandwidth auto: {:.3f} GB/s (resident {:.3f} ms a step, sync copies {:.0f} KiB a step)",
                 bandwidth / 1e9, tc * 1e3, bytes / 1024.0);
  }
  const Run r = rp.run(kind, o.verify, bandwidth, device_blocks);

  const int64_t L = trace.layers, S = rp.s1 - rp.s0, Hq = trace.heads, d = trace.head_dim, P = rp.end - rp.begin;
  for (int64_t l = 0; l < L; ++l) {
    char name[40];
    std::snprintf(name, sizeof name, "/layer_%02lld/out", static_cast<long long>(l));
    out.allow_nonfinite(name);  // NaN: positions past a sequence's end
    if (trace.sequences() == 1)
      out.write(name, r.out[static_cast<size_t>(l)].data(), {Hq, P, d}, "Hq,P,d");
    else
      out.write(name, r.out[static_cast<size_t>(l)].data(), {S, Hq, P, d}, "B,Hq,P,d");
  }
  std::vector<int64_t> positions(static_cast<size_t>(P));
  for (int64_t t = rp.begin; t < rp.end; ++t) positions[static_cast<size_t>(t - rp.begin)] = t;
  out.write("/positions", positions.data(), {P}, "P");
  out.attr("/positions", "nk_merge", "same");  // every shard replays the same positions
  std::vector<int64_t> index(static_cast<size_t>(S));
  for (int64_t i = 0; i < S; ++i) index[static_cast<size_t>(i)] = rp.s0 + i;
  out.write("/sequences", index.data(), {S}, "B");
  write_stats(out, o, "P", r.step_s, r.step_bytes, r.stats, r.select_s, r.attend_s, r.wall_s, bandwidth, block_bytes,
              device_blocks);
  out.commit();
  spdlog::info(
      "decode {}: {} steps x {} sequences, {:.3f} ms a step; {} of {} blocks hit, {:.1f} MiB copied, {:.3f} s waiting",
      o.mode, P, S, r.wall_s / static_cast<double>(P) * 1e3, r.stats.hits, r.stats.requested,
      static_cast<double>(r.stats.bytes) / 1048576.0, r.stats.wait_s);
}

}  // namespace sparda
