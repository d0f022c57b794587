// sample.cpp - the sample verb: for each query, S inputs in its fiber by a
// guided prior (ndtm, dps), the prior alone (none), or feature inversion
// without a prior (invert); the samples, their per-pixel variance, and the
// mismatch, diversity and time of each query; a PNG grid on request.
#include <algorithm>
#include <cmath>

#include "invariance-audit/extractor.hpp"
#include "invariance-audit/method.hpp"
#include "invariance-audit/invariance_audit.hpp"
#include "invariance-audit/prior.hpp"
#include "nk/dataset.hpp"
#include "nk/error.hpp"
#include "nk/image.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "nk/rng.hpp"

namespace ia {

void sample(const SampleOptions& o, const nk::RunEnv& env) {
  nk::data::Options accept;
  accept.unit_range = true;  // the U-Net prior and the extractors take pixels in [0,1]
  accept.vectors = false;
  accept.labels = nk::data::Labels::ignore;
  const nk::data::Source queries = nk::data::Source::open(o.query, accept);
  const nk::nn::Shape shape{queries.height(), queries.width(), queries.channels()};
  // The queries: item --index, or the shard's range of all items (only those are read).
  int64_t first = o.index, Q = 1;
  if (o.all) {
    const auto [lo, hi] = nk::shard_range(env.shard, queries.count());
    nk::data::check_run_items(o.query, queries.dataset(), hi - lo);
    first = lo, Q = hi - lo;
  } else {
    if (o.index < 0 || o.index >= queries.count()) {
      throw nk::input_error(o.query, queries.dataset(), "--index " + std::to_string(o.index) + " is not one of its " +
                                                            std::to_string(queries.count()) + " items (0-based)");
    }
    const auto [lo, hi] = nk::shard_range(env.shard, 1);
    Q = hi - lo;
  }
  const nk::h5::Array<float> all = queries.read(first, first + Q);
  const int64_t d = shape.size(), S = o.samples;
  PriorField prior;
  std::unique_ptr<Dedicated> dedicated;
  if (o.guidance == "dedicated") {
    if (o.dedicated.empty()) throw nk::usage_error("--guidance dedicated needs --dedicated FILE (from train-dedicated)");
    dedicated = std::make_unique<Dedicated>(read_dedicated(o.dedicated));
    if (!(dedicated->net.config().image == shape)) {
      throw nk::input_error(o.dedicated, "/dedicated", "the model generates images of " + dedicated->net.config().image.text() +
                                                           ", the queries are " + shape.text());
    }
  } else if (o.guidance != "invert") {
    prior = open_prior(o.prior, o.prior_cmd, shape, S);
  }
  MethodConfig mc;
  mc.name = o.guidance;
  mc.guide.steps = o.steps;
  mc.guide.inner = o.inner;
  mc.guide.lambda = o.lambda;
  mc.guide.kappa = o.kappa;
  mc.guide.kappa_min = o.kappa_min;
  mc.guide.eta = o.eta;
  mc.guide.zeta = o.zeta;
  mc.invert_rate = o.invert_rate;
  std::unique_ptr<Extractor> extractor = open_extractor(o.extractor_cmd.empty() ? o.extractor : "cmd:" + o.extractor_cmd, shape, S);
  if (dedicated && dedicated->net.config().cond_dim != extractor->dim()) {
    throw nk::input_error(o.dedicated, "/dedicated", "was trained on " + std::to_string(dedicated->net.config().cond_dim) +
                                                         " features (" + dedicated->extractor + "), --extractor " +
                                                         extractor->name() + " gives " + std::to_string(extractor->dim()));
  }
  Method method(mc, prior.field.get(), S, dedicated.get());
  spdlog::info("sample: {} queries of {} ({}), {} samples each, guidance {}, extractor {} ({} features){}", Q,
               nk::display_name(o.query), shape.text(), S, o.guidance, extractor->name(), extractor->dim(),
               prior.field ? ", prior " + prior.name : std::string());
  std::vector<float> query_out(static_cast<size_t>(Q * d)), samples(static_cast<size_t>(Q * S * d));
  std::vector<float> variance(static_cast<size_t>(Q * shape.h * shape.w)), mismatch(static_cast<size_t>(Q * S));
  std::vector<double> diversity(static_cast<size_t>(Q)), seconds(static_cast<size_t>(Q));
  std::vector<int64_t> index(static_cast<size_t>(Q));
  // Batched passes per query: over its S samples at once.
  std::vector<int64_t> prior_forwards(static_cast<size_t>(Q)), prior_backwards(static_cast<size_t>(Q));
  std::vector<int64_t> extractor_forwards(static_cast<size_t>(Q)), extractor_backwards(static_cast<size_t>(Q));
  const nk::Rng root(env.seed);
  nk::Progress progress("sample", Q);
  for (int64_t i = 0; i < Q; ++i) {
    const int64_t q = first + i;
    index[i] = q;
    const float* query = all.data.data() + i * d;
    std::copy(query, query + d, query_out.begin() + i * d);
    float* x = samples.data() + i * S * d;
    nk::Rng rng = root.split(static_cast<uint64_t>(q));
    const MethodRun run = method.run(*extractor, query, x, S, rng);
    seconds[i] = run.seconds;
    prior_forwards[i] = run.prior_forwards;
    prior_backwards[i] = run.prior_backwards;
    extractor_forwards[i] = run.extractor_forwards;
    extractor_backwards[i] = run.extractor_backwards;
    const std::vector<double>& mm = run.mismatch;
    for (int64_t j = 0; j < S; ++j) mismatch[i * S + j] = static_cast<float>(mm[j]);
    pixel_variance(x, S, shape, variance.data() + i * shape.h * shape.w);
    diversity[i] = mean_pairwise_distance(x, S, d);
    spdlog::debug("query {}: median mismatch {:.4f}, diversity {:.3f}, {:.2f} s", q, mm[mm.size() / 2], diversity[i], seconds[i]);
    progress.update(i + 1);
  }
  progress.finish();
  for (float v : samples)
    if (!std::isfinite(v)) throw nk::Error(nk::Exit::runtime, "sample: a sample is not finite (try a smaller --eta or --zeta)");
  std::vector<float> sorted(mismatch);
  std::sort(sorted.begin(), sorted.end());
  if (!sorted.empty()) spdlog::info("sample: median relative mismatch {:.4f} over {} samples", sorted[sorted.size() / 2], sorted.size());
  if (!o.grid.empty()) write_fiber_grid(o.grid, query_out, samples, variance, Q, S, shape, o.no_clobber);
  nk::h5::Writer out(o.output, kFiberSchema, o.no_clobber);
  out.write("/query", query_out.data(), {Q, shape.h, shape.w, shape.c}, "Q,H,W,C");
  out.write("/samples", samples.data(), {Q, S, shape.h, shape.w, shape.c}, "Q,S,H,W,C", "pixels in [0,1]");
  out.write("/variance", variance.data(), {Q, shape.h, shape.w}, "Q,H,W", "per-pixel variance over the samples (mean over channels)");
  out.write("/index", index.data(), {Q}, "Q", "the query's item in the query file");
  out.write("/metrics/mismatch", mismatch.data(), {Q, S}, "Q,S", "||f(x) - f(x_q)|| / ||f(x_q)||");
  out.write("/metrics/diversity", diversity.data(), {Q}, "Q", "mean pairwise L2 distance of the samples (pixels)");
  out.write("/metrics/seconds", seconds.data(), {Q}, "Q");
  out.attr("/metrics", "guidance", o.guidance);
  out.attr("/metrics", "extractor", extractor->name());
  out.attr("/metrics", "steps", o.steps);
  out.attr("/metrics", "inner", o.inner);
  out.attr("/metrics", "samples", S);
  out.write("/metrics/prior_forwards", prior_forwards.data(), {Q}, "Q", "batched forwards of the prior (all S samples at once)");
  out.write("/metrics/prior_backwards", prior_backwards.data(), {Q}, "Q", "batched input backwards of the prior");
  out.write("/metrics/extractor_forwards", extractor_forwards.data(), {Q}, "Q", "batched forwards of the extractor (the query's own and the final mismatch included)");
  out.write("/metrics/extractor_backwards", extractor_backwards.data(), {Q}, "Q", "batched backwards of the extractor");
  if (o.guidance == "ndtm") {
    out.attr("/metrics", "lambda", o.lambda);
    out.attr("/metrics", "kappa", o.kappa);
    out.attr("/metrics", "kappa_min", o.kappa_min);
    out.attr("/metrics", "eta", o.eta);
  }
  if (o.guidance == "dps") out.attr("/metrics", "zeta", o.zeta);
  if (o.guidance == "invert") out.attr("/metrics", "rate", o.invert_rate);
  out.commit();
}

}  // namespace ia
