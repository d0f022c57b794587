// sagesched.hpp - SageSched: an LLM serving scheduler for uncertain output
// lengths and hybrid compute/memory cost (sagesched(1)).
//
// Units: times in seconds, lengths in tokens. A request's output length o is
// unknown to every policy but srpt-oracle; the predictor gives a pmf over
// log-spaced length bins; SageSched orders requests by the Gittins index of
// their predicted cost distribution.
#pragma once
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nk/run_env.hpp"

namespace sage {

inline constexpr const char* kTraceSchema = "sagesched.trace/1";
inline constexpr const char* kSimSchema = "sagesched.sim/1";
inline constexpr const char* kPredSchema = "sagesched.pred/1";
inline constexpr const char* kGittinsSchema = "sagesched.gittins/1";

/// Requests sorted by arrival: /requests/{arrival, prompt_tokens, output_tokens, category[, prompt]}.
struct Trace {
  std::vector<double> arrival;  ///< seconds, non-decreasing, >= 0
  std::vector<int64_t> prompt_tokens, output_tokens;
  std::vector<int32_t> category;
  std::vector<std::string> prompt;          ///< empty, or one text per request
  std::vector<std::string> category_names;  ///< /categories/name when present
  double load = NAN;                         ///< the root attribute 'load' of a generated trace, else NaN
  size_t size() const { return arrival.size(); }
};

/// Reads and checks a trace (nk_schema optional: a user's file in the same
/// layout is accepted). Exit 3 naming dataset and index for unsorted or
/// negative arrivals, output_tokens < 1, prompt_tokens < 0, NaN, mismatched lengths.
Trace read_trace(const std::string& path);
/// Checks the rules read_trace applies; 'path' names the file in messages.
void validate_trace(const std::string& path, const Trace& trace);

// ---------------------------------------------------------------------------
// Iteration cost

/// The work of one iteration (sagesched(1) SIMULATOR): P prefill tokens,
/// A = sum over prefill chunks of chunk x context after the chunk, C = sum
/// over decoding sequences of prompt + generated tokens, S sequences, W
/// tokens of KV swapped between device and host.
struct Work {
  double prefill = 0, attn = 0, context = 0, sequences = 0, swapped = 0;
};

/// One roof: k0 + kp P + ka A + kc C + ks S seconds.
struct Roof {
  double k0 = 0, kp = 0, ka = 0, kc = 0, ks = 0;
  double time(const Work& w) const { return k0 + kp * w.prefill + ka * w.attn + kc * w.context + ks * w.sequences; }
};

/// Iteration time = t0 + max over roofs + cw W. A linear profile has one roof;
/// a roofline profile two (compute and memory).
struct Profile {
  std::string name;
  double t0 = 0;
  std::vector<Roof> roofs;
  double cw = -1;           ///< seconds per swapped token; < 0: unknown (--swap refused)
  int64_t kv_tokens = 0;    ///< the device's KV capacity in tokens (0: unbounded)
  std::string description;  ///< how the numbers were derived (written to outputs)

  double iteration_time(const Work& w) const;
  /// Seconds to finish a request alone: the rest of its prefill (target
  /// tokens, 'prefilled' done) in chunks of 'max_tokens', whose last chunk
  /// emits a token, then one decode step per token up to 'output', step g
  /// (g tokens emitted) at context prompt + g; t0 included in every iteration.
  double solo_time(int64_t prompt, int64_t target, int64_t prefilled, int64_t generated, int64_t output,
                   int64_t max_tokens) const;
  /// Sum over decode steps with context c = c_lo..c_hi (one sequence) of iteration time.
  double solo_decode_time(int64_t c_lo, int64_t c_hi) const;
};

/// --profile NAME|FILE (h100-llama3-8b, h200-llama3-8b, a shipped profile's
/// name: data/sagesched/NAME.toml, or a TOML file) or
/// --iter-cost linear:t0,cp,ca,cc,cs[,cw]. 'iter_cost' wins when non-empty.
Profile load_profile(const std::string& profile, const std::string& iter_cost);
/// Names of the built-in presets.
std::vector<std::string> profile_presets();
/// Names of the profiles shipped in data/sagesched/ (NAME.toml).
std::vector<std::string> shipped_profiles();
/// A preset's numbers with some replaced (values <= 0 keep the preset's).
struct RooflineOverride {
  std::string name, comment;  ///< comment: '#' lines written first
  double peak_flops = 0, bandwidth = 0, compute_efficiency = 0, bandwidth_efficiency = 0, memory_bytes = 0;
};
/// The roofline TOML (sagesched(1) PROFILES) of a preset with overrides.
std::string roofline_toml(const std::string& preset, const RooflineOverride& o);

/// The server: batch limits and paged KV.
struct Server {
  int64_t max_batch = 256;   ///< sequences per iteration (vLLM max_num_seqs)
  int64_t max_tokens = 8192; ///< prefill chunk + decode tokens per iteration (max_num_batched_tokens)
  int64_t kv_tokens = 0;     ///< KV capacity in tokens (0: the profile's)
  int64_t block = 16;        ///< tokens per KV block
  bool swap = false;         ///< preempt by swapping KV to the host instead of recompute
  int64_t reserve = 1;       ///< free blocks per KV holder that new work may not take
  bool running_first = true;  ///< walk requests holding KV before the others (--walk running-first)
};

// ---------------------------------------------------------------------------
// Gittins index

struct GittinsIndex {
  double index = 0;       ///< max over D of P(S - a <= D | S > a) / E[min(S - a, D) | S > a]; inf when P(S > a) = 0
  double best_delta = 0;  ///< the smallest maximising D (0 when P(S > a) = 0)
};
/// Gittins index of a discrete cost distribution (support increasing, prob >= 0)
/// at attained cost a. The maximum over D > 0 is attained at D = s_j - a for a
/// support point s_j > a, so one O(n) scan finds it.
GittinsIndex gittins_index(const double* support, const double* prob, size_t n, double attained);
/// The same scan over support points that all lie above 'attained', with
/// tail = their total probability given (the policy keeps suffix sums).
GittinsIndex gittins_scan(const double* support, const double* prob, size_t n, double attained, double tail);

// ---------------------------------------------------------------------------
// Output-length predictor

/// Log-spaced bins of output length: edge_k = 2^(k / per_octave), k = 0..K.
struct Bins {
  std::vector<double> edges;   ///< K + 1 increasing edges, edges[0] = 1
  std::vector<double> centre;  ///< K representative lengths (geometric centres)
  static Bins log_spaced(int64_t max_length, int per_octave = 4);
  size_t size() const { return centre.size(); }
  size_t bin_of(double length) const;  ///< clamped to [0, K)
};

/// Online predictor: kNN over hashed word n-grams of past prompts, a per-
/// category prior and an online log-linear model, mixed by exponential weights
/// on their log-loss. Only results passed to learn() are ever seen.
class Predictor {
 public:
  explicit Predictor(Bins bins, uint64_t seed = 0);
  ~Predictor();
  Predictor(Predictor&&) noexcept;
  Predictor& operator=(Predictor&&) noexcept;

  const Bins& bins() const;
  /// The pmf of request 'id' (prompt text may be empty) over bins(); writes size() values.
  void predict(int64_t id, const std::string& prompt, int32_t category, int64_t prompt_tokens, double* pmf);
  /// A finished request's true output length (id as passed to predict).
  void learn(int64_t id, int64_t output_tokens);
  /// Learning-to-rank score of the last predicted request 'id' (lower: shorter).
  double rank_score(int64_t id) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Loss of a pmf over bins against the truth y: CRPS over log2 length (the
/// CDF linear in log2 within a bin), pinball at 0.5 and 0.9 of the pmf's
/// quantiles (tokens), absolute error of the pmf's mean (tokens).
struct Losses {
  double crps = 0, pinball50 = 0, pinball90 = 0, mae = 0;
};
Losses pmf_losses(const Bins& bins, const double* pmf, double y);
double pmf_quantile(const Bins& bins, const double* pmf, double q);
double pmf_mean(const Bins& bins, const double* pmf);

// ---------------------------------------------------------------------------
// Simulator

struct SimOptions {
  std::string policy = "sagesched";
  Server server;
  bool record_iterations = true;
  int per_octave = 4;  ///< predictor bins per octave
};

struct SimResult {
  std::vector<double> first_token, finish;
  std::vector<int64_t> preemptions;
  // per iteration
  std::vector<double> start, duration, attn_work;
  std::vector<int64_t> batch, prefill_tokens, context_tokens, emitted, kv_used;
  int64_t iterations = 0;
  int64_t kv_capacity = 0;
  double seconds = 0;  ///< wall time of the simulation
};

/// Names of the policies simulate accepts.
std::vector<std::string> policy_names();
SimResult simulate(const Trace& trace, const Profile& profile, const SimOptions& options, uint64_t seed);

/// Summary of a run: mean/P99 (nearest rank) TTLT, mean TTFT, output tokens per second.
struct Summary {
  double mean_ttlt = 0, p99_ttlt = 0, mean_ttft = 0, throughput = 0;
  int64_t preemptions = 0;
};
Summary summarise(const Trace& trace, const SimResult& result);

// ---------------------------------------------------------------------------
// Verbs

struct TraceOptions {
  std::string output;
  bool no_clobber = false;
  int64_t requests = 1000;
  std::string arrivals = "poisson";
  double load = 0.7;
  std::string mix = "sharegpt";
  std::string prompts = "synthetic";
  std::string from_csv;
  std::string profile = "h200-llama3-8b", iter_cost;
  Server server;
  int64_t max_context = 0;  ///< > 0: every request's prompt + output fits (lengths redrawn)
};
void trace(const TraceOptions& o, const nk::RunEnv& env);
/// Requests/s the server sustains for these requests when never idle
/// (sagesched(1) WORKLOADS: the rate behind --load).
double saturated_rate(const Trace& trace, const Profile& profile, const Server& server);

struct SimulateOptions {
  std::string input, output;
  bool no_clobber = false;
  std::string profile = "h200-llama3-8b", iter_cost;
  SimOptions sim;
};
void simulate_verb(const SimulateOptions& o, const nk::RunEnv& env);

struct PredictOptions {
  std::string input, output, sim;
  bool no_clobber = false;
  std::string profile = "h200-llama3-8b";
  int per_octave = 4;
  int64_t max_tokens = 8192;
};
void predict_verb(const PredictOptions& o, const nk::RunEnv& env);

struct TestbedOptions {
  std::string input, output;
  std::string model;                 ///< empty: the shipped data/lm/causal.h5
  std::string profile, iter_cost;    ///< empty: the shipped data/sagesched/cpu-nklm.toml
  bool no_clobber = false;
  double time_scale = 1;             ///< wall seconds per trace second
  double temperature = 1;            ///< sampling temperature (0: greedy)
  SimOptions sim;
};
void testbed_verb(const TestbedOptions& o, const nk::RunEnv& env);

struct GittinsOptions {
  std::string input, output;
  bool no_clobber = false;
};
void gittins_verb(const GittinsOptions& o);

struct CalibrateOptions {
  std::string model;  ///< empty: the shipped data/lm/causal.h5 (unless 'from')
  std::string from;   ///< a testbed run whose measured iterations are fitted instead of a grid
  std::string output, name = "cpu-nklm";
  bool no_clobber = false;
  int repeats = 5;
  int64_t kv_tokens = 16384;
  int64_t grid_batch = 64;  ///< the largest decode batch of the grid (of 1, 2, 4, 8, 16, 32, 64)
};
void calibrate_verb(const CalibrateOptions& o, const nk::RunEnv& env);

struct ProbeOptions {
  std::string output, name = "h200-llama3-8b-probed", preset = "h200-llama3-8b";
  bool no_clobber = false;
  double seconds = 60;                 ///< the probe's budget
  double nominal_flops = 989e12;       ///< the device's dense BF16 peak (data sheet)
  double nominal_bandwidth = 4.8e12;   ///< its memory bandwidth (data sheet)
};
/// Measures the GPU's copy bandwidth and BF16 GEMM rate and writes the
/// preset's roofline TOML with its derating set from them.
void probe_verb(const ProbeOptions& o);

struct PlotOptions {
  std::vector<std::string> inputs;
  std::string output, kind = "cdf", title;
  bool no_clobber = false;
};
void plot_verb(const PlotOptions& o);

}  // namespace sage
