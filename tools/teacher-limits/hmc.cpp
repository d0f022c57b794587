// hmc.cpp - the hmc verb: the Bayes-optimal posterior sampled by HMC for each
// item (a data file, or n x data seed), its error, Gibbs error and overlaps.
#include <cmath>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "teacher-limits/teacher_limits.hpp"

namespace tl {

void hmc(const HmcOptions& o, const nk::RunEnv& env) {
  const Workload work(o.input, o.items, "hmc");
  const std::vector<Item>& items = work.items();
  const auto [first, last] = nk::shard_range(env.shard, static_cast<int64_t>(items.size()));
  const int64_t count = last - first, k = work.teacher().k();
  HmcConfig config = o.config;
  config.informed = o.init == "informed";
  config.device = env.device;

  std::vector<double> eps_bo, eps_se, eps_gibbs, acceptance, step, gradients, seconds, overlap;
  Vector pred_test;
  for (int64_t i = first; i < last; ++i) {
    const Data data = work.data(static_cast<size_t>(i));
    const std::string label = "hmc n=" + std::to_string(items[i].n);
    const HmcResult r = sample_posterior(data, config, nk::Rng(env.seed).split(static_cast<uint64_t>(i)), label);
    eps_bo.push_back(r.eps_bo);
    eps_se.push_back(r.eps_bo_se);
    eps_gibbs.push_back(r.eps_gibbs);
    acceptance.push_back(r.acceptance);
    step.push_back(r.step);
    gradients.push_back(static_cast<double>(r.gradients));
    seconds.push_back(r.seconds);
    overlap.insert(overlap.end(), r.overlap.begin(), r.overlap.end());
    if (work.from_file()) pred_test = r.pred_test;
    const double flops =
        Committee::gradient_flops(items[i].n, k, work.teacher().d()) * static_cast<double>(r.gradients);
    spdlog::info(
        "hmc: item {}/{} n = {} seed {}: eps_bo {:.5g} +- {:.2g}, Gibbs/BO {:.3f}, acceptance {:.3f}, step {:.3g}; "
        "{:.0f} gradients/s ({:.1f} GFLOP/s)",
        i + 1, items.size(), items[i].n, items[i].seed, r.eps_bo, r.eps_bo_se, r.eps_gibbs / r.eps_bo, r.acceptance,
        r.step, static_cast<double>(r.gradients) / r.seconds, flops / r.seconds * 1e-9);
  }

  nk::h5::Writer out(o.output, kHmcSchema, o.no_clobber);
  write_teacher(out, work.teacher());
  write_items(out, "/hmc", items, first, last);
  out.write("/hmc/eps_bo", eps_bo.data(), {count}, "item");
  out.allow_nonfinite("/hmc/eps_bo_se");  // NaN: fewer than two batch means
  out.write("/hmc/eps_bo_se", eps_se.data(), {count}, "item");
  out.write("/hmc/eps_gibbs", eps_gibbs.data(), {count}, "item");
  out.write("/hmc/overlap", overlap.data(), {count, k}, "item,k");
  out.write("/hmc/acceptance", acceptance.data(), {count}, "item");
  out.write("/hmc/step", step.data(), {count}, "item");
  out.write("/hmc/gradients", gradients.data(), {count}, "item");
  out.write("/hmc/gradient_seconds", seconds.data(), {count}, "item", "s");
  if (work.from_file()) out.write("/hmc/pred_test", pred_test.data(), {static_cast<int64_t>(pred_test.size())}, "m");
  out.attr("/", "init", o.init);
  out.attr("/hmc", "chains", static_cast<int64_t>(config.chains));
  out.attr("/hmc", "samples", config.samples);
  out.attr("/hmc", "warmup", config.warmup);
  out.attr("/hmc", "leapfrog", static_cast<int64_t>(config.leapfrog));
  out.commit();
  spdlog::info("hmc: {} item(s) (shard {}) -> {}", count, env.shard.text(), nk::display_name(o.output, true));
}

}  // namespace tl
