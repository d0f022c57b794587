// train_dedicated.cpp - the train-dedicated verb: the baseline the paper
// replaces. The same flow-matching U-Net as the prior, conditioned on the
// features of one extractor (an MLP of the normalised features added to the
// time embedding), trained on (x, f(x)) pairs; its wall time is part of the
// file, for the comparison with a training-free audit. With --until-frechet
// it trains until its samples reach a realism target (eval's Frechet
// distance, measured as eval measures it), checked every --check-every steps.
#include <cmath>
#include <numeric>

#include "invariance-audit/extractor.hpp"
#include "invariance-audit/invariance_audit.hpp"
#include "invariance-audit/method.hpp"
#include "invariance-audit/prior.hpp"
#include "invariance-audit/realism.hpp"
#include "nk/dataset.hpp"
#include "nk/error.hpp"
#include "nk/log.hpp"
#include "nk/nn/flow.hpp"
#include "nk/progress.hpp"
#include "nk/timer.hpp"

namespace ia {

void train_dedicated(const TrainDedicatedOptions& o, const nk::RunEnv& env) {
  if (o.until_frechet > 0 && (o.queries.empty() || o.reference.empty()))
    throw nk::usage_error("--until-frechet needs --queries and --reference (as eval's)");
  nk::data::Options accept;
  accept.unit_range = true;  // the U-Net prior and the extractors take pixels in [0,1]
  accept.vectors = false;
  accept.image_files = false;
  accept.labels = nk::data::Labels::ignore;
  const nk::data::Source data = nk::data::Source::open(o.input, accept);
  const nk::nn::Shape image{data.height(), data.width(), data.channels()};
  nk::Stopwatch clock;
  const int64_t n = data.count(), d = image.size(), chunk = 256;
  nk::h5::Array<float> x = data.read_all();
  std::unique_ptr<Extractor> extractor = open_extractor(o.extractor, image, std::max(std::min(chunk, n), o.check_samples));
  const int64_t F = extractor->dim();
  // Features of every image, then per-feature normalisation: the condition
  // the U-Net sees is (f - mean) / scale, scale the feature's deviation
  // (at least 1e-3 of the largest, so constant features stay finite).
  std::vector<float> cond(static_cast<size_t>(n * F));
  for (int64_t s = 0; s < n; s += chunk) extractor->features(x.data.data() + s * d, std::min(chunk, n - s), cond.data() + s * F);
  std::vector<double> mean(static_cast<size_t>(F), 0.0), var(static_cast<size_t>(F), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < F; ++k) mean[k] += cond[i * F + k] / static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < F; ++k) var[k] += std::pow(cond[i * F + k] - mean[k], 2) / static_cast<double>(n);
  double top = 0;
  for (double v : var) top = std::max(top, std::sqrt(v));
  std::vector<float> mean_f(static_cast<size_t>(F)), scale_f(static_cast<size_t>(F));
  for (int64_t k = 0; k < F; ++k) {
    mean_f[k] = static_cast<float>(mean[k]);
    scale_f[k] = static_cast<float>(std::max(std::sqrt(var[k]), std::max(1e-3 * top, 1e-12)));
  }
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < F; ++k) cond[i * F + k] = (cond[i * F + k] - mean_f[k]) / scale_f[k];
  for (float v : cond)
    if (!std::isfinite(v)) throw nk::Error(nk::Exit::runtime, "train-dedicated: a feature of " + extractor->name() + " is not finite");

  nk::nn::UNet<float> net = build_unet(o.channels, o.groups, o.time_dim, F, image, env.seed);
  const nk::nn::UNetConfig& config = net.config();
  for (float& v : x.data) v = to_prior(v);
  nk::nn::FlowTraining training = flow_schedule(o.steps, o.batch, o.learning_rate, o.ema, env.seed);
  training.max_seconds = o.max_seconds > 0 ? std::max(1e-9, o.max_seconds - clock.seconds()) : 0.0;
  const double feature_seconds = clock.seconds();
  spdlog::info("train-dedicated: U-Net {} ({} parameters) conditioned on the {} features of {}, {} images of {}",
               config.text(), net.parameter_count(), F, extractor->name(), n, image.text());
  nk::nn::UNet<float> ema;
  // Realism checks: eval's dedicated row, on the EMA model so far.
  const bool checking = o.until_frechet > 0;
  std::unique_ptr<RealismReference> reference;
  nk::h5::Array<float> check_queries;
  int64_t Qc = 0;
  struct Check {
    int64_t step;
    double seconds, frechet;
  };
  std::vector<Check> checks;
  double check_seconds = 0;
  bool reached = false;
  if (checking) {
    const nk::data::Source qs = nk::data::Source::open(o.queries, accept);
    const nk::nn::Shape qshape{qs.height(), qs.width(), qs.channels()};
    if (!(qshape == image)) throw nk::input_error(o.queries, qs.dataset(), "items are " + qshape.text() + ", the training images " + image.text());
    Qc = o.check_count > 0 ? std::min(o.check_count, qs.count()) : qs.count();
    nk::data::check_run_items(o.queries, qs.dataset(), Qc * o.check_samples);
    check_queries = qs.read(0, Qc);
    reference = std::make_unique<RealismReference>(o.reference, image, Qc * o.check_samples, o.evaluator, env.seed);
    spdlog::info("train-dedicated: until a Frechet distance of {} ({} queries x {} samples against {} reference images, every {} steps)",
                 o.until_frechet, Qc, o.check_samples, Qc * o.check_samples, o.check_every);
  }
  auto realism_check = [&](int64_t step, double trained) {
    nk::Stopwatch check_clock;
    Dedicated model;
    model.net = ema;
    model.mean = mean_f;
    model.scale = scale_f;
    MethodConfig mc;
    mc.name = "dedicated";
    mc.guide.steps = o.check_steps;
    Method method(mc, nullptr, o.check_samples, &model);
    const int64_t S = o.check_samples;
    std::vector<float> xs(static_cast<size_t>(Qc * S * d));
    const nk::Rng root(env.seed);
    for (int64_t i = 0; i < Qc; ++i) {
      nk::Rng rng = root.split(static_cast<uint64_t>(i));
      method.run(*extractor, check_queries.data.data() + i * d, xs.data() + i * S * d, S, rng);
    }
    const double f = reference->frechet(xs.data(), Qc * S);
    checks.push_back({step, trained, f});
    check_seconds += check_clock.seconds();
    spdlog::info("train-dedicated: step {} ({:.0f} s of training): Frechet distance {:.2f} (target {})", step, trained, f, o.until_frechet);
    return f <= o.until_frechet;
  };
  int64_t next_check = o.check_every;
  if (checking) {
    training.stop = [&](const nk::nn::FlowReport& r) {
      // A check at every multiple of --check-every, and at the last step (of --steps or of --max-seconds).
      if (r.step < next_check && !r.last) return false;
      next_check = (r.step / o.check_every + 1) * o.check_every;
      reached = realism_check(r.step, feature_seconds + r.seconds);
      return reached;
    };
  }
  nk::Progress progress("train-dedicated", o.steps);
  double last_loss = 0;
  int64_t steps_done = 0;
  // Reports every 'every' steps; with realism checks, at every multiple of --check-every too.
  int64_t every = std::max<int64_t>(1, std::min<int64_t>(100, o.steps / 20));
  if (checking) every = std::gcd(every, o.check_every);
  nk::nn::train_flow(net, &ema, x.data.data(), cond.data(), n, training, every, [&](const nk::nn::FlowReport& r) {
    if (!std::isfinite(r.loss)) throw nk::Error(nk::Exit::runtime, "train-dedicated: the loss is not finite at step " + std::to_string(r.step));
    progress.update(r.step);
    spdlog::debug("step {}: loss {:.4f}, gradient norm {:.3f} ({:.1f} s)", r.step, r.loss, r.grad_norm, r.seconds);
    last_loss = r.loss;
    steps_done = r.step;
  });
  progress.finish();
  // Training time: the features and the optimiser steps, not the checks.
  const double seconds = clock.seconds() - check_seconds;
  if (checking && !reached) spdlog::info("train-dedicated: the Frechet target {} was not reached", o.until_frechet);
  if (steps_done < o.steps && !reached) spdlog::info("train-dedicated: --max-seconds {} reached after {} of {} steps", o.max_seconds, steps_done, o.steps);
  spdlog::info("train-dedicated: {} steps in {:.1f} s (features included), last loss {:.4f}", steps_done, seconds, last_loss);
  nk::h5::Writer out(o.output, kDedicatedSchema, o.no_clobber);
  nk::nn::write_unet(out, ema, "/dedicated");
  out.write("/dedicated/feature_mean", mean_f.data(), {F}, "F");
  out.write("/dedicated/feature_scale", scale_f.data(), {F}, "F");
  out.attr("/dedicated", "extractor", extractor->name());
  out.attr("/dedicated", "seconds", seconds);
  out.attr("/dedicated", "steps", steps_done);
  out.attr("/dedicated", "batch", o.batch);
  out.attr("/dedicated", "learning_rate", o.learning_rate);
  out.attr("/dedicated", "ema", o.ema);
  out.attr("/dedicated", "loss", last_loss);
  out.attr("/dedicated", "items", n);
  out.attr("/dedicated", "data", nk::display_name(o.input));
  if (checking) {
    std::vector<int64_t> step_col;
    std::vector<double> seconds_col, frechet_col;
    for (const Check& c : checks) step_col.push_back(c.step), seconds_col.push_back(c.seconds), frechet_col.push_back(c.frechet);
    const int64_t nc = static_cast<int64_t>(checks.size());
    out.write("/checks/step", step_col.data(), {nc}, "check");
    out.write("/checks/seconds", seconds_col.data(), {nc}, "check");
    out.write("/checks/frechet", frechet_col.data(), {nc}, "check");
    out.attr("/checks", "target_frechet", o.until_frechet);
    out.attr("/checks", "reached", int64_t{reached ? 1 : 0});
    out.attr("/checks", "queries", Qc);
    out.attr("/checks", "samples", o.check_samples);
    out.attr("/checks", "sample_steps", o.check_steps);
    out.attr("/checks", "seconds", check_seconds);
    out.attr("/checks", "evaluator", reference->evaluator().name());
    out.attr("/checks", "reference", nk::display_name(o.reference));
  }
  out.commit();
}

}  // namespace ia
