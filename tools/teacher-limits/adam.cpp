// adam.cpp - the adam verb: students of several widths per item (widths given
// as numbers or as kc/2, kc, 2kc, k with k_c from the equations at the item's
// n), each trained by Adam, beside the random-features ridge baseline.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "teacher-limits/student.hpp"
#include "teacher-limits/teacher_limits.hpp"

namespace tl {
namespace {

bool needs_kc(const std::string& token) {
  return token.find("kc") != std::string::npos;
}

int64_t resolve_width(const std::string& token, int64_t k_c, int64_t k) {
  if (token == "kc") return std::max<int64_t>(1, k_c);
  if (token == "kc/2") return std::max<int64_t>(1, (k_c + 1) / 2);
  if (token == "2kc") return std::max<int64_t>(1, 2 * k_c);
  if (token == "k") return k;
  size_t used = 0;
  int64_t w = 0;
  try {
    w = std::stoll(token, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != token.size() || w < 1 || w > (int64_t{1} << 20))
    throw nk::usage_error("--widths takes positive integers or kc/2, kc, 2kc, k, not '" + token + "'");
  return w;
}

// k_c at alpha = n/d: features with q >= 1/2 on the Bayes-optimal branch.
int64_t effective_width(const StateEvolution& se, int64_t n) {
  const Branch b = se.solve(static_cast<double>(n) / static_cast<double>(se.spec().d), Rule::best);
  return std::count_if(b.q.begin(), b.q.end(), [](double q) { return q >= 0.5; });
}

}  // namespace

void adam(const AdamOptions& o, const nk::RunEnv& env) {
  for (const std::string& token : o.widths) resolve_width(token, 0, 1);  // usage errors first
  if (o.widths.empty()) throw nk::usage_error("--widths needs at least one width");
  const Workload work(o.input, o.items, "adam");
  const Teacher& t = work.teacher();
  const std::vector<Item>& items = work.items();
  const auto [first, last] = nk::shard_range(env.shard, static_cast<int64_t>(items.size()));
  const int64_t count = last - first, k = t.k(), W = static_cast<int64_t>(o.widths.size());
  std::optional<StateEvolution> se;
  if (std::any_of(o.widths.begin(), o.widths.end(), needs_kc)) se.emplace(t.spec());

  std::vector<int64_t> kc_of, width_of;
  std::vector<double> eps, eps_ensemble, overlap, lr, val, epochs, ridge;
  std::vector<std::map<int64_t, StudentFit>> students;
  nk::Progress progress("adam", count * W);
  for (int64_t i = first; i < last; ++i) {
    const Data data = work.data(static_cast<size_t>(i));
    const int64_t k_c = se ? effective_width(*se, items[i].n) : -1;
    kc_of.push_back(k_c);
    const nk::Rng rng = nk::Rng(env.seed).split(static_cast<uint64_t>(i));
    std::map<int64_t, StudentFit> fits;
    for (int64_t j = 0; j < W; ++j) {
      progress.update((i - first) * W + j);
      const int64_t resolved = resolve_width(o.widths[j], k_c, k);
      const int64_t w = o.training.teacher_readout ? std::min(resolved, k) : resolved;
      width_of.push_back(w);
      if (!fits.count(w)) fits.emplace(w, train_student(data, w, o.training, rng.split(static_cast<uint64_t>(w))));
      const StudentFit& f = fits.at(w);
      eps.push_back(f.eps);
      eps_ensemble.push_back(f.eps_ensemble);
      overlap.insert(overlap.end(), f.overlap.begin(), f.overlap.end());
      lr.push_back(f.learning_rate);
      val.push_back(f.val_mse);
      epochs.push_back(static_cast<double>(f.epochs));
      spdlog::info("adam: item {}/{} n = {} seed {} width {} ({}): eps {:.5g} (restarts' mean prediction {:.5g}), "
                   "validation mse {:.5g}, lr {}, {} epochs",
                   i + 1, items.size(), items[i].n, items[i].seed, w, o.widths[j], f.eps, f.eps_ensemble, f.val_mse,
                   f.learning_rate, f.epochs);
    }
    ridge.push_back(o.ridge_features > 0 ? random_features_ridge(data, o.ridge_features * t.d(), o.training.validation,
                                                                 rng.split(1u << 30))
                                         : std::numeric_limits<double>::quiet_NaN());
    spdlog::info("adam: item {}/{} random-features ridge ({} features): eps {:.5g}", i + 1, items.size(),
                 o.ridge_features * t.d(), ridge.back());
    students.push_back(std::move(fits));
  }

  progress.finish();
  nk::h5::Writer out(o.output, kAdamSchema, o.no_clobber);
  write_teacher(out, t);
  write_items(out, "/adam", items, first, last);
  out.write_strings("/adam/widths", o.widths, "w");
  out.attr("/adam/widths", "nk_merge", "same");
  out.write("/adam/width", width_of.data(), {count, W}, "item,w");
  out.write("/adam/k_c", kc_of.data(), {count}, "item");
  out.write("/adam/eps", eps.data(), {count, W}, "item,w");
  out.write("/adam/eps_ensemble", eps_ensemble.data(), {count, W}, "item,w");
  out.write("/adam/overlap", overlap.data(), {count, W, k}, "item,w,k");
  out.write("/adam/lr", lr.data(), {count, W}, "item,w");
  out.write("/adam/val_mse", val.data(), {count, W}, "item,w");
  out.write("/adam/epochs", epochs.data(), {count, W}, "item,w");
  if (o.ridge_features > 0) out.write("/adam/ridge_eps", ridge.data(), {count}, "item");
  for (int64_t i = 0; i < count; ++i)
    for (const auto& [w, f] : students[i]) {
      char group[64];
      std::snprintf(group, sizeof group, "/adam/students/%06lld/%lld/", static_cast<long long>(first + i),
                    static_cast<long long>(w));
      out.write_matrix(std::string(group) + "W", f.W, "w,d");
      out.write(std::string(group) + "a", f.a.data(), {w}, "w");
      out.attr(std::string(group) + "W", "nk_merge", "item");
      out.attr(std::string(group) + "a", "nk_merge", "item");
    }
  out.commit();
  spdlog::info("adam: {} item(s) x {} widths (shard {}) -> {}", count, W, env.shard.text(),
               nk::display_name(o.output, true));
}

}  // namespace tl
