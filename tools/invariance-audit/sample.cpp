// sample.cpp - the sample verb: for each query, S inputs in its fiber by a
// guided prior (ndtm, dps), the prior alone (none), or feature inversion
// without a prior (invert); the samples, their per-pixel variance, and the
// mismatch, diversity and time of each query; a PNG grid on request.
#include <algorithm>
#include <cmath>

#include "invariance-audit/extractor.hpp"
#include "invariance-audit/fiber.hpp"
#include "invariance-audit/invariance_audit.hpp"
#include "invariance-audit/prior.hpp"
#include "nk/dataset.hpp"
#include "nk/error.hpp"
#include "nk/image.hpp"
#include "nk/kernels/vector.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "nk/rng.hpp"
#include "nk/timer.hpp"

namespace ia {

namespace {

// Feature inversion: Adam on the pixels from uniform noise, projected on
// [0,1], 'iterations' gradient steps on the fiber loss; no prior.
void invert(FiberCost& cost, float* pixels, int64_t batch, int64_t dim, int64_t iterations, double rate) {
  std::vector<float> x(static_cast<size_t>(batch * dim)), grad(x.size()), m(x.size()), v(x.size());
  std::vector<double> c(static_cast<size_t>(batch));
  for (int64_t j = 0; j < batch * dim; ++j) x[j] = to_prior(pixels[j]);
  constexpr double b1 = 0.9, b2 = 0.999, eps = 1e-8;
  for (int64_t k = 1; k <= iterations; ++k) {
    cost.evaluate(x.data(), batch, c.data(), grad.data());
    const double c1 = 1 - std::pow(b1, static_cast<double>(k)), c2 = 1 - std::pow(b2, static_cast<double>(k));
    for (int64_t j = 0; j < batch * dim; ++j) {
      m[j] = static_cast<float>(b1 * m[j] + (1 - b1) * grad[j]);
      v[j] = static_cast<float>(b2 * v[j] + (1 - b2) * grad[j] * grad[j]);
      x[j] -= static_cast<float>(rate * (m[j] / c1) / (std::sqrt(v[j] / c2) + eps));
      x[j] = std::clamp(x[j], -1.0f, 1.0f);
    }
  }
  for (int64_t j = 0; j < batch * dim; ++j) pixels[j] = to_pixel(x[j]);
}

void write_grid(const std::string& path, const std::vector<float>& queries, const std::vector<float>& samples,
                const std::vector<float>& variance, int64_t q, int64_t s, nk::nn::Shape shape, bool no_clobber) {
  const int64_t H = shape.h, W = shape.w, C = shape.c, cols = s + 2;
  nk::Image grid;
  grid.width = static_cast<int>(cols * W);
  grid.height = static_cast<int>(q * H);
  grid.channels = C == 3 ? 3 : 1;
  grid.pixels.assign(static_cast<size_t>(grid.width) * grid.height * grid.channels, 0.0f);
  auto tile = [&](int64_t row, int64_t col, const float* img, int64_t channels) {
    for (int64_t y = 0; y < H; ++y)
      for (int64_t x = 0; x < W; ++x)
        for (int c = 0; c < grid.channels; ++c) {
          const float v = img[(y * W + x) * channels + (channels == 1 ? 0 : c)];
          grid.at(static_cast<int>(row * H + y), static_cast<int>(col * W + x), c) = std::clamp(v, 0.0f, 1.0f);
        }
  };
  std::vector<float> map(static_cast<size_t>(H * W));
  for (int64_t i = 0; i < q; ++i) {
    tile(i, 0, queries.data() + i * shape.size(), C);
    for (int64_t j = 0; j < s; ++j) tile(i, 1 + j, samples.data() + (i * s + j) * shape.size(), C);
    const float* var = variance.data() + i * H * W;
    const float top = *std::max_element(var, var + H * W);
    for (int64_t p = 0; p < H * W; ++p) map[p] = top > 0 ? var[p] / top : 0.0f;
    tile(i, cols - 1, map.data(), 1);
  }
  nk::save_png(path, grid, no_clobber);
}

}  // namespace

void sample(const SampleOptions& o, const nk::RunEnv& env) {
  nk::data::Options accept;
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
  std::unique_ptr<nk::nn::UNet<float>> prior;
  if (o.guidance != "invert") {
    prior = std::make_unique<nk::nn::UNet<float>>(read_prior(o.prior));
    if (!(prior->config().image == shape)) {
      throw nk::input_error(prior_path(o.prior), "/prior", "the prior generates images of " + prior->config().image.text() +
                                                                ", the queries are " + shape.text());
    }
  }
  std::unique_ptr<Extractor> extractor = open_extractor(o.extractor, shape, S);
  nk::nn::GuideConfig guide;
  guide.guide = o.guidance == "ndtm" ? nk::nn::Guide::ndtm : o.guidance == "dps" ? nk::nn::Guide::dps : nk::nn::Guide::none;
  guide.steps = o.steps;
  guide.inner = o.inner;
  guide.lambda = o.lambda;
  guide.kappa = o.kappa;
  guide.kappa_min = o.kappa_min;
  guide.eta = o.eta;
  guide.zeta = o.zeta;
  spdlog::info("sample: {} queries of {} ({}), {} samples each, guidance {}, extractor {} ({} features){}", Q,
               nk::display_name(o.query), shape.text(), S, o.guidance, extractor->name(), extractor->dim(),
               prior ? ", prior " + std::to_string(prior->parameter_count()) + " parameters" : std::string());
  std::vector<float> query_out(static_cast<size_t>(Q * d)), samples(static_cast<size_t>(Q * S * d));
  std::vector<float> variance(static_cast<size_t>(Q * shape.h * shape.w)), mismatch(static_cast<size_t>(Q * S));
  std::vector<double> diversity(static_cast<size_t>(Q)), seconds(static_cast<size_t>(Q));
  std::vector<int64_t> index(static_cast<size_t>(Q));
  // Batched passes per query: over its S samples at once.
  std::vector<int64_t> prior_forwards(static_cast<size_t>(Q)), prior_backwards(static_cast<size_t>(Q));
  std::vector<int64_t> extractor_forwards(static_cast<size_t>(Q)), extractor_backwards(static_cast<size_t>(Q));
  std::unique_ptr<nk::nn::UNetField> field;
  if (prior) field = std::make_unique<nk::nn::UNetField>(*prior, S);
  const nk::Rng root(env.seed);
  nk::Progress progress("sample", Q);
  for (int64_t i = 0; i < Q; ++i) {
    const int64_t q = first + i;
    index[i] = q;
    const float* query = all.data.data() + i * d;
    std::copy(query, query + d, query_out.begin() + i * d);
    nk::Stopwatch clock;
    const int64_t ef = extractor->forwards, eb = extractor->backwards;
    FiberCost cost(*extractor, query, S);
    float* x = samples.data() + i * S * d;
    nk::Rng rng = root.split(static_cast<uint64_t>(q));
    if (o.guidance == "invert") {
      for (int64_t j = 0; j < S * d; ++j) x[j] = static_cast<float>(rng.uniform());
      invert(cost, x, S, d, o.steps * o.inner, o.invert_rate);
    } else {
      nk::kernels::fill_normal(rng, x, S * d);
      const nk::nn::GuideCounts counts = nk::nn::guided_sample(*field, cost, x, S, d, guide);
      prior_forwards[i] = counts.forwards;
      prior_backwards[i] = counts.backwards;
      for (int64_t j = 0; j < S * d; ++j) x[j] = std::clamp(to_pixel(x[j]), 0.0f, 1.0f);
    }
    seconds[i] = clock.seconds();
    extractor_forwards[i] = extractor->forwards - ef;
    extractor_backwards[i] = extractor->backwards - eb;
    const std::vector<double> mm = cost.mismatch(x, S);
    for (int64_t j = 0; j < S; ++j) mismatch[i * S + j] = static_cast<float>(mm[j]);
    // Per-pixel variance over the samples (mean over channels); mean pairwise distance.
    for (int64_t p = 0; p < shape.h * shape.w; ++p) {
      double var = 0;
      for (int64_t c = 0; c < shape.c; ++c) {
        double mean = 0, sq = 0;
        for (int64_t j = 0; j < S; ++j) mean += x[j * d + p * shape.c + c];
        mean /= static_cast<double>(S);
        for (int64_t j = 0; j < S; ++j) sq += std::pow(x[j * d + p * shape.c + c] - mean, 2);
        var += sq / static_cast<double>(S);
      }
      variance[i * shape.h * shape.w + p] = static_cast<float>(var / static_cast<double>(shape.c));
    }
    double dist = 0;
    int64_t pairs = 0;
    for (int64_t a = 0; a < S; ++a)
      for (int64_t b = a + 1; b < S; ++b, ++pairs) {
        double sq = 0;
        for (int64_t j = 0; j < d; ++j) sq += std::pow(x[a * d + j] - x[b * d + j], 2);
        dist += std::sqrt(sq);
      }
    diversity[i] = pairs > 0 ? dist / static_cast<double>(pairs) : 0.0;
    spdlog::debug("query {}: median mismatch {:.4f}, diversity {:.3f}, {:.2f} s", q, mm[mm.size() / 2], diversity[i], seconds[i]);
    progress.update(i + 1);
  }
  progress.finish();
  for (float v : samples)
    if (!std::isfinite(v)) throw nk::Error(nk::Exit::runtime, "sample: a sample is not finite (try a smaller --eta or --zeta)");
  std::vector<float> sorted(mismatch);
  std::sort(sorted.begin(), sorted.end());
  if (!sorted.empty()) spdlog::info("sample: median relative mismatch {:.4f} over {} samples", sorted[sorted.size() / 2], sorted.size());
  if (!o.grid.empty()) write_grid(o.grid, query_out, samples, variance, Q, S, shape, o.no_clobber);
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
