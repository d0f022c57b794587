// certify.cpp - the certify and predict verbs: randomized smoothing's
// CERTIFY and PREDICT over the items of an nk-data file (or its --shard).
#include <cmath>
#include <memory>
#include <tuple>

#include "nk/dataset.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "nk/timer.hpp"
#include "proxy-certify/proxy_certify.hpp"
#include "proxy-certify/smoothing.hpp"
#include "proxy-certify/stats.hpp"

namespace pc {

namespace {

constexpr int64_t kChunk = 256;  // items read from the file at a time

// What certify and predict share: the items, the model, sigma, the shard.
struct Run {
  nk::data::Source data;
  std::unique_ptr<Classifier> model;
  double sigma = 0;
  int64_t begin = 0, end = 0;
};

Run open_run(const std::string& input, const ModelOptions& model, std::optional<double> sigma, int64_t batch,
             const nk::RunEnv& env) {
  nk::data::Options accept;
  accept.labels = nk::data::Labels::optional;
  Run run{nk::data::Source::open(input, accept), nullptr, 0, 0, 0};
  run.model = open_classifier(model, item_shape(run.data), batch);
  require_same_shape(*run.model, run.data);
  run.sigma = resolve_sigma(sigma, *run.model);
  std::tie(run.begin, run.end) = nk::shard_range(env.shard, run.data.count());
  nk::data::check_run_items(run.data.path(), run.data.dataset(), run.end - run.begin);
  return run;
}

// visit(index in the file, its pixels) for the shard's items, read kChunk at a time.
template <class Visit>
void for_each_item(const Run& run, const char* label, Visit&& visit) {
  nk::Progress progress(label, run.end - run.begin);
  for (int64_t chunk = run.begin; chunk < run.end; chunk += kChunk) {
    const int64_t stop = std::min(run.end, chunk + kChunk);
    const nk::h5::Array<float> items = run.data.read(chunk, stop);
    for (int64_t i = chunk; i < stop; ++i) {
      visit(i, items.data.data() + (i - chunk) * run.data.item_values());
      progress.update(i - run.begin + 1);
    }
  }
  progress.finish();
}

}  // namespace

void check_smoothing(double alpha, int64_t n0, int64_t n) {
  if (!(alpha > 0 && alpha < 0.5)) throw nk::usage_error("--alpha must lie in (0, 0.5), got " + std::to_string(alpha));
  if (n0 < 1 || n < 1) throw nk::usage_error("--n0 and --n must be at least 1");
}

void certify(const CertifyOptions& o, const nk::RunEnv& env) {
  check_smoothing(o.alpha, o.n0, o.n);
  const Run run = open_run(o.input, o.model, o.sigma, o.batch, env);
  const nk::data::Source& data = run.data;
  const auto& model = run.model;
  const double sigma = run.sigma;
  const int64_t begin = run.begin, end = run.end, count = end - begin;
  std::vector<int64_t> pred(count), n_a(count), forwards(count), index(count);
  std::vector<double> radius(count);
  Smoother smoother(*model, sigma, env.seed, o.batch, env.device);
  nk::Stopwatch clock;
  int64_t abstained = 0;
  for_each_item(run, "certify", [&](int64_t i, const float* x) {
    const int64_t k = i - begin;
    const Certificate c = certify(smoother, x, i, o.n0, o.n, o.alpha);
    pred[k] = c.pred;
    radius[k] = c.radius;
    n_a[k] = c.count;
    forwards[k] = o.n0 + o.n;
    index[k] = i;
    abstained += c.pred < 0;
  });
  const double seconds = clock.seconds();
  nk::h5::Writer out(o.output, kCertifySchema, o.no_clobber);
  out.write("/certify/pred", pred.data(), {count}, "N");
  out.write("/certify/radius", radius.data(), {count}, "N", "pixel-space L2 ([0,1] pixels)");
  out.write("/certify/count", n_a.data(), {count}, "N");
  out.write("/certify/forwards", forwards.data(), {count}, "N");
  out.write("/certify/index", index.data(), {count}, "N");
  if (data.has_labels()) {
    std::vector<int64_t> labels(data.labels().begin() + begin, data.labels().begin() + end);
    out.write("/certify/label", labels.data(), {count}, "N");
  }
  out.attr("/certify", "n0", o.n0);
  out.attr("/certify", "n", o.n);
  out.attr("/certify", "alpha", o.alpha);
  out.attr("/certify", "sigma", sigma);
  out.attr("/certify", "seconds", seconds);
  out.attr("/certify", "model", model->name());
  out.attr("/certify", "device", smoother.on_gpu() ? "cuda" : "cpu");
  out.commit();
  const double rate = static_cast<double>(smoother.forwards()) / std::max(seconds, 1e-9);
  spdlog::info("certify: {} items, {} abstained, {:.0f} noisy forwards/s ({:.1f} s); largest certifiable radius {:.3f}",
               count, abstained, rate, seconds, largest_certifiable_radius(o.n, o.alpha, sigma));
}

void predict(const PredictOptions& o, const nk::RunEnv& env) {
  check_smoothing(o.alpha, 1, o.n);
  const Run run = open_run(o.input, o.model, o.sigma, o.batch, env);
  const int64_t begin = run.begin, count = run.end - run.begin;
  const double sigma = run.sigma;
  std::vector<int64_t> pred(count), count_a(count), count_b(count), index(count);
  std::vector<double> p_value(count);
  Smoother smoother(*run.model, sigma, env.seed, o.batch, env.device);
  for_each_item(run, "predict", [&](int64_t i, const float* x) {
    const int64_t k = i - begin;
    const Prediction p = predict(smoother, x, i, o.n, o.alpha);
    pred[k] = p.pred;
    count_a[k] = p.count_a;
    count_b[k] = p.count_b;
    p_value[k] = p.p_value;
    index[k] = i;
  });
  nk::h5::Writer out(o.output, kPredictSchema, o.no_clobber);
  out.write("/predict/pred", pred.data(), {count}, "N");
  out.write("/predict/count_a", count_a.data(), {count}, "N");
  out.write("/predict/count_b", count_b.data(), {count}, "N");
  out.write("/predict/p_value", p_value.data(), {count}, "N");
  out.write("/predict/index", index.data(), {count}, "N");
  out.attr("/predict", "n", o.n);
  out.attr("/predict", "alpha", o.alpha);
  out.attr("/predict", "sigma", sigma);
  out.commit();
}

}  // namespace pc
