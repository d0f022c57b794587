// gen.cpp - synthetic MLA caches and queries at DeepSeek's sizes.
//
// deepseek: the latent c ~ N(0, (content_scale g_j)^2) with per-channel g_j
// lognormal(0, channel_sigma) (content sits near zero, a few channels wider);
// the RoPE key k_R rotate-half (Hugging Face Llama) pairs (i, i + d_R/2) at
// frequency theta^(-2i/d_R): N(0, 1) before rotation, except the
// heavy_pairs lowest-frequency pairs, whose magnitude per token is
// heavy_scale * lognormal(0, heavy_sigma) along a direction fixed per row (the
// massive, nearly constant RoPE channels of trained models: values to ~1e3).
// Queries: q_c ~ N(0, query_content^2), q_R ~ N(0, query_rope^2), heavy
// channels N(0, (query_rope query_heavy)^2), so that content and RoPE logits
// both vary by O(1) at the default scale. iid: every value N(0, 1).
#include <cmath>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/rng.hpp"
#include "snapmla-decode/snapmla.hpp"

namespace snapmla {

namespace {
enum Stream : uint64_t { kLengths = 1, kChannels, kContent, kRope, kPhase, kQuery };
}

void gen(const GenOptions& o, const nk::RunEnv& env) {
  if (o.dr % 2 != 0) throw nk::usage_error("--d-r must be even (RoPE rotates pairs), got " + std::to_string(o.dr));
  if (o.heavy_pairs > o.dr / 2) throw nk::usage_error("--heavy-pairs " + std::to_string(o.heavy_pairs) + " exceeds d_R/2 = " + std::to_string(o.dr / 2));
  const double values = static_cast<double>(o.batch) * o.tokens * (o.dc + o.dr) + static_cast<double>(o.batch) * o.heads * (o.dc + o.dr);
  if (values * 4.0 * 1.5 > nk::h5::available_memory_bytes())
    throw nk::usage_error("B x N x (d_c + d_R) = " + std::to_string(o.batch) + " x " + std::to_string(o.tokens) + " x " +
                          std::to_string(o.dc + o.dr) + " floats are more than the memory available");
  const nk::Rng root(env.seed);
  const bool deepseek = o.profile == "deepseek";
  std::vector<int32_t> lengths(static_cast<size_t>(o.batch), static_cast<int32_t>(o.tokens));
  if (o.ragged) {
    nk::Rng r = root.split(kLengths);
    const int64_t lo = std::max<int64_t>(1, o.tokens / 2);
    for (auto& l : lengths) l = static_cast<int32_t>(lo + static_cast<int64_t>(r.below(static_cast<uint64_t>(o.tokens - lo + 1))));
  }
  std::vector<double> g(static_cast<size_t>(o.dc), 1.0);
  if (deepseek) {
    nk::Rng r = root.split(kChannels);
    for (double& v : g) v = o.content_scale * std::exp(o.channel_sigma * r.normal());
  }
  std::vector<float> ckv(static_cast<size_t>(o.batch * o.tokens * o.dc), 0.0f), kpe(static_cast<size_t>(o.batch * o.tokens * o.dr), 0.0f);
  const int64_t half = o.dr / 2;
  for (int64_t b = 0; b < o.batch; ++b) {
    nk::Rng rc = root.split(kContent).split(static_cast<uint64_t>(b));
    nk::Rng rr = root.split(kRope).split(static_cast<uint64_t>(b));
    nk::Rng rp = root.split(kPhase).split(static_cast<uint64_t>(b));
    std::vector<double> phase(static_cast<size_t>(half));
    for (double& v : phase) v = 2 * M_PI * rp.uniform();
    for (int64_t t = 0; t < lengths[static_cast<size_t>(b)]; ++t) {
      float* c = ckv.data() + (b * o.tokens + t) * o.dc;
      for (int64_t j = 0; j < o.dc; ++j) c[j] = static_cast<float>(g[static_cast<size_t>(j)] * rc.normal());
      float* k = kpe.data() + (b * o.tokens + t) * o.dr;
      for (int64_t i = 0; i < half; ++i) {
        double x, y;
        if (deepseek && i >= half - o.heavy_pairs) {
          const double a = o.heavy_scale * std::exp(o.heavy_sigma * rr.normal());
          x = a * std::cos(phase[static_cast<size_t>(i)]);
          y = a * std::sin(phase[static_cast<size_t>(i)]);
        } else {
          x = rr.normal();
          y = rr.normal();
        }
        if (deepseek) {
          const double angle = static_cast<double>(t) * std::pow(o.theta, -2.0 * static_cast<double>(i) / static_cast<double>(o.dr));
          const double cs = std::cos(angle), sn = std::sin(angle);
          k[i] = static_cast<float>(x * cs - y * sn);
          k[i + half] = static_cast<float>(x * sn + y * cs);
        } else {
          k[i] = static_cast<float>(x);
          k[i + half] = static_cast<float>(y);
        }
      }
    }
  }
  std::vector<float> q(static_cast<size_t>(o.batch * o.heads * (o.dc + o.dr)));
  for (int64_t b = 0; b < o.batch; ++b) {
    nk::Rng r = root.split(kQuery).split(static_cast<uint64_t>(b));
    for (int64_t h = 0; h < o.heads; ++h) {
      float* row = q.data() + (b * o.heads + h) * (o.dc + o.dr);
      for (int64_t j = 0; j < o.dc; ++j) row[j] = static_cast<float>((deepseek ? o.query_content : 1.0) * r.normal());
      for (int64_t j = 0; j < o.dr; ++j) {
        const bool heavy = deepseek && (j % half) >= half - o.heavy_pairs;
        row[o.dc + j] = static_cast<float>((deepseek ? o.query_rope * (heavy ? o.query_heavy : 1.0) : 1.0) * r.normal());
      }
    }
  }
  for (float v : kpe)
    if (!std::isfinite(v)) throw nk::usage_error("the RoPE knobs give values beyond float32 (lower --heavy-scale or --heavy-sigma)");
  const double scale = o.softmax_scale > 0 ? o.softmax_scale : 1.0 / std::sqrt(192.0);
  nk::h5::Writer out(o.output, kCacheSchema, o.no_clobber);
  out.write("/ckv", ckv.data(), {o.batch, o.tokens, o.dc}, "B,N,d_c");
  out.write("/kpe", kpe.data(), {o.batch, o.tokens, o.dr}, "B,N,d_R");
  out.write("/q", q.data(), {o.batch, o.heads, o.dc + o.dr}, "B,H,d_c+d_R");
  out.write("/lengths", lengths.data(), {o.batch}, "B");
  out.attr("/", "softmax_scale", scale);
  out.attr("/", "profile", o.profile);
  out.attr("/", "rope", "rotate-half pairs (i, i + d_R/2), inv_freq theta^(-2i/d_R)");
  out.attr("/", "theta", o.theta);
  out.commit();
  float amax_c = 0, amax_r = 0;
  for (float v : ckv) amax_c = std::max(amax_c, std::fabs(v));
  for (float v : kpe) amax_r = std::max(amax_r, std::fabs(v));
  spdlog::info("generated B={} N={} H={} d_c={} d_R={} ({}): max |c| {:.3g}, max |k_R| {:.3g}", o.batch, o.tokens, o.heads, o.dc,
               o.dr, o.profile, amax_c, amax_r);
}

}  // namespace snapmla
