// calibrate.cpp - the calibrate verb: one threshold lambda(r) per radius by
// robust conformal risk control on an unlabeled calibration set.
#include <cmath>
#include <limits>

#include "nk/error.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "nk/timer.hpp"
#include "proxy-certify/proxy.hpp"
#include "proxy-certify/proxy_certify.hpp"
#include "proxy-certify/stats.hpp"

namespace pc {

namespace {

void check_calibration(const CalibrateOptions& o) {
  if (!(o.target > 0 && o.target < 1)) throw nk::usage_error("--target must lie in (0, 1)");
  if (o.radii.empty()) throw nk::usage_error("--radii needs at least one radius");
  for (double r : o.radii) {
    if (!(r > 0) || !std::isfinite(r)) throw nk::usage_error("--radii must be positive, got " + std::to_string(r));
  }
  if (!(o.robust_tv >= 0 && o.robust_tv < 1)) throw nk::usage_error("--robust-tv must lie in [0, 1)");
  if (o.proxy == "head" && o.head_data.empty()) {
    throw nk::usage_error("--proxy head needs --head-data: a split of items to train the head on (labels not read)");
  }
}

}  // namespace

void calibrate(const CalibrateOptions& o, const nk::RunEnv& env) {
  check_calibration(o);
  check_smoothing(o.alpha, o.n0, o.n);
  nk::data::Options accept;
  accept.labels = nk::data::Labels::ignore;  // never reads labels
  const nk::data::Source data = nk::data::Source::open(o.input, accept);
  auto model = open_classifier(o.model, item_shape(data), o.batch);
  require_same_shape(*model, data);
  const double sigma = resolve_sigma(o.sigma, *model);
  nk::Stopwatch clock;
  Head head;
  if (o.proxy == "head") {
    const nk::data::Source head_data = nk::data::Source::open(o.head_data, accept);
    require_same_shape(*model, head_data);
    head = train_head(*model, head_data, o.n0, o.head_n, o.alpha, sigma, env.seed, o.batch, env.device);
    spdlog::info("calibrate: head trained on {} items with CERTIFY n = {} ({} forwards, {:.1f} s)", head.items, head.n,
                 head.forwards, head.seconds);
  }
  const int64_t count = data.count(), radii = static_cast<int64_t>(o.radii.size());
  nk::data::check_run_items(data.path(), data.dataset(), count);
  const CleanPass pass = clean_pass(*model, data, 0, count, o.proxy == "head");
  const std::vector<double> scores = proxy_scores(o.proxy, pass, head);
  // F_i(r): an upper bound in expectation on 1{sigma Phi^-1(p_c(x_i)) < r}.
  std::vector<double> losses(static_cast<size_t>(count * radii));
  Smoother smoother(*model, sigma, env.seed, o.batch, env.device);
  nk::Progress progress("calibrate", count);
  for (int64_t i = 0; i < count; ++i) {
    const nk::h5::Array<float> x = data.read_item(i);
    if (o.recipe == "single") {
      const std::vector<int64_t>& counts = smoother.counts(x.data.data(), i, Phase::calibration, 1);
      const bool miss = counts[static_cast<size_t>(pass.cls[i])] == 0;
      for (int64_t r = 0; r < radii; ++r) losses[i * radii + r] = miss ? single_bound(o.radii[r], sigma) : 0.0;
    } else {
      const Certificate c = certify(smoother, x.data.data(), i, o.n0, o.n, o.alpha);
      for (int64_t r = 0; r < radii; ++r) losses[i * radii + r] = c.pred == pass.cls[i] && c.radius >= o.radii[r] ? 0.0 : 1.0;
    }
    progress.update(i + 1);
  }
  progress.finish();
  std::vector<double> lambda(static_cast<size_t>(radii)), level(static_cast<size_t>(radii));
  for (int64_t r = 0; r < radii; ++r) {
    const double bound = o.recipe == "single" ? single_bound(o.radii[r], sigma) : 1.0;
    // Heavy: F_i misses the true event only where CERTIFY errs (probability
    // <= alpha); TV-robust: a test law within rho of the calibration law moves
    // the risk by at most rho B.
    level[r] = o.target - (o.recipe == "heavy" ? o.alpha : 0.0) - o.robust_tv * bound;
    std::vector<double> column(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) column[i] = losses[i * radii + r];
    lambda[r] = level[r] > 0 ? crc_lambda(scores, column, bound, level[r]) : std::numeric_limits<double>::infinity();
    int64_t approved = 0;
    for (double s : scores) approved += s >= lambda[r];
    spdlog::info("calibrate: r = {}: lambda = {:.4g} (level {:.4g}, bound B = {:.3g}); approves {} of {} calibration items",
                 o.radii[r], lambda[r], level[r], bound, approved, count);
  }
  nk::h5::Writer out(o.output, kProxySchema, o.no_clobber);
  out.allow_nonfinite("/proxy/lambda");
  out.write("/proxy/radii", o.radii.data(), {radii}, "R", "pixel-space L2");
  out.write("/proxy/lambda", lambda.data(), {radii}, "R");
  out.write("/proxy/level", level.data(), {radii}, "R");
  out.write("/calibration/score", scores.data(), {count}, "N");
  out.write("/calibration/loss", losses.data(), {count, radii}, "N,R");
  out.write("/calibration/class", pass.cls.data(), {count}, "N");
  out.attr("/proxy", "kind", o.proxy);
  out.attr("/proxy", "recipe", o.recipe);
  out.attr("/proxy", "target", o.target);
  out.attr("/proxy", "sigma", sigma);
  out.attr("/proxy", "alpha", o.alpha);
  out.attr("/proxy", "robust_tv", o.robust_tv);
  out.attr("/proxy", "n0", o.n0);
  out.attr("/proxy", "n", o.n);
  out.attr("/proxy", "model", model->name());
  out.attr("/proxy", "model_fingerprint", model_fingerprint(*model));
  out.attr("/proxy", "calibration_forwards", smoother.forwards() + count);
  out.attr("/proxy", "seconds", clock.seconds());
  if (!head.empty()) write_head(out, head);
  out.commit();
}

}  // namespace pc
