// profile.cpp - what an iteration costs: a linear profile, a roofline for a
// GPU preset, or a TOML file (calibrate's output or the user's own).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "nk/distribution.hpp"
#include "nk/error.hpp"
#include "nk/shipped.hpp"
#include "sagesched/sagesched.hpp"

namespace sage {

namespace {

/// A dense Llama-3-8B on one GPU (sagesched(1) PROFILES): the numbers a
/// roofline needs, with the derating stated beside them.
struct Roofline {
  double t0 = 1e-3;                 ///< per-iteration host overhead (scheduler, launch)
  double peak_flops = 989e12;       ///< dense BF16
  double bandwidth = 4.8e12;        ///< HBM bytes/s
  double weight_bytes = 16.06e9;    ///< 8.03e9 parameters in BF16
  double flops_per_token = 16.06e9; ///< 2 x parameters
  double attn_flops = 524288;       ///< per (query, key) pair: 4 x 32 layers x 4096
  double kv_bytes_per_token = 131072;  ///< 32 layers x 8 KV heads x 128 x (K, V) x 2 bytes
  double compute_efficiency = 0.5;  ///< achieved / peak FLOP/s of a large batch
  double bandwidth_efficiency = 0.8;
  double pcie_bandwidth = 50e9;     ///< host <-> device for --swap (PCIe 5 x16, effective)
  double memory_bytes = 141e9;      ///< device memory
  double memory_utilization = 0.9;  ///< vLLM's gpu_memory_utilization
  double activation_bytes = 2e9;    ///< reserved for activations
};

Profile from_roofline(const std::string& name, const Roofline& r, const std::string& source) {
  Profile p;
  p.name = name;
  p.t0 = r.t0;
  const double flop_s = r.peak_flops * r.compute_efficiency, byte_s = r.bandwidth * r.bandwidth_efficiency;
  Roof compute;
  compute.kp = r.flops_per_token / flop_s;
  compute.ka = 0.5 * r.attn_flops / flop_s;  // causal: about half the pairs of A
  compute.kc = r.attn_flops / flop_s;
  // A decoding sequence computes one token (S also counts a prefill chunk's
  // sequence: one token's FLOPs too many, negligible beside the chunk's).
  compute.ks = r.flops_per_token / flop_s;
  Roof memory;
  memory.k0 = r.weight_bytes / byte_s;
  memory.kc = r.kv_bytes_per_token / byte_s;
  memory.kp = r.kv_bytes_per_token / byte_s;  // the chunk's KV is written
  p.roofs = {compute, memory};
  p.cw = r.pcie_bandwidth > 0 ? r.kv_bytes_per_token / r.pcie_bandwidth : -1;
  const double kv_bytes = r.memory_bytes * r.memory_utilization - r.weight_bytes - r.activation_bytes;
  p.kv_tokens = kv_bytes > 0 ? static_cast<int64_t>(kv_bytes / r.kv_bytes_per_token) : 0;
  std::ostringstream d;
  d << source << ": roofline t0 + max(FLOPs / (" << r.peak_flops << " x " << r.compute_efficiency << "), bytes / ("
    << r.bandwidth << " x " << r.bandwidth_efficiency << ")); weights " << r.weight_bytes << " B, KV "
    << r.kv_bytes_per_token << " B/token, " << p.kv_tokens << " KV tokens";
  p.description = d.str();
  return p;
}

Roofline preset(const std::string& name) {
  Roofline r;
  if (name == "h100-llama3-8b") {
    r.bandwidth = 3.35e12;
    r.memory_bytes = 80e9;
  } else if (name != "h200-llama3-8b") {
    throw nk::usage_error("--profile '" + name +
                          "': not a preset (h100-llama3-8b, h200-llama3-8b), a shipped profile (h200-probed, cpu-nklm) "
                          "nor a readable file");
  }
  return r;
}

/// key = value lines; '#' starts a comment; strings in double quotes.
std::map<std::string, std::string> read_toml(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw nk::io_error(path, "cannot be read");
  std::map<std::string, std::string> kv;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '"') quoted = !quoted;
      if (line[i] == '#' && !quoted) {
        line.resize(i);
        break;
      }
    }
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos) throw nk::input_error(path, "", "line " + std::to_string(number) + ": expected key = value");
    auto trim = [](std::string s) {
      s.erase(0, s.find_first_not_of(" \t\r"));
      s.erase(s.find_last_not_of(" \t\r") + 1);
      return s;
    };
    const std::string key = trim(line.substr(0, eq));
    std::string value = trim(line.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
    if (key.empty()) throw nk::input_error(path, "", "line " + std::to_string(number) + ": empty key");
    kv[key] = value;
  }
  return kv;
}

Profile from_toml(const std::string& path) {
  const auto kv = read_toml(path);
  auto text = [&](const std::string& key, const std::string& needs) {
    const auto it = kv.find(key);
    if (it == kv.end()) throw nk::input_error(path, "", "key '" + key + "' missing (" + needs + ")");
    return it->second;
  };
  auto number = [&](const std::string& key, const std::string& needs, double lo) {
    const std::string t = text(key, needs);
    double v = NAN;
    try {
      size_t used = 0;
      v = std::stod(t, &used);
      if (used != t.size()) v = NAN;
    } catch (const std::exception&) {
    }
    if (!std::isfinite(v) || v < lo) {
      throw nk::input_error(path, "", "key '" + key + "' = '" + t + "': expected a finite number >= " + std::to_string(lo));
    }
    return v;
  };
  auto optional = [&](const std::string& key, double fallback, const std::string& needs) {
    return kv.count(key) ? number(key, needs, 0) : fallback;
  };
  const std::string kind = kv.count("kind") ? kv.at("kind") : "linear";
  Profile p;
  if (kind == "linear") {
    const std::string needs = "a linear profile needs t0, cp, ca, cc, cs; cw and kv_tokens are optional";
    p.t0 = number("t0", needs, 0);
    Roof roof;
    roof.kp = number("cp", needs, 0);
    roof.ka = number("ca", needs, 0);
    roof.kc = number("cc", needs, 0);
    roof.ks = number("cs", needs, 0);
    p.roofs = {roof};
    p.cw = optional("cw", -1, needs);
    p.kv_tokens = static_cast<int64_t>(optional("kv_tokens", 0, needs));
    p.description = path + ": linear t0 + cp P + ca A + cc C + cs S";
  } else if (kind == "roofline") {
    const std::string needs =
        "a roofline profile needs t0, peak_flops, bandwidth, weight_bytes, flops_per_token, attn_flops, "
        "kv_bytes_per_token, compute_efficiency, bandwidth_efficiency, memory_bytes";
    Roofline r;
    r.t0 = number("t0", needs, 0);
    r.peak_flops = number("peak_flops", needs, 1);
    r.bandwidth = number("bandwidth", needs, 1);
    r.weight_bytes = number("weight_bytes", needs, 0);
    r.flops_per_token = number("flops_per_token", needs, 0);
    r.attn_flops = number("attn_flops", needs, 0);
    r.kv_bytes_per_token = number("kv_bytes_per_token", needs, 1);
    r.compute_efficiency = number("compute_efficiency", needs, 1e-6);
    r.bandwidth_efficiency = number("bandwidth_efficiency", needs, 1e-6);
    r.memory_bytes = number("memory_bytes", needs, 0);
    r.memory_utilization = optional("memory_utilization", r.memory_utilization, needs);
    r.activation_bytes = optional("activation_bytes", r.activation_bytes, needs);
    r.pcie_bandwidth = optional("pcie_bandwidth", 0, needs);
    p = from_roofline(kv.count("name") ? kv.at("name") : path, r, path);
    if (kv.count("kv_tokens")) p.kv_tokens = static_cast<int64_t>(number("kv_tokens", needs, 0));
  } else {
    throw nk::input_error(path, "", "kind = '" + kind + "': expected linear or roofline");
  }
  if (kv.count("name")) p.name = kv.at("name");
  if (p.name.empty()) p.name = path;
  return p;
}

/// Sum over integer c in [lo, hi] of (a + b c).
double line_sum(double a, double b, int64_t lo, int64_t hi) {
  if (hi < lo) return 0;
  const double n = static_cast<double>(hi - lo + 1);
  return n * a + b * 0.5 * n * static_cast<double>(lo + hi);
}

}  // namespace

std::vector<std::string> profile_presets() { return {"h100-llama3-8b", "h200-llama3-8b"}; }
std::vector<std::string> shipped_profiles() { return {"h200-probed", "cpu-nklm"}; }

std::string roofline_toml(const std::string& preset_name, const RooflineOverride& o) {
  Roofline r = preset(preset_name);
  if (o.peak_flops > 0) r.peak_flops = o.peak_flops;
  if (o.bandwidth > 0) r.bandwidth = o.bandwidth;
  if (o.compute_efficiency > 0) r.compute_efficiency = o.compute_efficiency;
  if (o.bandwidth_efficiency > 0) r.bandwidth_efficiency = o.bandwidth_efficiency;
  if (o.memory_bytes > 0) r.memory_bytes = o.memory_bytes;
  std::ostringstream t;
  t.precision(8);
  t << o.comment << "kind = \"roofline\"\nname = \"" << o.name << "\"\n"
    << "t0 = " << r.t0 << "\npeak_flops = " << r.peak_flops << "\nbandwidth = " << r.bandwidth
    << "\ncompute_efficiency = " << r.compute_efficiency << "\nbandwidth_efficiency = " << r.bandwidth_efficiency
    << "\nweight_bytes = " << r.weight_bytes << "\nflops_per_token = " << r.flops_per_token << "\nattn_flops = " << r.attn_flops
    << "\nkv_bytes_per_token = " << r.kv_bytes_per_token << "\nmemory_bytes = " << r.memory_bytes
    << "\nmemory_utilization = " << r.memory_utilization << "\nactivation_bytes = " << r.activation_bytes
    << "\npcie_bandwidth = " << r.pcie_bandwidth << "\n";
  return t.str();
}

Profile load_profile(const std::string& profile, const std::string& iter_cost) {
  if (!iter_cost.empty()) {
    const nk::Spec s = nk::parse_spec("--iter-cost", iter_cost);
    if (s.name != "linear" || s.args.size() < 5 || s.args.size() > 6) {
      throw nk::usage_error("--iter-cost '" + iter_cost + "': expected linear:t0,cp,ca,cc,cs[,cw]");
    }
    for (double v : s.args) {
      if (!(v >= 0)) throw nk::usage_error("--iter-cost '" + iter_cost + "': coefficients must be >= 0");
    }
    Profile p;
    p.name = iter_cost;
    p.t0 = s.args[0];
    Roof roof;
    roof.kp = s.args[1];
    roof.ka = s.args[2];
    roof.kc = s.args[3];
    roof.ks = s.args[4];
    p.roofs = {roof};
    p.cw = s.args.size() == 6 ? s.args[5] : -1;
    p.description = "--iter-cost " + iter_cost;
    return p;
  }
  const std::vector<std::string> presets = profile_presets();
  if (std::find(presets.begin(), presets.end(), profile) != presets.end()) {
    return from_roofline(profile, preset(profile), profile);
  }
  for (const std::string& shipped : shipped_profiles()) {
    if (profile == shipped) return from_toml(nk::shipped_data("sagesched/" + shipped + ".toml"));
  }
  if (std::ifstream(profile).good()) return from_toml(profile);
  preset(profile);  // throws the usage error naming the presets
  return {};
}

double Profile::iteration_time(const Work& w) const {
  double roof = 0;
  for (const Roof& r : roofs) roof = std::max(roof, r.time(w));
  return t0 + roof + (w.swapped > 0 ? std::max(cw, 0.0) * w.swapped : 0.0);
}

double Profile::solo_decode_time(int64_t c_lo, int64_t c_hi) const {
  if (c_hi < c_lo) return 0;
  // Each step is t0 + max over roofs of (a_r + b_r c): a convex piecewise-linear
  // function of c. Split [c_lo, c_hi] where the roofs cross and sum each piece
  // in closed form.
  std::vector<double> cuts;
  for (size_t i = 0; i < roofs.size(); ++i) {
    for (size_t j = i + 1; j < roofs.size(); ++j) {
      const double ai = roofs[i].k0 + roofs[i].ks, bi = roofs[i].kc;
      const double aj = roofs[j].k0 + roofs[j].ks, bj = roofs[j].kc;
      if (bi != bj) {
        const double x = (aj - ai) / (bi - bj);
        if (x > static_cast<double>(c_lo) && x < static_cast<double>(c_hi)) cuts.push_back(x);
      }
    }
  }
  std::sort(cuts.begin(), cuts.end());
  double total = 0;
  int64_t lo = c_lo;
  for (size_t k = 0; k <= cuts.size(); ++k) {
    const int64_t hi = k < cuts.size() ? static_cast<int64_t>(std::floor(cuts[k])) : c_hi;
    if (hi < lo) continue;
    const double mid = 0.5 * static_cast<double>(lo + hi);
    const Roof* best = &roofs.front();
    double best_time = -INFINITY;
    for (const Roof& r : roofs) {
      const double t = r.k0 + r.ks + r.kc * mid;
      if (t > best_time) best_time = t, best = &r;
    }
    total += line_sum(t0 + best->k0 + best->ks, best->kc, lo, hi);
    lo = hi + 1;
  }
  return total;
}

double Profile::solo_time(int64_t prompt, int64_t target, int64_t prefilled, int64_t generated, int64_t output,
                          int64_t max_tokens) const {
  double total = 0;
  if (prefilled < target) {
    for (int64_t x = prefilled; x < target;) {
      const int64_t chunk = std::min(max_tokens, target - x);
      Work w;
      w.prefill = static_cast<double>(chunk);
      w.attn = static_cast<double>(chunk) * static_cast<double>(x + chunk);
      w.sequences = 1;
      total += iteration_time(w);
      x += chunk;
    }
    ++generated;
  }
  if (generated < output) total += solo_decode_time(prompt + generated, prompt + output - 1);
  return total;
}

}  // namespace sage
