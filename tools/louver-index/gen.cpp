// gen.cpp - synthetic KV caches. 'llm': clustered keys with anisotropic
// channels, a few outlier channels and RoPE rotations over positions, and
// decode queries from a shifted distribution (not drawn from the keys);
// 'iid': standard normal keys and queries, for contrast.
#include <cmath>

#include "louver-index/louver.hpp"
#include "nk/context.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/rng.hpp"

namespace louver {

namespace {

enum Stream : uint64_t { kKeys = 1, kQueries, kValues, kShape };

/// Rotates pairs (2j, 2j+1) by position * 10000^(-2j/d), as rotary embeddings do.
void rope(float* v, int64_t dims, double position) {
  for (int64_t j = 0; j + 1 < dims; j += 2) {
    const double angle = position * std::pow(10000.0, -static_cast<double>(j) / static_cast<double>(dims));
    const double c = std::cos(angle), s = std::sin(angle);
    const double a = v[j], b = v[j + 1];
    v[j] = static_cast<float>(a * c - b * s);
    v[j + 1] = static_cast<float>(a * s + b * c);
  }
}

struct Shape {
  std::vector<double> scale;    ///< per channel: small on fast-rotating RoPE pairs, large on slow ones, outliers
  std::vector<double> centers;  ///< [clusters, d]
  std::vector<double> basis;    ///< [d, rank]: keys vary mostly inside a low-rank subspace
  std::vector<double> query_shift;
  int64_t clusters = 16, rank = 8;
};

// Measured key caches have a low effective rank, most energy in the slowly
// rotating (low-frequency) RoPE pairs and a few outlier channels.
Shape llm_shape(int64_t dims, nk::Rng rng) {
  Shape shape;
  shape.scale.resize(static_cast<size_t>(dims));
  for (int64_t j = 0; j < dims; ++j) {
    const double slowness = static_cast<double>(j) / static_cast<double>(dims);
    shape.scale[static_cast<size_t>(j)] = 0.1 + 1.5 * slowness * slowness;
  }
  for (int outlier = 0; outlier < 4; ++outlier) shape.scale[static_cast<size_t>(dims / 2 + static_cast<int64_t>(rng.below(static_cast<uint64_t>(dims - dims / 2))))] *= 6.0;
  shape.centers.resize(static_cast<size_t>(shape.clusters * dims));
  for (double& c : shape.centers) c = rng.normal();
  shape.basis.resize(static_cast<size_t>(dims * shape.rank));
  for (double& b : shape.basis) b = rng.normal() / std::sqrt(static_cast<double>(shape.rank));
  shape.query_shift.resize(static_cast<size_t>(dims));
  for (double& v : shape.query_shift) v = 0.5 * rng.normal();
  return shape;
}

}  // namespace

void gen(const GenOptions& o, const nk::RunEnv& env) {
  if (o.keys < 1 || o.dims < 1 || o.queries < 1 || o.kv_heads < 1) throw nk::usage_error("--n, --d, --queries and --heads must be >= 1");
  const int64_t query_heads = o.query_heads ? o.query_heads : o.kv_heads;
  if (query_heads % o.kv_heads != 0) throw nk::usage_error("--query-heads must be a multiple of --heads (GQA)");
  const double bytes = 4.0 * static_cast<double>(o.kv_heads) * o.keys * (o.dims + o.value_dims) +
                       4.0 * static_cast<double>(query_heads) * o.queries * o.dims;
  if (bytes * 2 > nk::h5::available_memory_bytes()) throw nk::usage_error("--n/--d/--queries need more memory than is available");
  const nk::Rng root(env.seed);
  const bool llm = o.profile == "llm";
  std::vector<float> keys(static_cast<size_t>(o.kv_heads * o.keys * o.dims));
  std::vector<float> queries(static_cast<size_t>(query_heads * o.queries * o.dims));
  std::vector<float> values(static_cast<size_t>(o.kv_heads * o.keys * o.value_dims));
  for (int64_t h = 0; h < o.kv_heads; ++h) {
    const Shape shape = llm_shape(o.dims, root.split(kShape).split(static_cast<uint64_t>(h)));
    nk::Rng stream = root.split(kKeys).split(static_cast<uint64_t>(h));
    for (int64_t i = 0; i < o.keys; ++i) {
      float* k = keys.data() + (h * o.keys + i) * o.dims;
      const uint64_t cluster = stream.below(static_cast<uint64_t>(shape.clusters));
      std::vector<double> latent(static_cast<size_t>(shape.rank));
      for (double& z : latent) z = stream.normal();
      for (int64_t j = 0; j < o.dims; ++j) {
        double value = shape.centers[cluster * o.dims + j] + 0.1 * stream.normal();
        for (int64_t r = 0; r < shape.rank; ++r) value += shape.basis[static_cast<size_t>(j * shape.rank + r)] * latent[static_cast<size_t>(r)];
        k[j] = llm ? static_cast<float>(shape.scale[static_cast<size_t>(j)] * value) : static_cast<float>(stream.normal());
      }
      if (llm) rope(k, o.dims, static_cast<double>(i));
    }
    nk::Rng value_stream = root.split(kValues).split(static_cast<uint64_t>(h));
    for (int64_t i = 0; i < o.keys * o.value_dims; ++i) values[static_cast<size_t>(h * o.keys * o.value_dims + i)] = static_cast<float>(value_stream.normal());
    for (int64_t qh = h * (query_heads / o.kv_heads); qh < (h + 1) * (query_heads / o.kv_heads); ++qh) {
      nk::Rng q_stream = root.split(kQueries).split(static_cast<uint64_t>(qh));
      for (int64_t m = 0; m < o.queries; ++m) {
        float* q = queries.data() + (qh * o.queries + m) * o.dims;
        for (int64_t j = 0; j < o.dims; ++j) {
          const double noise = q_stream.normal();
          // Queries share the keys' channel scales but not their distribution.
          q[j] = llm ? static_cast<float>(shape.scale[static_cast<size_t>(j)] * (shape.query_shift[static_cast<size_t>(j)] + noise))
                     : static_cast<float>(noise);
        }
        if (llm) rope(q, o.dims, static_cast<double>(o.keys + m));  // decode positions after the cache
      }
    }
  }
  nk::h5::Writer out(o.output, kKvSchema, o.no_clobber);
  if (o.kv_heads == 1) {
    out.write("/keys", keys.data(), {o.keys, o.dims}, "N,d");
    if (o.value_dims) out.write("/values", values.data(), {o.keys, o.value_dims}, "N,dv");
  } else {
    out.write("/keys", keys.data(), {o.kv_heads, o.keys, o.dims}, "H,N,d");
    if (o.value_dims) out.write("/values", values.data(), {o.kv_heads, o.keys, o.value_dims}, "H,N,dv");
  }
  if (query_heads == 1) out.write("/queries", queries.data(), {o.queries, o.dims}, "M,d");
  else out.write("/queries", queries.data(), {query_heads, o.queries, o.dims}, "Hq,M,d");
  out.attr("/", "profile", o.profile);
  out.commit();
  spdlog::info("generated {} key(s) x {} head(s), d = {}, {} quer(ies) x {} head(s), profile {}", o.keys, o.kv_heads,
               o.dims, o.queries, query_heads, o.profile);
}

}  // namespace louver
