// train.cpp - the train verb: one SAE from a buffer of U rows and a budget of B samples.
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/timer.hpp"
#include "sae-buffer/sae_buffer.hpp"

namespace sb {

void train(const TrainOptions& o, const nk::RunEnv& env) {
  TrainConfig c = o.config;
  if (c.buffer <= 0 || c.budget <= 0)
    throw nk::Error(nk::Exit::input, "--buffer " + std::to_string(c.buffer) + ", --budget " + std::to_string(c.budget) +
                                         ": U and B must be positive");
  if (c.budget < c.buffer)
    throw nk::usage_error("--budget " + std::to_string(c.budget) + " < --buffer " + std::to_string(c.buffer) +
                          ": a buffer is replayed, never cut (B >= U)");
  const Activations source = Activations::open(o.input, o.hook);
  nk::Stopwatch timer;
  const TrainResult r = train_sae(source, source.pool(), c, env.seed, "train");
  const double seconds = timer.seconds();

  nk::h5::Writer out(o.output, kSaeSchema, o.no_clobber);
  write_sae(out, r.sae);
  const int64_t U = static_cast<int64_t>(r.buffer_rows.size());
  out.write("/train/buffer_rows", r.buffer_rows.data(), {U}, "U");
  out.write("/train/usage", r.usage.data(), {U}, "U");
  const int64_t points = static_cast<int64_t>(r.curve.samples.size());
  out.write("/train/curve/samples", r.curve.samples.data(), {points}, "P");
  out.write("/train/curve/mse", r.curve.mse.data(), {points}, "P");
  out.write("/train/curve/l0", r.curve.l0.data(), {points}, "P");
  out.write("/train/curve/dead_fraction", r.curve.dead_fraction.data(), {points}, "P");
  out.attr("/train", "buffer", U);
  out.attr("/train", "budget", c.budget);
  out.attr("/train", "replay", static_cast<double>(c.budget) / static_cast<double>(U));
  out.attr("/train", "batch", c.batch);
  out.attr("/train", "steps", r.steps);
  out.attr("/train", "lr", c.learning_rate);
  out.attr("/train", "input_scale", r.scale);
  out.attr("/train", "source", o.input);
  out.attr("/train", "dataset", source.dataset());
  out.attr("/train", "seconds", seconds);
  out.attr("/train", "samples_per_second", static_cast<double>(c.budget) / seconds);
  out.commit();
  spdlog::info("train: {} U = {} B = {} (R = {:.3g}), n = {}, k = {}: final mse {:.4g}, L0 {:.1f}, dead {:.3f}; "
               "{:.0f} samples/s",
               arch_name(c.arch), U, c.budget, static_cast<double>(c.budget) / static_cast<double>(U), r.sae.latents(), c.k,
               r.curve.mse.back(), r.curve.l0.back(), r.curve.dead_fraction.back(), static_cast<double>(c.budget) / seconds);
}

}  // namespace sb
