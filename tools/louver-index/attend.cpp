// attend.cpp - louver-index attend: attention restricted to the returned keys,
// and its error against dense attention over every key.
#include <cmath>

#include "louver-index/index_io.hpp"
#include "louver-index/louver.hpp"
#include "nk/context.hpp"
#include "nk/error.hpp"
#include "nk/kernels/attention.hpp"
#include "nk/log.hpp"
#include "nk/shard.hpp"
#include "nk/kernels/louver_search.hpp"

namespace louver {

namespace {

/// softmax(scale * scores) . values over the keys in 'ids' (all keys when
/// ids is null), the scores exact_score's (the index's own); also returns log
/// of the softmax normaliser.
std::vector<double> attention(const HeadIndex& head, int64_t dims, int64_t value_dims, const float* q, double scale,
                              const std::vector<int64_t>* ids, double& log_normaliser) {
  const int64_t count = ids ? static_cast<int64_t>(ids->size()) : head.size(dims);
  std::vector<double> logits(static_cast<size_t>(count));
  for (int64_t r = 0; r < count; ++r) {
    const int64_t key = ids ? (*ids)[static_cast<size_t>(r)] : r;
    logits[static_cast<size_t>(r)] = scale * exact_score(q, head.keys.data() + key * dims, dims);
  }
  std::vector<double> out(static_cast<size_t>(value_dims));
  log_normaliser = nk::kernels::softmax_combine(logits.data(), count, head.values.data(), value_dims,
                                                ids ? ids->data() : nullptr, out.data());
  return out;
}

}  // namespace

void attend(const QueryOptions& o, const nk::RunEnv& env) {
  const QueryJob job = open_query_job(o, env.shard);
  const Index& index = job.index;
  if (index.value_dims == 0) throw nk::input_error(o.input, "/values", "missing: attend needs an index built with /values");
  const double scale = o.scale > 0 ? o.scale : 1.0 / std::sqrt(static_cast<double>(index.dims));
  const int64_t first = job.first, count = job.count, dv = index.value_dims;
  std::vector<double> sparse(static_cast<size_t>(count * dv)), dense(static_cast<size_t>(count * dv));
  std::vector<double> error(static_cast<size_t>(count)), mass(static_cast<size_t>(count)), thresholds(static_cast<size_t>(count));
  std::vector<int64_t> kept(static_cast<size_t>(count));
#pragma omp parallel for schedule(dynamic, 4)
  for (int64_t r = 0; r < count; ++r) {
    const int64_t row = first + r;
    const HeadIndex& head = job.head_of(row);
    const float* q = job.query_of(row);
    const double t = row_threshold(o, env.seed, head, q, index.dims, row);
    const SearchResult result = search(head, index.subspaces, q, t);
    std::vector<int64_t> ids;
    for (const Hit& hit : result.hits) ids.push_back(hit.id);
    double log_hits = 0, log_all = 0;
    const std::vector<double> a = attention(head, index.dims, dv, q, scale, &ids, log_hits);
    const std::vector<double> b = attention(head, index.dims, dv, q, scale, nullptr, log_all);
    double diff = 0, norm = 0;
    for (int64_t j = 0; j < dv; ++j) {
      diff += std::pow(a[static_cast<size_t>(j)] - b[static_cast<size_t>(j)], 2);
      norm += std::pow(b[static_cast<size_t>(j)], 2);
    }
    std::copy(a.begin(), a.end(), sparse.begin() + r * dv);
    std::copy(b.begin(), b.end(), dense.begin() + r * dv);
    error[static_cast<size_t>(r)] = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
    mass[static_cast<size_t>(r)] = ids.empty() ? 0.0 : std::exp(log_hits - log_all);
    thresholds[static_cast<size_t>(r)] = t;
    kept[static_cast<size_t>(r)] = static_cast<int64_t>(ids.size());
  }
  nk::h5::Writer out(o.output, "louver-index.attention/1", o.no_clobber);
  out.write("/output", sparse.data(), {count, dv}, "Q,dv");
  out.write("/dense_output", dense.data(), {count, dv}, "Q,dv");
  out.write("/relative_error", error.data(), {count}, "Q");
  out.write("/mass", mass.data(), {count}, "Q");
  out.write("/hits", kept.data(), {count}, "Q");
  out.write("/threshold", thresholds.data(), {count}, "Q");
  out.attr("/", "scale", scale);
  out.commit();
  double worst = 0, mean = 0, least_mass = 1;
  for (int64_t r = 0; r < count; ++r) {
    worst = std::max(worst, error[static_cast<size_t>(r)]);
    mean += error[static_cast<size_t>(r)] / static_cast<double>(std::max<int64_t>(1, count));
    least_mass = std::min(least_mass, mass[static_cast<size_t>(r)]);
  }
  spdlog::info("{} quer(ies): relative L2 error of sparse attention: mean {:.2e}, worst {:.2e}; softmax mass kept >= {:.4f}",
               count, mean, worst, least_mass);
}

}  // namespace louver
