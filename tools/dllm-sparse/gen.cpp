// gen.cpp - synthetic denoising trajectories with the structure reported for
// diffusion LLMs: per-head mixtures of a local window (rotary features), a
// content pattern (positions attend to positions of the same topic, topics in
// runs of tokens) and attention sinks; strongly different temperatures across
// heads; [MASK] positions that share one topic until they are unmasked over
// the steps (gradual drift); and a few transition steps at which the topics of
// the text are redrawn (abrupt shifts).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "dllm-sparse/dllm.hpp"
#include "nk/context.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/rng.hpp"

namespace dllm {

namespace {

constexpr double kPi = 3.14159265358979323846;

struct Head {
  double temperature, local, content, sink, window;
  std::string kind;
};

std::vector<int> topic_runs(int64_t length, int topics, nk::Rng& rng) {
  std::vector<int> topic(static_cast<size_t>(length));
  int64_t i = 0;
  while (i < length) {
    const int64_t run = 16 + static_cast<int64_t>(rng.below(240));
    const int t = 1 + static_cast<int>(rng.below(static_cast<uint64_t>(topics)));
    for (int64_t j = i; j < std::min(length, i + run); ++j) topic[static_cast<size_t>(j)] = t;
    i += run;
  }
  return topic;
}

std::string name3(int64_t i) {
  char b[32];
  std::snprintf(b, sizeof b, "%03lld", static_cast<long long>(i));
  return b;
}

}  // namespace

void gen(const GenOptions& o, const nk::RunEnv& env) {
  const int64_t kv_heads = o.kv_heads ? o.kv_heads : o.heads;
  if (o.length < 1 || o.heads < 1 || o.steps < 1 || o.layers < 1) throw nk::usage_error("--length, --heads, --steps and --layers must be >= 1");
  if (o.dims < 8 || o.dims > kMaxDims) throw nk::usage_error("--dims must be in 8..256");
  if (o.heads % kv_heads != 0) throw nk::usage_error("--kv-heads must divide --heads");
  const double bytes = 4.0 * static_cast<double>(o.heads + 2 * kv_heads) * o.length * o.dims * (o.single_step ? 1 : o.steps * o.layers);
  if (bytes * 1.5 > nk::h5::available_memory_bytes()) throw nk::usage_error("--length/--heads/--steps/--layers need more memory than is available");
  const nk::Rng root(env.seed);
  const int64_t L = o.length, d = o.dims, steps = o.single_step ? 1 : o.steps;
  const int64_t d_rot = d / 2 / 2 * 2, d_con = d / 4, sink_axis = d_rot + d_con;
  const int topics = 12;
  nk::h5::Writer out(o.output, o.single_step ? kQkvSchema : kTrajectorySchema, o.no_clobber);
  std::vector<int64_t> transitions;
  {
    nk::Rng rng = root.split(1);
    for (int64_t t = 0; t < o.transitions && steps > 2; ++t) transitions.push_back(1 + static_cast<int64_t>(rng.below(static_cast<uint64_t>(steps - 1))));
    std::sort(transitions.begin(), transitions.end());
    transitions.erase(std::unique(transitions.begin(), transitions.end()), transitions.end());
  }
  for (int64_t layer = 0; layer < o.layers; ++layer) {
    nk::Rng lrng = root.split(100 + static_cast<uint64_t>(layer));
    std::vector<Head> heads(static_cast<size_t>(o.heads));
    std::vector<std::string> kinds;
    std::vector<double> temps;
    for (int64_t h = 0; h < o.heads; ++h) {
      Head& hd = heads[static_cast<size_t>(h)];
      const int kind = static_cast<int>(h % 4);
      hd.temperature = std::exp(std::log(2.0) + (std::log(40.0) - std::log(2.0)) * lrng.uniform());  // concentration differs by ~20x
      hd.window = 8.0 * std::pow(2.0, static_cast<double>(lrng.below(6)));
      hd.local = kind == 0 ? 1.0 : 0.25 * lrng.uniform();
      hd.content = kind == 1 ? 1.0 : 0.3 * lrng.uniform();
      hd.sink = kind == 2 ? 1.0 : 0.3 * lrng.uniform();
      if (kind == 3) hd.local = hd.content = hd.sink = 0.5;  // mixed
      hd.kind = kind == 0 ? "local" : kind == 1 ? "content" : kind == 2 ? "sink" : "mixed";
      kinds.push_back(hd.kind);
      temps.push_back(hd.temperature);
    }
    // Topic vectors (unit, in the content subspace); topic 0 is [MASK].
    std::vector<double> topic_vec(static_cast<size_t>((topics + 1) * d_con));
    for (double& v : topic_vec) v = lrng.normal() / std::sqrt(static_cast<double>(d_con));
    // Prompt positions (the first quarter) are never masked; the rest unmask at a random step.
    // Half of the tokens still masked at a transition unmask there at once (a burst).
    std::vector<int64_t> unmask(static_cast<size_t>(L));
    for (int64_t i = 0; i < L; ++i) {
      int64_t u = i < L / 4 ? 0 : static_cast<int64_t>(lrng.below(static_cast<uint64_t>(steps + 1)));
      for (int64_t t : transitions) {
        if (u > t && lrng.uniform() < 0.5) u = t;
      }
      unmask[static_cast<size_t>(i)] = u;
    }
    std::vector<double> base_window(static_cast<size_t>(o.heads));
    for (int64_t h = 0; h < o.heads; ++h) base_window[static_cast<size_t>(h)] = heads[static_cast<size_t>(h)].window;
    std::vector<int> topic = topic_runs(L, topics, lrng);
    // Values share a strong common direction per KV head (as real value vectors
    // do), vary with the token's topic, and carry token noise.
    std::vector<float> vbase(static_cast<size_t>(kv_heads * L * d));
    std::vector<double> vtopic(static_cast<size_t>((topics + 1) * d));
    for (double& t : vtopic) t = 0.7 * lrng.normal();
    for (int64_t g = 0; g < kv_heads; ++g) {
      std::vector<double> common(static_cast<size_t>(d));
      for (double& c : common) c = lrng.normal();
      for (int64_t i = 0; i < L; ++i) {
        for (int64_t c = 0; c < d; ++c) {
          vbase[static_cast<size_t>((g * L + i) * d + c)] =
              static_cast<float>(common[static_cast<size_t>(c)] + vtopic[static_cast<size_t>(topic[static_cast<size_t>(i)] * d + c)] + 0.7 * lrng.normal());
        }
      }
    }
    const std::string layer_prefix = o.layers > 1 ? "/layers/" + name3(layer).substr(1) : "";
    for (int64_t step = 0; step < steps; ++step) {
      if (std::binary_search(transitions.begin(), transitions.end(), step)) {
        // An abrupt shift: new topics, local windows 4x wider or narrower, sinks switched on or off.
        topic = topic_runs(L, topics, lrng);
        for (int64_t h = 0; h < o.heads; ++h) {
          Head& hd = heads[static_cast<size_t>(h)];
          hd.window = base_window[static_cast<size_t>(h)] * std::pow(4.0, static_cast<double>(lrng.below(3)) - 1.0);
          if (hd.kind != "sink") hd.sink = lrng.uniform() < 0.5 ? 0.0 : 0.6 * lrng.uniform();
        }
      }
      nk::Rng srng = root.split(1000 + static_cast<uint64_t>(layer * 100000 + step));
      std::vector<float> q(static_cast<size_t>(o.heads * L * d)), k(static_cast<size_t>(kv_heads * L * d)),
          v(static_cast<size_t>(kv_heads * L * d));
      const double amp = std::pow(static_cast<double>(d), 0.25);  // the kernel divides q.k by sqrt(d)
      auto features = [&](const Head& hd, int64_t i, bool is_key, float* out_row, nk::Rng& noise) {
        const double tau = std::sqrt(hd.temperature);
        const int t = step >= unmask[static_cast<size_t>(i)] ? topic[static_cast<size_t>(i)] : 0;
        for (int64_t p = 0; p < d_rot / 2; ++p) {
          const double w = kPi * (static_cast<double>(p) + 0.5) / (hd.window * static_cast<double>(d_rot / 2));
          const double a = amp * tau * std::sqrt(hd.local / static_cast<double>(d_rot / 2));
          out_row[2 * p] = static_cast<float>(a * std::cos(w * static_cast<double>(i)));
          out_row[2 * p + 1] = static_cast<float>(a * std::sin(w * static_cast<double>(i)));
        }
        for (int64_t c = 0; c < d_con; ++c) {
          out_row[d_rot + c] = static_cast<float>(amp * tau * std::sqrt(hd.content) * 1.8 * topic_vec[static_cast<size_t>(t * d_con + c)]);
        }
        const bool sink_position = i < 4;
        out_row[sink_axis] = static_cast<float>(amp * tau * std::sqrt(hd.sink) * (is_key ? (sink_position ? 1.6 : 0.0) : 1.6));
        for (int64_t c = sink_axis + 1; c < d; ++c) out_row[c] = static_cast<float>(0.35 * amp * noise.normal());
        for (int64_t c = 0; c < sink_axis; ++c) out_row[c] += static_cast<float>(0.08 * amp * noise.normal());
      };
      for (int64_t h = 0; h < o.heads; ++h) {
        for (int64_t i = 0; i < L; ++i) features(heads[static_cast<size_t>(h)], i, false, q.data() + (h * L + i) * d, srng);
      }
      for (int64_t g = 0; g < kv_heads; ++g) {
        // A KV head serves a group of query heads; its keys follow the group's first head.
        const Head& hd = heads[static_cast<size_t>(g * (o.heads / kv_heads))];
        for (int64_t i = 0; i < L; ++i) features(hd, i, true, k.data() + (g * L + i) * d, srng);
        for (int64_t i = 0; i < L * d; ++i) {
          v[static_cast<size_t>(g * L * d + i)] = vbase[static_cast<size_t>(g * L * d + i)] + static_cast<float>(0.1 * srng.normal());
        }
      }
      const std::string g = o.single_step ? "" : layer_prefix + "/steps/" + name3(step);
      out.write(g + "/q", q.data(), {o.heads, L, d}, "H,L,d");
      out.write(g + "/k", k.data(), {kv_heads, L, d}, "Hkv,L,d");
      out.write(g + "/v", v.data(), {kv_heads, L, d}, "Hkv,L,d");
    }
    const std::string meta = layer_prefix.empty() ? "/heads" : layer_prefix + "/heads";
    out.write_strings(meta + "/kind", kinds, "H");
    out.write(meta + "/temperature", temps.data(), {o.heads}, "H");
  }
  if (!transitions.empty()) out.write("/transitions", transitions.data(), {static_cast<int64_t>(transitions.size())}, "T");
  out.attr("/", "length", L);
  out.attr("/", "steps", steps);
  out.commit();
  spdlog::info("wrote {} step(s) x {} layer(s): H = {}, Hkv = {}, L = {}, d = {}, transitions at {}", steps, o.layers, o.heads,
               kv_heads, L, d, transitions.size());
}

}  // namespace dllm
