// train_prior.cpp - the train-prior verb: flow matching on images (x1 = 2 p
// - 1, x0 ~ N(0, I), target x1 - x0), a U-Net, AdamW with warm-up and cosine
// decay, and its exponential moving average, which is what the file keeps.
#include <cmath>

#include "invariance-audit/invariance_audit.hpp"
#include "invariance-audit/prior.hpp"
#include "nk/dataset.hpp"
#include "nk/error.hpp"
#include "nk/log.hpp"
#include "nk/nn/flow.hpp"
#include "nk/progress.hpp"

namespace ia {

void train_prior(const TrainPriorOptions& o, const nk::RunEnv& env) {
  nk::data::Options accept;
  accept.unit_range = true;  // the U-Net prior and the extractors take pixels in [0,1]
  accept.vectors = false;
  accept.image_files = false;
  accept.labels = nk::data::Labels::ignore;
  const nk::data::Source data = nk::data::Source::open(o.input, accept);
  const nk::nn::Shape image{data.height(), data.width(), data.channels()};
  nk::nn::UNet<float> net = build_unet(o.channels, o.groups, o.time_dim, 0, image, env.seed);
  const nk::nn::UNetConfig& config = net.config();
  nk::h5::Array<float> x = data.read_all();
  for (float& v : x.data) v = to_prior(v);
  nk::nn::FlowTraining training = flow_schedule(o.steps, o.batch, o.learning_rate, o.ema, env.seed);
  spdlog::info("train-prior: U-Net {} ({} parameters, {:.1f} M multiply-adds per image) on {} images of {} from {}",
               config.text(), net.parameter_count(), net.forward_macs() / 1e6, data.count(), image.text(),
               nk::display_name(o.input));
  nk::nn::UNet<float> ema;
  nk::Progress progress("train-prior", o.steps);
  double seconds = 0, last_loss = 0;
  const int64_t every = std::max<int64_t>(1, std::min<int64_t>(100, o.steps / 20));
  nk::nn::train_flow(net, &ema, x.data.data(), nullptr, data.count(), training, every, [&](const nk::nn::FlowReport& r) {
    if (!std::isfinite(r.loss)) throw nk::Error(nk::Exit::runtime, "train-prior: the loss is not finite at step " + std::to_string(r.step));
    progress.update(r.step);
    spdlog::debug("step {}: loss {:.4f}, gradient norm {:.3f} ({:.1f} s)", r.step, r.loss, r.grad_norm, r.seconds);
    seconds = r.seconds;
    last_loss = r.loss;
  });
  progress.finish();
  spdlog::info("train-prior: {} steps in {:.1f} s, last loss {:.4f}", o.steps, seconds, last_loss);
  nk::h5::Writer out(o.output, kPriorSchema, o.no_clobber);
  nk::nn::write_unet(out, ema, "/prior");
  out.attr("/prior", "steps", o.steps);
  out.attr("/prior", "batch", o.batch);
  out.attr("/prior", "learning_rate", o.learning_rate);
  out.attr("/prior", "ema", o.ema);
  out.attr("/prior", "seconds", seconds);
  out.attr("/prior", "loss", last_loss);
  out.attr("/prior", "items", data.count());
  out.attr("/prior", "data", nk::display_name(o.input));
  out.attr("/prior", "pixels", std::string("x = 2 p - 1 (p in [0,1])"));
  out.commit();
}

}  // namespace ia
