// gen.cpp - synthetic traces. Each layer's post-RoPE keys are drawn around
// one topic vector per block (so pooled keys differ between blocks), and each
// GQA group's query at t points at two earlier blocks' topics (one of them
// the most recent complete block 30% of the time); a group's heads add
// --noise to it. --planted makes the attention input of layer l determine
// the next layer's group queries linearly: attn_in_l(t) A_l = RoPE_t^-1 of
// layer l+1's group queries (layer 0's input also gives layer 0's own
// queries through C), the rest of attn_in drawn in the null space of those
// maps; a Forecast can then learn the next layer's selection exactly up to
// the heads' noise. Without --planted attn_in is independent noise (traces
// for timing).
#include <Eigen/Dense>
#include <cmath>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/lm/layers.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "nk/rng.hpp"
#include "sparda-forecast/sparda.hpp"
#include "sparda-forecast/trace.hpp"

namespace sparda {

namespace {

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

enum Stream : uint64_t { kTopics = 1, kKeys, kValues, kTargets, kHeads, kMaps, kInput };

/// One layer's keys and values [B,Hkv,T,d] and its group queries [B,Hkv,T,d] (post-RoPE).
struct LayerDraw {
  std::vector<float> k, v;
  std::vector<double> a;
};

LayerDraw draw_layer(const GenOptions& o, const nk::Rng& root, int64_t layer) {
  const int64_t B = o.batch, G = o.kv_heads, T = o.tokens, d = o.head_dim, nb = (T + o.block - 1) / o.block;
  LayerDraw x;
  x.k.resize(static_cast<size_t>(B * G * T * d));
  x.v.resize(x.k.size());
  x.a.resize(x.k.size());
  const double beta = 1.0;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t g = 0; g < G; ++g) {
      const uint64_t stream = static_cast<uint64_t>(((layer * B + b) * G + g) * 8);
      nk::Rng topics = root.split(stream + kTopics), keys = root.split(stream + kKeys),
              values = root.split(stream + kValues), targets = root.split(stream + kTargets);
      std::vector<double> c(static_cast<size_t>(nb * d));
      for (double& e : c) e = topics.normal();
      const size_t base = static_cast<size_t>((b * G + g) * T * d);
      for (int64_t t = 0; t < T; ++t) {
        const int64_t j = t / o.block;
        for (int64_t i = 0; i < d; ++i) {
          x.k[base + t * d + i] = static_cast<float>(c[j * d + i] + 0.5 * keys.normal());
          x.v[base + t * d + i] = static_cast<float>(values.normal());
        }
        const int64_t nc = t / o.block;  // complete blocks before t's own
        if (nc == 0) {
          for (int64_t i = 0; i < d; ++i) x.a[base + t * d + i] = 0.3 * targets.normal();
          continue;
        }
        const int64_t j1 =
            targets.uniform() < 0.3 ? nc - 1 : static_cast<int64_t>(targets.below(static_cast<uint64_t>(nc)));
        const int64_t j2 = static_cast<int64_t>(targets.below(static_cast<uint64_t>(nc)));
        for (int64_t i = 0; i < d; ++i)
          x.a[base + t * d + i] = beta * (c[j1 * d + i] + 0.6 * c[j2 * d + i]) + 0.2 * targets.normal();
      }
    }
  return x;
}

/// Group queries [B,Hkv,T,d] (post-RoPE) to pre-RoPE rows [B*T, Hkv*d].
Matrix unrotated(const GenOptions& o, const std::vector<double>& a) {
  const int64_t B = o.batch, G = o.kv_heads, T = o.tokens, d = o.head_dim;
  Matrix u(B * T, G * d);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t g = 0; g < G; ++g)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t i = 0; i < d; ++i) u(b * T + t, g * d + i) = a[static_cast<size_t>(((b * G + g) * T + t) * d + i)];
  std::vector<int32_t> pos(static_cast<size_t>(B * T));
  for (int64_t r = 0; r < B * T; ++r) pos[static_cast<size_t>(r)] = static_cast<int32_t>(r % T);
  nk::lm::rope(u.data(), pos.data(), B * T, G, d, o.rope_theta, true);
  return u;
}

Matrix gaussian(int64_t rows, int64_t cols, nk::Rng rng, double scale) {
  Matrix m(rows, cols);
  for (int64_t i = 0; i < m.size(); ++i) m.data()[i] = scale * rng.normal();
  return m;
}

}  // namespace

void gen(const GenOptions& o, const nk::RunEnv& env) {
  const int64_t B = o.batch, L = o.layers, Hq = o.heads, Hkv = o.kv_heads, T = o.tokens, d = o.head_dim, D = o.d_model;
  if (Hq % Hkv)
    throw nk::usage_error("--heads " + std::to_string(Hq) + " is not a multiple of --kv-heads " + std::to_string(Hkv));
  if (d % 2) throw nk::usage_error("--head-dim must be even (RoPE turns pairs)");
  if (o.planted && D < 2 * Hkv * d)
    throw nk::usage_error("--planted needs --d-model >= 2 x kv-heads x head-dim = " + std::to_string(2 * Hkv * d) +
                          " (layer 0's input carries its own and the next layer's queries)");
  const double layer_bytes = 4.0 * static_cast<double>(B * T) * static_cast<double>(D + (Hq + 2 * Hkv) * d);
  if (3.0 * layer_bytes + 8.0 * static_cast<double>(B * T) * static_cast<double>(D + 4 * Hkv * d) >
      nk::h5::available_memory_bytes())
    throw nk::usage_error("a layer of these sizes needs more memory than is available");

  const nk::Rng root(env.seed);
  nk::h5::Writer out(o.output, kTraceSchema, o.no_clobber);
  std::vector<int64_t> lead;
  if (B > 1) lead.push_back(B);
  const auto shape = [&](std::vector<int64_t> rest) {
    std::vector<int64_t> s = lead;
    s.insert(s.end(), rest.begin(), rest.end());
    return s;
  };
  const std::string bdims = B > 1 ? "B," : "";

  nk::Progress progress("gen", L);
  LayerDraw cur = draw_layer(o, root, 0);
  for (int64_t l = 0; l < L; ++l) {
    LayerDraw next;
    if (l + 1 < L) next = draw_layer(o, root, l + 1);
    // Query heads: the group's query plus relative noise.
    std::vector<float> q(static_cast<size_t>(B * Hq * T * d));
    const int64_t Gs = Hq / Hkv;
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < Hq; ++h) {
        nk::Rng rng = root.split(static_cast<uint64_t>(((l * B + b) * Hq + h) * 8 + kHeads) + (1ull << 40));
        const int64_t g = h / Gs;
        for (int64_t t = 0; t < T; ++t) {
          const double* a = cur.a.data() + ((b * Hkv + g) * T + t) * d;
          double norm = 0;
          for (int64_t i = 0; i < d; ++i) norm += a[i] * a[i];
          const double sigma = o.noise * std::sqrt(norm / static_cast<double>(d));
          for (int64_t i = 0; i < d; ++i)
            q[static_cast<size_t>(((b * Hq + h) * T + t) * d + i)] = static_cast<float>(a[i] + sigma * rng.normal());
        }
      }
    // The attention input.
    Matrix h;
    const nk::Rng input = root.split(static_cast<uint64_t>(l) * 8 + kInput + (1ull << 41));
    if (o.planted && (l + 1 < L || l == 0)) {
      Matrix y, M;
      const nk::Rng maps = root.split(static_cast<uint64_t>(l) * 8 + kMaps + (1ull << 42));
      const double w = 1.0 / std::sqrt(static_cast<double>(D));
      if (l == 0 && L > 1) {
        const Matrix u0 = unrotated(o, cur.a), u1 = unrotated(o, next.a);
        y.resize(B * T, 2 * Hkv * d);
        y << u0, u1;
        M = gaussian(D, 2 * Hkv * d, maps, w);
      } else if (l == 0) {
        y = unrotated(o, cur.a);
        M = gaussian(D, Hkv * d, maps, w);
      } else {
        y = unrotated(o, next.a);
        M = gaussian(D, Hkv * d, maps, w);
      }
      // h = y M^+ + z (I - M M^+): exactly y through M, noise elsewhere.
      const Matrix pinv = (M.transpose() * M).ldlt().solve(M.transpose());
      const Matrix z = gaussian(B * T, D, input, 1.0);
      h = y * pinv + z - (z * M) * pinv;
    } else {
      h = gaussian(B * T, D, input, 1.0);
    }
    std::vector<float> hf(static_cast<size_t>(h.size()));
    for (int64_t i = 0; i < h.size(); ++i) hf[static_cast<size_t>(i)] = static_cast<float>(h.data()[i]);
    out.write(Trace::name(l, "attn_in"), hf.data(), shape({T, D}), bdims + "T,D");
    out.write(Trace::name(l, "q"), q.data(), shape({Hq, T, d}), bdims + "Hq,T,d");
    out.write(Trace::name(l, "k"), cur.k.data(), shape({Hkv, T, d}), bdims + "Hkv,T,d");
    out.write(Trace::name(l, "v"), cur.v.data(), shape({Hkv, T, d}), bdims + "Hkv,T,d");
    cur = std::move(next);
    progress.update(l + 1);
  }
  progress.finish();
  out.attr("/", "rope_theta", o.rope_theta);
  out.attr("/", "layers", L);
  out.attr("/", "heads", Hq);
  out.attr("/", "kv_heads", Hkv);
  out.attr("/", "head_dim", d);
  out.attr("/", "d_model", D);
  out.attr("/", "block", o.block);
  out.attr("/", "planted", static_cast<int64_t>(o.planted));
  out.commit();
  spdlog::info("gen: {} layers of T = {} tokens (batch {}), Hq {}, Hkv {}, d {}, D {}{}", L, T, B, Hq, Hkv, d, D,
               o.planted ? ", planted" : "");
}

}  // namespace sparda
