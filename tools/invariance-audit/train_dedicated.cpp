// train_dedicated.cpp - the train-dedicated verb: the baseline the paper
// replaces. The same flow-matching U-Net as the prior, conditioned on the
// features of one extractor (an MLP of the normalised features added to the
// time embedding), trained on (x, f(x)) pairs; its wall time is part of the
// file, for the comparison with a training-free audit.
#include <cmath>

#include "invariance-audit/extractor.hpp"
#include "invariance-audit/invariance_audit.hpp"
#include "invariance-audit/prior.hpp"
#include "nk/dataset.hpp"
#include "nk/error.hpp"
#include "nk/log.hpp"
#include "nk/nn/flow.hpp"
#include "nk/progress.hpp"
#include "nk/timer.hpp"

namespace ia {

void train_dedicated(const TrainDedicatedOptions& o, const nk::RunEnv& env) {
  nk::data::Options accept;
  accept.vectors = false;
  accept.image_files = false;
  accept.labels = nk::data::Labels::ignore;
  const nk::data::Source data = nk::data::Source::open(o.input, accept);
  const nk::nn::Shape image{data.height(), data.width(), data.channels()};
  nk::Stopwatch clock;
  const int64_t n = data.count(), d = image.size(), chunk = 256;
  nk::h5::Array<float> x = data.read_all();
  std::unique_ptr<Extractor> extractor = open_extractor(o.extractor, image, std::min(chunk, n));
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
  spdlog::info("train-dedicated: U-Net {} ({} parameters) conditioned on the {} features of {}, {} images of {}",
               config.text(), net.parameter_count(), F, extractor->name(), n, image.text());
  nk::nn::UNet<float> ema;
  nk::Progress progress("train-dedicated", o.steps);
  double last_loss = 0;
  int64_t steps_done = 0;
  const int64_t every = std::max<int64_t>(1, std::min<int64_t>(100, o.steps / 20));
  nk::nn::train_flow(net, &ema, x.data.data(), cond.data(), n, training, every, [&](const nk::nn::FlowReport& r) {
    if (!std::isfinite(r.loss)) throw nk::Error(nk::Exit::runtime, "train-dedicated: the loss is not finite at step " + std::to_string(r.step));
    progress.update(r.step);
    spdlog::debug("step {}: loss {:.4f}, gradient norm {:.3f} ({:.1f} s)", r.step, r.loss, r.grad_norm, r.seconds);
    last_loss = r.loss;
    steps_done = r.step;
  });
  progress.finish();
  const double seconds = clock.seconds();
  if (steps_done < o.steps) spdlog::info("train-dedicated: --max-seconds {} reached after {} of {} steps", o.max_seconds, steps_done, o.steps);
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
  out.commit();
}

}  // namespace ia
