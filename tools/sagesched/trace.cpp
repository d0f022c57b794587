// trace.cpp - generated traces with published shapes: request mixes,
// Poisson or bursty (Gamma) arrivals, prompts whose words carry a real but
// noisy signal of the output length, and the rate set by a load factor.
#include <algorithm>
#include <cmath>

#include "nk/distribution.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/lm/text.hpp"
#include "nk/log.hpp"
#include "nk/rng.hpp"
#include "sagesched/sagesched.hpp"
#include "sagesched/trace_io.hpp"

namespace sage {

namespace {

/// One request category: lognormal prompt and output lengths (median, sigma
/// of the log), capped. Sources in sagesched(1) WORKLOADS.
struct Category {
  const char* name;
  double prompt_median, prompt_sigma;
  double output_median, output_sigma;
  int64_t prompt_cap, output_cap;
  std::vector<const char*> topics;
};

const std::vector<Category>& categories() {
  static const std::vector<Category> all = {
      {"chat", 90, 1.0, 180, 0.9, 4096, 4096,
       {"weather", "movie", "friend", "weekend", "music", "travel", "dinner", "game", "book", "plan", "idea", "story"}},
      {"qa", 40, 0.8, 60, 0.9, 4096, 4096,
       {"capital", "year", "population", "who", "when", "distance", "number", "name", "date", "height", "meaning", "formula"}},
      {"writing", 60, 0.9, 420, 0.6, 4096, 4096,
       {"poem", "story", "essay", "letter", "speech", "blog", "novel", "chapter", "dialogue", "lyrics", "script", "article"}},
      {"summarize", 700, 0.7, 130, 0.6, 8192, 4096,
       {"article", "report", "paper", "meeting", "transcript", "document", "email", "thread", "review", "notes", "study", "minutes"}},
      {"code", 1500, 0.8, 13, 1.1, 8192, 1024,
       {"function", "bug", "python", "rust", "loop", "class", "test", "compile", "error", "api", "refactor", "module"}},
      {"conv", 1020, 0.9, 129, 0.9, 8192, 4096,
       {"customer", "order", "account", "refund", "issue", "schedule", "booking", "support", "question", "help", "service", "update"}},
  };
  return all;
}

/// Category weights of a --mix.
std::vector<double> mix_weights(const std::string& mix) {
  if (mix == "sharegpt") return {0.4, 0.25, 0.2, 0.15, 0, 0};
  if (mix == "code") return {0, 0, 0, 0, 1, 0};
  if (mix == "conv") return {0, 0, 0, 0, 0, 1};
  if (mix == "mixed") return {0, 0, 0, 0, 0.5, 0.5};
  throw nk::usage_error("--mix '" + mix + "': expected sharegpt, code, conv or mixed");
}

/// Five levels of length cue, from "one word" to "in depth"; the level a
/// prompt shows is its output's z-score plus noise, cut at -1.5, -0.5, 0.5, 1.5.
const char* const kCues[5][3] = {
    {"answer in one word:", "just yes or no:", "one line only:"},
    {"briefly,", "in a sentence,", "short answer:"},
    {"", "please", "can you"},
    {"explain", "describe how", "walk me through"},
    {"in detail with examples,", "write a long piece:", "step by step, in depth:"},
};
constexpr double kCueNoise = 0.6;  ///< sd of the noise on the cue's z-score: corr(cue z, z) ~ 0.86

double gamma_draw(nk::Rng& rng, double shape) {
  // Marsaglia and Tsang; shape < 1 through Gamma(shape + 1) u^(1/shape).
  if (shape < 1) return gamma_draw(rng, shape + 1) * std::pow(1.0 - rng.uniform(), 1.0 / shape);
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9 * d);
  while (true) {
    double x, v;
    do {
      x = rng.normal();
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = 1.0 - rng.uniform();
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

/// Arrival times at 'rate' requests/s: Poisson, or Gamma inter-arrivals of
/// coefficient of variation CV (shape 1/CV^2; BurstGPT's bursty fit).
std::vector<double> arrival_times(const std::string& spec, size_t n, double rate, nk::Rng& rng) {
  const nk::Spec s = nk::parse_spec("--arrivals", spec);
  double shape = 1;
  if (s.name == "gamma") {
    const double cv = s.arg(0, 2.0);
    if (!(cv > 0) || cv > 100) throw nk::usage_error("--arrivals gamma:CV needs 0 < CV <= 100");
    shape = 1 / (cv * cv);
  } else if (s.name != "poisson") {
    throw nk::usage_error("--arrivals '" + spec + "': expected poisson or gamma:CV");
  }
  std::vector<double> t(n);
  double now = 0;
  for (size_t i = 0; i < n; ++i) {
    t[i] = now;
    now += (s.name == "poisson" ? -std::log(1.0 - rng.uniform()) : gamma_draw(rng, shape) / shape) / rate;
  }
  return t;
}

int64_t lognormal_length(nk::Rng& rng, double median, double sigma, int64_t cap, double* z_out = nullptr) {
  const double z = rng.normal();
  if (z_out) *z_out = z;
  const double v = std::exp(std::log(median) + sigma * z);
  return std::clamp<int64_t>(static_cast<int64_t>(std::llround(v)), 1, cap);
}

std::vector<std::string> words_of(const std::string& text, size_t limit) {
  std::vector<std::string> words;
  std::string w;
  for (char c : text + " ") {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '\'') {
      w += c;
    } else if (!w.empty()) {
      words.push_back(w);
      w.clear();
      if (words.size() == limit) break;
    }
  }
  return words;
}

}  // namespace

double saturated_rate(const Trace& t, const Profile& profile, const Server& server) {
  // The rate the server sustains when it is never idle: the first (up to)
  // 4000 requests all queued at time 0 under FCFS; output tokens per second
  // while requests still wait to start (no drain), over the mean output length.
  Trace probe;
  const size_t m = std::min<size_t>(t.size(), 4000);
  probe.arrival.assign(m, 0.0);
  probe.prompt_tokens.assign(t.prompt_tokens.begin(), t.prompt_tokens.begin() + static_cast<std::ptrdiff_t>(m));
  probe.output_tokens.assign(t.output_tokens.begin(), t.output_tokens.begin() + static_cast<std::ptrdiff_t>(m));
  probe.category.assign(t.category.begin(), t.category.begin() + static_cast<std::ptrdiff_t>(m));
  SimOptions sim;
  sim.policy = "fcfs";
  sim.server = server;
  const SimResult r = simulate(probe, profile, sim, 0);
  const double last_start = *std::max_element(r.first_token.begin(), r.first_token.end());
  double tokens = 0, outputs = 0;
  for (size_t i = 0; i < r.start.size() && r.start[i] + r.duration[i] <= last_start; ++i) {
    tokens += static_cast<double>(r.emitted[i]);
  }
  for (int64_t o : probe.output_tokens) outputs += static_cast<double>(o);
  if (!(tokens > 0)) return static_cast<double>(m) / *std::max_element(r.finish.begin(), r.finish.end());
  return tokens / last_start / (outputs / static_cast<double>(m));
}

void trace(const TraceOptions& o, const nk::RunEnv& env) {
  Trace t;
  if (!o.from_csv.empty()) {
    t = trace_from_csv(o.from_csv);
  } else {
    if (o.requests < 1 || o.requests > (int64_t{1} << 28)) throw nk::usage_error("--requests must be 1 to 2^28");
    if (!(o.load > 0) || o.load > 100) throw nk::usage_error("--load must be in (0, 100]");
    if (o.max_context != 0 && o.max_context < 2) throw nk::usage_error("--max-context must be 0 (none) or >= 2");
    const std::vector<double> weights = mix_weights(o.mix);
    if (o.prompts != "synthetic" && o.prompts != "debian") throw nk::usage_error("--prompts must be synthetic or debian");
    std::vector<nk::lm::Document> texts;
    if (o.prompts == "debian") {
      for (const char* source : {"fortunes", "wordnet"}) {
        std::vector<nk::lm::Document> d = nk::lm::debian_text(source);
        texts.insert(texts.end(), std::make_move_iterator(d.begin()), std::make_move_iterator(d.end()));
      }
    }
    const nk::Rng root(env.seed);
    nk::Rng lengths = root.split(1), words = root.split(2);
    const auto n = static_cast<size_t>(o.requests);
    t.arrival.resize(n);
    for (size_t i = 0; i < n; ++i) {
      double u = lengths.uniform(), acc = 0;
      size_t c = 0;
      for (; c + 1 < weights.size(); ++c) {
        acc += weights[c];
        if (u < acc) break;
      }
      while (weights[c] == 0) --c;  // rounding past the last weighted category
      const Category& cat = categories()[c];
      double z = 0;
      int64_t prompt = lognormal_length(lengths, cat.prompt_median, cat.prompt_sigma, cat.prompt_cap);
      int64_t output = lognormal_length(lengths, cat.output_median, cat.output_sigma, cat.output_cap, &z);
      // --max-context: redraw until prompt + output fits (the shape conditioned
      // on fitting); past 10^5 tries, cut the prompt to half the context.
      for (int tries = 0; o.max_context > 0 && prompt + output > o.max_context; ++tries) {
        if (tries == 100000) {
          prompt = std::min(prompt, o.max_context / 2);
          output = std::min(output, o.max_context - prompt);
          break;
        }
        prompt = lognormal_length(lengths, cat.prompt_median, cat.prompt_sigma, cat.prompt_cap);
        output = lognormal_length(lengths, cat.output_median, cat.output_sigma, cat.output_cap, &z);
      }
      t.prompt_tokens.push_back(prompt);
      t.output_tokens.push_back(output);
      t.category.push_back(static_cast<int32_t>(c));
      const double cue_z = z + kCueNoise * words.normal();
      const int level = std::clamp(static_cast<int>(std::floor(cue_z + 2.5)), 0, 4);
      std::string text = kCues[level][words.below(3)];
      const size_t topics = 3 + words.below(6);
      for (size_t k = 0; k < topics; ++k) {
        if (!text.empty()) text += ' ';
        text += cat.topics[words.below(cat.topics.size())];
      }
      if (!texts.empty()) {
        for (const std::string& w : words_of(texts[words.below(texts.size())].text, 40)) text += ' ' + w;
      }
      t.prompt.push_back(std::move(text));
    }
    for (const Category& c : categories()) t.category_names.emplace_back(c.name);
    // Set the rate: --load times the server's saturated throughput for these requests.
    const Profile profile = load_profile(o.profile, o.iter_cost);
    const double saturated = saturated_rate(t, profile, o.server);
    const double rate = o.load * saturated;
    nk::Rng arrivals = root.split(3);
    t.arrival = arrival_times(o.arrivals, n, rate, arrivals);
    spdlog::info("saturated throughput {:.3f} requests/s under {}; rate {:.3f}/s at load {}", saturated, profile.name, rate,
                 o.load);
    validate_trace(o.output, t);
    nk::h5::Writer out(o.output, kTraceSchema, o.no_clobber);
    write_trace(out, t);
    out.attr("/", "mix", o.mix);
    out.attr("/", "arrivals", o.arrivals);
    out.attr("/", "prompts", o.prompts);
    out.attr("/", "load", o.load);
    out.attr("/", "rate", rate);
    out.attr("/", "saturated_rate", saturated);
    out.attr("/", "profile", profile.name);
    if (o.max_context > 0) out.attr("/", "max_context", o.max_context);
    out.commit();
    spdlog::info("wrote {} requests over {:.1f} s", n, t.arrival.back());
    return;
  }
  nk::h5::Writer out(o.output, kTraceSchema, o.no_clobber);
  write_trace(out, t);
  out.attr("/", "source", o.from_csv);
  out.commit();
  spdlog::info("wrote {} requests from {} over {:.1f} s", t.size(), o.from_csv, t.arrival.back());
}

}  // namespace sage
