// run.cpp - louver-index build / append / query: files in, files out.
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "louver-index/index_io.hpp"
#include "louver-index/louver.hpp"
#include "nk/context.hpp"
#include "nk/error.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "nk/rng.hpp"
#include "nk/shard.hpp"
#include "nk/timer.hpp"
#include "nk/kernels/louver_ivf.hpp"
#include "nk/kernels/louver_quest.hpp"
#include "nk/kernels/louver_search.hpp"

namespace louver {

namespace {

void check_params(const IndexParams& p, int64_t dims) {
  if (p.subspaces < 1 || p.subspaces > dims) {
    throw nk::usage_error("--subspaces must be in 1..d = " + std::to_string(dims) + ", got " + std::to_string(p.subspaces));
  }
  if (p.branching < 2) throw nk::usage_error("--branching must be >= 2");
  if (p.leaf_size < 1 || p.buffer < 1) throw nk::usage_error("--leaf-size and --buffer must be >= 1");
}

}  // namespace

void build(const BuildOptions& o) {
  const nk::h5::File file = nk::h5::File::open(o.input);
  if (file.attr_string("/", "nk_schema")) file.require_schema("louver-index.kv/");
  const Vectors keys = read_vectors(file, "/keys");
  check_params(o.params, keys.dims);
  Vectors values;
  if (file.has("/values")) {
    values = read_vectors(file, "/values");
    if (values.heads != keys.heads || values.count != keys.count) {
      throw nk::input_error(file.path(), "/values", "has " + std::to_string(values.count) + " rows x " +
                                                        std::to_string(values.heads) + " heads; /keys has " +
                                                        std::to_string(keys.count) + " x " + std::to_string(keys.heads));
    }
  }
  nk::h5::Writer out(o.output, kIndexSchema, o.no_clobber);
  const nk::Stopwatch watch;
  Index index;
  index.params = o.params;
  index.dims = keys.dims;
  index.value_dims = values.data.empty() ? 0 : values.dims;
  index.subspaces = Subspaces::split(keys.dims, o.params.subspaces);
  index.heads.resize(static_cast<size_t>(keys.heads));
  for (int64_t h = 0; h < keys.heads; ++h) {  // build_codes runs the subspaces in parallel
    HeadIndex& head = index.heads[static_cast<size_t>(h)];
    head.keys.assign(keys.row(h, 0), keys.row(h, 0) + keys.count * keys.dims);
    if (index.value_dims) head.values.assign(values.row(h, 0), values.row(h, 0) + values.count * values.dims);
    build_codes(head, index.subspaces, o.params);
    finish_head(head, index.dims);
  }
  const double seconds = watch.seconds();
  write_index(out, index);
  out.attr("/", "build_seconds", seconds);
  out.commit();
  spdlog::info("indexed {} key(s) x {} head(s) (d = {}, S = {}) in {:.3f} s", keys.count, keys.heads, keys.dims,
               o.params.subspaces, seconds);
}

void append(const AppendOptions& o) {
  const nk::h5::File file = nk::h5::File::open(o.input);
  Index index = read_index(file);
  const nk::h5::File more = nk::h5::File::open(o.keys);
  const Vectors keys = read_vectors(more, "/keys");
  if (keys.dims != index.dims) {
    throw nk::input_error(more.path(), "/keys", "has d = " + std::to_string(keys.dims) + " but the index has d = " + std::to_string(index.dims));
  }
  if (keys.heads != static_cast<int64_t>(index.heads.size())) {
    throw nk::input_error(more.path(), "/keys", "has " + std::to_string(keys.heads) + " head(s), the index " + std::to_string(index.heads.size()));
  }
  Vectors values;
  if (index.value_dims) {
    values = read_vectors(more, "/values");
    if (values.dims != index.value_dims || values.count != keys.count || values.heads != keys.heads) {
      throw nk::input_error(more.path(), "/values", "does not match /keys and the index's value width");
    }
  }
  nk::h5::Writer out(o.output, kIndexSchema, o.no_clobber);
  const nk::Stopwatch watch;
  // New keys join the exact buffer; a full buffer gets codes against the
  // existing codebooks (its residuals are exact, so the guarantee holds).
  int64_t rebuilt = 0;
  double worst_ratio = 0;
  for (int64_t h = 0; h < keys.heads; ++h) {
    HeadIndex& head = index.heads[static_cast<size_t>(h)];
    const AppendReport report = append_keys(head, index.subspaces, index.params, keys.row(h, 0),
                                            index.value_dims ? values.row(h, 0) : nullptr, keys.count, index.value_dims,
                                            {o.rebuild_ratio, o.rebuild_growth});
    worst_ratio = std::max(worst_ratio, residual_ratio(head));
    rebuilt += report.rebuilt ? 1 : 0;
  }
  const double seconds = watch.seconds();
  if (rebuilt) {
    spdlog::info("codebooks of {} head(s) rebuilt over all keys (appended keys' residuals {:.2f}x the built keys'; "
                 "--rebuild-ratio {}, --rebuild-growth {})", rebuilt, worst_ratio, o.rebuild_ratio, o.rebuild_growth);
  } else {
    spdlog::debug("appended keys' residuals: {:.2f}x the built keys'", worst_ratio);
  }
  write_index(out, index);
  out.attr("/", "append_seconds", seconds);
  out.attr("/", "residual_ratio", worst_ratio);
  out.attr("/", "rebuilt_heads", rebuilt);
  out.commit();
  spdlog::info("appended {} key(s) per head in {:.3f} s; {} key(s) in the exact buffer", keys.count, seconds,
               index.heads[0].size(index.dims) - index.heads[0].coded);
}

double row_threshold(const QueryOptions& o, uint64_t seed, const HeadIndex& head, const float* query, int64_t dims, int64_t row) {
  if (o.has_threshold) return o.threshold;
  if (o.topk_oracle > 0) return kth_score(head, query, dims, o.topk_oracle);
  // --mass: a seeded sample per query row, so shards give the same thresholds.
  const int64_t n = head.size(dims);
  const std::vector<int64_t> sample = mass_sample(n, o.mass_sample, nk::Rng(seed).split(static_cast<uint64_t>(row)));
  const double scale = o.scale > 0 ? o.scale : 1.0 / std::sqrt(static_cast<double>(dims));
  return mass_threshold(head, query, dims, o.mass, scale, sample);
}

QueryJob open_query_job(const QueryOptions& o, const nk::Shard& shard) {
  if (static_cast<int>(o.has_threshold) + static_cast<int>(o.topk_oracle > 0) + static_cast<int>(o.mass > 0) != 1) {
    throw nk::usage_error("give exactly one of --threshold, --topk-oracle and --mass");
  }
  QueryJob job;
  const nk::h5::File index_file = nk::h5::File::open(o.input);
  job.index = read_index(index_file);
  const nk::h5::File query_file = nk::h5::File::open(o.queries);
  job.queries = read_vectors(query_file, "/queries");
  if (job.queries.dims != job.index.dims) {
    throw nk::input_error(query_file.path(), "/queries", "has d = " + std::to_string(job.queries.dims) +
                                                             " but the index has d = " + std::to_string(job.index.dims));
  }
  const auto kv_heads = static_cast<int64_t>(job.index.heads.size());
  if (job.queries.heads % kv_heads != 0) {
    throw nk::input_error(query_file.path(), "/queries", std::to_string(job.queries.heads) + " query head(s) are not a multiple of the index's " +
                                                             std::to_string(kv_heads) + " KV head(s)");
  }
  job.group = job.queries.heads / kv_heads;
  const auto [first, last] = nk::shard_range(shard, job.queries.heads * job.queries.count);
  job.first = first;
  job.count = last - first;
  return job;
}

void query(const QueryOptions& o, const nk::RunEnv& env) {
  const QueryJob job = open_query_job(o, env.shard);
  const Index& index = job.index;
  const int64_t first = job.first, count = job.count;
  std::vector<SearchResult> results(static_cast<size_t>(count));
  std::vector<double> thresholds(static_cast<size_t>(count));
  // Thresholds first: the top-k oracle scans every key, and must not be timed as the index's work.
  for (int64_t r = 0; r < count; ++r) {
    const int64_t row = first + r;
    thresholds[static_cast<size_t>(r)] = row_threshold(o, env.seed, job.head_of(row), job.query_of(row), index.dims, row);
  }
  const bool quest = o.method == "quest-threshold" || o.method == "quest-topk";
  std::vector<Pages> pages;
  if (quest) {
    if (o.page_size < 1) throw nk::usage_error("--page-size must be >= 1");
    for (const HeadIndex& head : index.heads) pages.push_back(build_pages(head, index.dims, o.page_size));
  }
  // IVF: k-means lists per KV head, made before any timing (as FAISS trains once).
  std::vector<Ivf> ivf;
  double ivf_build_seconds = 0;
  if (o.method == "ivf") {
    const nk::Stopwatch watch;
    for (size_t h = 0; h < index.heads.size(); ++h) {
      const HeadIndex& head = index.heads[h];
      const int64_t n = head.size(index.dims);
      ivf.push_back(build_ivf(head.keys.data(), n, index.dims, o.lists > 0 ? o.lists : default_lists(n), 10,
                              nk::Rng(env.seed).split(1000 + h)()));
    }
    ivf_build_seconds = watch.seconds();
  }
  const int64_t budget = std::max<int64_t>(1, static_cast<int64_t>(std::llround(o.budget * static_cast<double>(index.keys_per_head()))));
  // On CUDA, louver searches all rows of one KV head (contiguous rows) in one
  // GPU call, and the times are the GPU's; the Quest baselines stay on the CPU.
  const bool gpu = env.cuda() && o.method == "louver";
  if (env.cuda() && !gpu) spdlog::info("{} has no CUDA path: searching on the CPU", o.method);
  const int64_t rows_per_head = job.queries.count * job.group;
  // Runs search_cuda over [first, first + count), one call per KV head; returns the summed times.
  const auto on_gpu = [&](std::vector<SearchResult>& out, bool dense, nk::Progress* bar) {
    GpuTiming sum;
    for (int64_t r = 0; r < count;) {
      const int64_t row = first + r, end = std::min(count, (row / rows_per_head + 1) * rows_per_head - first);
      GpuTiming t;
      std::vector<SearchResult> part = search_cuda(job.head_of(row), index.subspaces, job.query_of(row), end - r,
                                                   thresholds.data() + r, dense, o.repeats, &t);
      std::move(part.begin(), part.end(), out.begin() + r);
      sum += t;
      r = end;
      if (bar) bar->update(r);
    }
    return sum;
  };
  // --repeats R: R rounds, each the search of every query and then (with
  // --compare-dense) the dense scan of every query; the fastest round of each
  // is reported, so that both face the same drift in machine speed.
  nk::Progress progress("query", count * o.repeats);
  GpuTiming gpu_time;
  double index_seconds = INFINITY, dense_seconds = 0, recall = -1;
  std::vector<SearchResult> dense(o.compare_dense ? static_cast<size_t>(count) : 0);
  if (gpu) {
    gpu_time = on_gpu(results, false, &progress);
    index_seconds = gpu_time.compute;
    if (o.compare_dense) dense_seconds = on_gpu(dense, true, nullptr).compute;
  } else {
    dense_seconds = o.compare_dense ? INFINITY : 0.0;
    for (int64_t round = 0; round < o.repeats; ++round) {
      nk::Stopwatch watch;
#pragma omp parallel for schedule(dynamic, 4)
      for (int64_t r = 0; r < count; ++r) {
        const int64_t row = first + r, kv = row / job.queries.count / job.group;
        const float* q = job.query_of(row);
        const double t = thresholds[static_cast<size_t>(r)];
        const HeadIndex& head = job.head_of(row);
        if (o.method == "louver") results[static_cast<size_t>(r)] = search(head, index.subspaces, q, t);
        else if (o.method == "quest-threshold") results[static_cast<size_t>(r)] = quest_threshold(head, pages[static_cast<size_t>(kv)], q, index.dims, t);
        else if (o.method == "ivf") results[static_cast<size_t>(r)] = ivf_search(ivf[static_cast<size_t>(kv)], head.keys.data(), q, t, budget);
        else results[static_cast<size_t>(r)] = quest_topk(head, pages[static_cast<size_t>(kv)], q, index.dims, t, budget);
        if (omp_get_thread_num() == 0) progress.update(round * count + r + 1);
      }
      index_seconds = std::min(index_seconds, watch.lap());
      if (!o.compare_dense) continue;
#pragma omp parallel for schedule(dynamic, 4)
      for (int64_t r = 0; r < count; ++r) {
        const int64_t row = first + r;
        dense[static_cast<size_t>(r)] = dense_scan(job.head_of(row), job.query_of(row), index.dims, thresholds[static_cast<size_t>(r)]);
      }
      dense_seconds = std::min(dense_seconds, watch.seconds());
    }
  }
  progress.finish();
  if (o.compare_dense) {
    int64_t found = 0, expected = 0;
    for (int64_t r = 0; r < count; ++r) {
      const auto& a = results[static_cast<size_t>(r)].hits;
      const auto& b = dense[static_cast<size_t>(r)].hits;
      expected += static_cast<int64_t>(b.size());
      found += static_cast<int64_t>(a.size());
      const bool same = a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](const Hit& x, const Hit& y) { return x.id == y.id; });
      // Exact methods must agree with the dense scan; quest-topk and ivf are allowed to miss keys.
      if (!same && o.method != "quest-topk" && o.method != "ivf") {
        throw nk::Error(nk::Exit::runtime, "internal error: query " + std::to_string(first + r) + " differs from the dense scan");
      }
    }
    recall = expected ? static_cast<double>(found) / static_cast<double>(expected) : 1.0;
  }
  std::vector<int64_t> offsets{0}, ids, scanned;
  std::vector<double> scores;
  int64_t total_scanned = 0;
  for (const SearchResult& result : results) {
    for (const Hit& hit : result.hits) {
      ids.push_back(hit.id);
      scores.push_back(hit.score);
    }
    offsets.push_back(static_cast<int64_t>(ids.size()));
    scanned.push_back(result.scanned);
    total_scanned += result.scanned;
  }
  nk::h5::Writer out(o.output, kHitsSchema, o.no_clobber);
  out.write("/offsets", offsets.data(), {count + 1}, "Q+1");
  out.attr("/offsets", "nk_merge", "offsets");
  out.write("/ids", ids.data(), {static_cast<int64_t>(ids.size())}, "hits");
  out.write("/scores", scores.data(), {static_cast<int64_t>(scores.size())}, "hits");
  out.write("/scanned", scanned.data(), {count}, "Q");
  out.write("/threshold", thresholds.data(), {count}, "Q");
  const double fraction = static_cast<double>(total_scanned) / static_cast<double>(std::max<int64_t>(1, count * index.keys_per_head()));
  out.attr("/", "query_seconds", index_seconds);
  out.attr("/", "scanned_fraction", fraction);
  out.attr("/", "method", o.method);
  if (o.method == "ivf") {
    out.attr("/", "lists", ivf.empty() ? int64_t{0} : ivf.front().count());
    out.attr("/", "ivf_build_seconds", ivf_build_seconds);
  }
  out.attr("/", "device", gpu ? "cuda" : "cpu");
  if (gpu) nk::kernels::write_timing(out, gpu_time);
  if (o.compare_dense) {
    out.attr("/", "dense_seconds", dense_seconds);
    out.attr("/", "recall", recall);
  }
  out.commit();
  spdlog::info("{}{}: {} quer(ies): {} hit(s), scanned {:.1f}% of keys, {:.3f} ms per query{}", o.method, gpu ? " (cuda)" : "", count, ids.size(),
               100 * fraction, 1e3 * index_seconds / std::max<int64_t>(1, count),
               o.compare_dense ? fmt::format("; dense scan {:.3f} ms per query; recall {:.4f}", 1e3 * dense_seconds / std::max<int64_t>(1, count), recall) : "");
}

}  // namespace louver
