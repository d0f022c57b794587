// eval.cpp - the eval verb: every method on every extractor over the same
// queries and noise, one row each: median mismatch, revealed fraction
// (planted extractors), realism (Frechet distance in an evaluator CNN's
// penultimate features against as many test images; the prior's bits per
// dimension), diversity (mean pairwise distance; density and coverage
// against the test images), time and passes per audit. A 'test' row holds
// the same measures for held-out real images: the floor of each realism
// number.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "invariance-audit/extractor.hpp"
#include "invariance-audit/invariance_audit.hpp"
#include "invariance-audit/method.hpp"
#include "invariance-audit/metrics.hpp"
#include "invariance-audit/planted.hpp"
#include "invariance-audit/prior.hpp"
#include "invariance-audit/realism.hpp"
#include "nk/dataset.hpp"
#include "nk/error.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "nk/rng.hpp"
#include "nk/shipped.hpp"
#include "nk/timer.hpp"

namespace ia {

namespace {

std::vector<std::string> split_list(const std::string& text, const std::string& option) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) throw nk::usage_error(option + " '" + text + "' has an empty item");
    out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

struct Row {
  std::string extractor, method;
  double median_mismatch = std::numeric_limits<double>::quiet_NaN();
  double revealed = std::numeric_limits<double>::quiet_NaN();
  double frechet = 0, bits_per_dim = std::numeric_limits<double>::quiet_NaN(), diversity = 0, density = 0, coverage = 0;
  double seconds = std::numeric_limits<double>::quiet_NaN();
  double prior_passes = 0, extractor_passes = 0;
  double training_seconds = std::numeric_limits<double>::quiet_NaN();
};

}  // namespace

std::string evaluator_spec(const std::string& evaluator) {
  return evaluator.empty() ? nk::shipped_data("invariance-audit/evaluator.h5") + ":penultimate" : evaluator;
}

void eval(const EvalOptions& o, const nk::RunEnv& env) {
  nk::data::Options accept;
  accept.unit_range = true;  // the U-Net prior and the extractors take pixels in [0,1]
  accept.vectors = false;
  accept.labels = nk::data::Labels::ignore;
  const nk::data::Source queries = nk::data::Source::open(o.queries, accept);
  const nk::nn::Shape shape{queries.height(), queries.width(), queries.channels()};
  const int64_t Q = o.count > 0 ? std::min(o.count, queries.count()) : queries.count(), S = o.samples, d = shape.size();
  nk::data::check_run_items(o.queries, queries.dataset(), Q * S);
  const std::vector<std::string> methods = split_list(o.methods, "--methods");
  const std::vector<std::string> specs = split_list(o.extractors, "--extractors");
  for (const auto& m : methods)
    if (m != "ndtm" && m != "dps" && m != "none" && m != "invert" && m != "dedicated") {
      throw nk::usage_error("--methods: '" + m + "' is not ndtm, dps, none, invert or dedicated");
    }
  // --dedicated SPEC=FILE: the conditional baseline of extractor SPEC.
  std::map<std::string, std::string> dedicated_files;
  for (const std::string& pair : o.dedicated) {
    const size_t eq = pair.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == pair.size()) {
      throw nk::usage_error("--dedicated '" + pair + "' is not SPEC=FILE");
    }
    const std::string spec = pair.substr(0, eq);
    if (std::find(specs.begin(), specs.end(), spec) == specs.end()) {
      throw nk::usage_error("--dedicated " + pair + ": '" + spec + "' is not one of --extractors");
    }
    dedicated_files[spec] = pair.substr(eq + 1);
  }
  // The reference set: Q*S test images; the 'test' row's real samples:
  // another Q*S (fewer when the file is short).
  const int64_t n = Q * S;
  const nk::h5::Array<float> q_all = queries.read(0, Q);
  PriorField prior = open_prior(o.prior, o.prior_cmd, shape, S);
  RealismReference reference(o.reference, shape, n, o.evaluator, env.seed);
  const int64_t held = reference.held, F = reference.evaluator().dim();
  const std::vector<float>& real = reference.real;
  spdlog::info("eval: {} queries x {} samples, {} methods x {} extractors; evaluator {} ({} features), {} reference images",
               Q, S, methods.size(), specs.size(), reference.evaluator().name(), F, n);

  std::vector<Row> rows;
  auto realism = [&](Row& r, const std::vector<float>& x, int64_t count) {
    const std::vector<float> f = reference.features(x.data(), count);
    r.frechet = frechet_distance(f, count, reference.ref_features, n, F);
    const DensityCoverage dc = density_coverage(reference.ref_features, n, f, count, F, std::min(o.neighbours, n - 1));
    r.density = dc.density, r.coverage = dc.coverage;
    if (o.bits_steps > 0) {
      const BitsPerDim b = bits_per_dim(*prior.field, shape, x.data(), count, o.bits_steps, o.probes, S, env.seed);
      double sum = 0;
      for (double v : b.bits) sum += v;
      r.bits_per_dim = sum / static_cast<double>(count);
    }
  };
  {
    Row r;
    r.extractor = "-", r.method = "test";
    realism(r, real, held);
    double div = 0;
    const int64_t groups = held / S;
    for (int64_t g = 0; g < groups; ++g) div += mean_pairwise_distance(real.data() + g * S * d, S, d);
    r.diversity = groups > 0 ? div / static_cast<double>(groups) : 0.0;
    rows.push_back(r);
  }
  nk::Progress progress("eval", static_cast<int64_t>(specs.size() * methods.size()) * Q);
  int64_t done = 0;
  const nk::Rng root(env.seed);
  for (const std::string& spec : specs) {
    std::unique_ptr<Extractor> extractor = open_extractor(spec, shape, S);
    const std::unique_ptr<Revealer> revealer = open_revealer(spec, shape);
    // flip's queries are the mirrored queries: their un-mirrored originals
    // share the fiber, and the prior has only seen those.
    const bool flip = spec.rfind("planted:flip:", 0) == 0;
    std::vector<float> qx(q_all.data.begin(), q_all.data.begin() + Q * d);
    if (flip)
      for (int64_t i = 0; i < Q; ++i) mirror_image(q_all.data.data() + i * d, qx.data() + i * d, shape);
    std::unique_ptr<Dedicated> dedicated;
    if (dedicated_files.count(spec)) {
      const std::string& file = dedicated_files[spec];
      dedicated = std::make_unique<Dedicated>(read_dedicated(file));
      if (!(dedicated->net.config().image == shape) || dedicated->net.config().cond_dim != extractor->dim()) {
        throw nk::input_error(file, "/dedicated", "generates " + dedicated->net.config().image.text() + " images from " +
                                                      std::to_string(dedicated->net.config().cond_dim) + " features; " + spec +
                                                      " gives " + std::to_string(extractor->dim()) + " features of " + shape.text());
      }
    }
    for (const std::string& name : methods) {
      if (name == "dedicated" && !dedicated) {
        spdlog::info("eval: no --dedicated model for {}: no dedicated row", spec);
        progress.update(done += Q);
        continue;
      }
      MethodConfig mc;
      mc.name = name;
      mc.guide.steps = o.steps;
      mc.guide.inner = o.inner;
      mc.guide.lambda = o.lambda;
      mc.guide.kappa = o.kappa;
      mc.guide.kappa_min = o.kappa_min;
      mc.guide.eta = o.eta;
      Method method(mc, prior.field.get(), S, name == "dedicated" ? dedicated.get() : nullptr);
      std::vector<float> x(static_cast<size_t>(n * d)), variance(static_cast<size_t>(Q * shape.h * shape.w));
      std::vector<double> mismatch;
      Row r;
      r.extractor = extractor->name(), r.method = name;
      if (name == "dedicated") r.training_seconds = dedicated->seconds;
      double seconds = 0, div = 0;
      int64_t revealed = 0, pp = 0, ep = 0;
      for (int64_t i = 0; i < Q; ++i) {
        nk::Rng rng = root.split(static_cast<uint64_t>(i));
        const float* query = qx.data() + i * d;
        float* xi = x.data() + i * S * d;
        const MethodRun run = method.run(*extractor, query, xi, S, rng);
        seconds += run.seconds;
        pp += run.prior_forwards + run.prior_backwards;
        ep += run.extractor_forwards + run.extractor_backwards;
        mismatch.insert(mismatch.end(), run.mismatch.begin(), run.mismatch.end());
        div += mean_pairwise_distance(xi, S, d);
        pixel_variance(xi, S, shape, variance.data() + i * shape.h * shape.w);
        if (revealer)
          for (int64_t j = 0; j < S; ++j) revealed += revealer->revealed(xi + j * d, query);
        progress.update(++done);
      }
      for (float v : x)
        if (!std::isfinite(v)) throw nk::Error(nk::Exit::runtime, "eval: a " + name + " sample is not finite");
      std::sort(mismatch.begin(), mismatch.end());
      r.median_mismatch = mismatch[mismatch.size() / 2];
      if (revealer) r.revealed = static_cast<double>(revealed) / static_cast<double>(n);
      r.seconds = seconds / static_cast<double>(Q);
      r.prior_passes = static_cast<double>(pp) / static_cast<double>(Q);
      r.extractor_passes = static_cast<double>(ep) / static_cast<double>(Q);
      r.diversity = div / static_cast<double>(Q);
      realism(r, x, n);
      spdlog::info("eval: {} {}: median mismatch {:.4f}, revealed {:.2f}, Frechet {:.3f}, {:.3f} bits/dim, diversity {:.2f}, "
                   "density {:.2f}, coverage {:.2f}, {:.2f} s per audit",
                   r.extractor, r.method, r.median_mismatch, r.revealed, r.frechet, r.bits_per_dim, r.diversity, r.density,
                   r.coverage, r.seconds);
      rows.push_back(r);
      if (!o.grid_dir.empty()) {
        std::string file = spec + "-" + name + ".png";
        for (char& c : file)
          if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_')) c = '_';
        write_fiber_grid(o.grid_dir + "/" + file, qx, x, variance, Q, S, shape, o.no_clobber);
      }
    }
  }
  progress.finish();
  const int64_t R = static_cast<int64_t>(rows.size());
  auto column = [&](auto field) {
    std::vector<double> v;
    for (const Row& r : rows) v.push_back(field(r));
    return v;
  };
  std::vector<std::string> ex, me;
  for (const Row& r : rows) ex.push_back(r.extractor), me.push_back(r.method);
  nk::h5::Writer out(o.output, kEvalSchema, o.no_clobber);
  out.write_strings("/table/extractor", ex, "R");
  out.write_strings("/table/method", me, "R");
  // NaN means "does not apply" (the test row's mismatch, an unknown fiber's
  // revealed fraction, a training-free method's training time).
  auto put = [&](const char* name, const std::vector<double>& v, const char* doc) {
    out.allow_nonfinite(std::string("/table/") + name);
    out.write(std::string("/table/") + name, v.data(), {R}, "R", doc);
  };
  put("median_mismatch", column([](const Row& r) { return r.median_mismatch; }), "median of ||f(x) - f(x_q)|| / ||f(x_q)|| (NaN: test row)");
  put("revealed", column([](const Row& r) { return r.revealed; }), "fraction of samples revealing the planted invariance (NaN: fiber unknown)");
  put("frechet", column([](const Row& r) { return r.frechet; }), "Frechet distance to the reference images in evaluator features");
  put("bits_per_dim", column([](const Row& r) { return r.bits_per_dim; }), "mean prior bits per dimension (NaN: --bits-steps 0)");
  put("diversity", column([](const Row& r) { return r.diversity; }), "mean pairwise L2 distance of a query's samples (pixels)");
  put("density", column([](const Row& r) { return r.density; }), "density against the reference images (Naeem et al. 2020)");
  put("coverage", column([](const Row& r) { return r.coverage; }), "coverage of the reference images (Naeem et al. 2020)");
  put("seconds_per_audit", column([](const Row& r) { return r.seconds; }), "wall seconds per query (S samples)");
  put("training_seconds", column([](const Row& r) { return r.training_seconds; }), "dedicated: its model's training wall time (NaN: training-free)");
  put("prior_passes", column([](const Row& r) { return r.prior_passes; }), "batched prior forwards + backwards per audit");
  put("extractor_passes", column([](const Row& r) { return r.extractor_passes; }), "batched extractor forwards + backwards per audit");
  out.attr("/table", "queries", Q);
  out.attr("/table", "samples", S);
  out.attr("/table", "steps", o.steps);
  out.attr("/table", "inner", o.inner);
  out.attr("/table", "lambda", o.lambda);
  out.attr("/table", "kappa", o.kappa);
  out.attr("/table", "kappa_min", o.kappa_min);
  out.attr("/table", "eta", o.eta);
  out.attr("/table", "evaluator", reference.evaluator().name());
  out.attr("/table", "reference", nk::display_name(o.reference));
  out.commit();
}

}  // namespace ia
