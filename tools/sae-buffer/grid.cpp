// grid.cpp - the (U, B) grid: one SAE per point with B >= U, each scored on
// the same held-out activations.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/rng.hpp"
#include "nk/shard.hpp"
#include "sae-buffer/metrics.hpp"
#include "sae-buffer/probe.hpp"
#include "sae-buffer/sae_buffer.hpp"

namespace sb {

namespace {

constexpr uint64_t kHeldoutPointsStream = 21;

struct Point {
  int64_t U, B, latents;
};

}  // namespace

Heldout heldout_split(const Activations& train, const std::string& heldout_path, const std::string& hook, int64_t rows) {
  Heldout h;
  h.pool = train.pool();
  if (!heldout_path.empty()) {
    const Activations held = Activations::open(heldout_path, hook);
    if (held.dim() != train.dim())
      throw nk::input_error(heldout_path, held.dataset(),
                            "width " + std::to_string(held.dim()) + " differs from the training activations' " + std::to_string(train.dim()));
    h.x = held.read_range(0, std::min(rows, held.stored_rows()));
    h.source = heldout_path + ":" + held.dataset();
  } else if (train.synthetic()) {
    h.x = train.read_range(kHeldoutFirstRow, kHeldoutFirstRow + rows);
    h.source = "generator rows 2^50..";
  } else {
    if (train.stored_rows() <= rows)
      throw nk::input_error(train.path(), train.dataset(),
                            "holds " + std::to_string(train.stored_rows()) + " rows: too few to hold out " + std::to_string(rows) +
                                " (give --heldout FILE or a smaller --heldout-rows)");
    h.pool = train.stored_rows() - rows;
    h.x = train.read_range(h.pool, train.stored_rows());
    h.source = "the input's last " + std::to_string(rows) + " rows";
  }
  return h;
}

void grid(const GridOptions& o, const nk::RunEnv& env) {
  if (o.buffers.empty() || o.budgets.empty()) throw nk::usage_error("--buffers and --budgets need at least one value each");
  for (const int64_t v : o.buffers)
    if (v <= 0) throw nk::Error(nk::Exit::input, "--buffers: U = " + std::to_string(v) + ": every U must be positive");
  for (const int64_t v : o.budgets)
    if (v <= 0) throw nk::Error(nk::Exit::input, "--budgets: B = " + std::to_string(v) + ": every B must be positive");
  const Activations source = Activations::open(o.input, o.hook);
  const std::vector<int64_t> latents_list = o.latents.empty() ? std::vector<int64_t>{o.config.latents} : o.latents;
  std::vector<Point> points;
  for (const int64_t n : latents_list)
    for (const int64_t B : o.budgets)
      for (const int64_t U : o.buffers)
        if (U <= B) points.push_back({U, B, n > 0 ? n : 16 * source.dim()});
  const int64_t G = static_cast<int64_t>(points.size());
  if (G == 0) throw nk::usage_error("no grid point has B >= U");

  // A seeded share of the points is held out of the law's fit (the same points whatever the sharding).
  std::vector<int8_t> heldout_point(static_cast<size_t>(G), 0);
  {
    std::vector<int64_t> order(static_cast<size_t>(G));
    std::iota(order.begin(), order.end(), int64_t{0});
    nk::Rng rng = nk::Rng(env.seed).split(kHeldoutPointsStream);
    nk::shuffle(order, rng);
    const int64_t held = static_cast<int64_t>(std::llround(o.heldout_fraction * static_cast<double>(G)));
    for (int64_t i = 0; i < held; ++i) heldout_point[order[i]] = 1;
  }

  const Heldout held = heldout_split(source, o.heldout, o.hook, o.heldout_rows);
  const int64_t max_U = *std::max_element(o.buffers.begin(), o.buffers.end());
  if (max_U > held.pool)
    throw nk::input_error(o.input, source.dataset(),
                          "a buffer of " + std::to_string(max_U) + " rows needs more than the " + std::to_string(held.pool) +
                              " rows available for training");
  Matrix<float> truth;
  const std::string truth_path = !o.truth.empty() ? o.truth : source.synthetic() ? o.input : "";
  if (!truth_path.empty()) {
    const nk::h5::File f = nk::h5::File::open(truth_path);
    f.require("/truth/dictionary");
    truth = f.read_matrix<float>("/truth/dictionary");
    if (truth.cols() != source.dim() || truth.rows() < 1 || !truth.allFinite())
      throw nk::input_error(truth_path, "/truth/dictionary", "expected finite features [F," + std::to_string(source.dim()) + "]");
  }
  ProbeSetup probes;
  const bool labelled = !o.labels.empty();
  if (labelled) probes = prepare_probes(held.x, read_labels(o.labels, held.x.rows()), env.seed);

  const auto [first, last] = nk::shard_range(env.shard, G);
  const int64_t mine = last - first;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<int64_t> col_U, col_B, col_n;
  std::vector<double> ev, mse, l0, dead, mmcs, f1, absorption;
  std::vector<int8_t> col_held;
  spdlog::info("grid: {} points ({} here, shard {}), held-out: {} ({} rows)", G, mine, env.shard.text(), held.source, held.x.rows());
  for (int64_t i = first; i < last; ++i) {
    const Point& p = points[i];
    TrainConfig c = o.config;
    c.buffer = p.U;
    c.budget = p.B;
    c.latents = p.latents;
    const std::string label = "U=" + std::to_string(p.U) + " B=" + std::to_string(p.B);
    const TrainResult r = train_sae(source, held.pool, c, env.seed, label);
    CodesT<float> codes;
    const Reconstruction rec = reconstruct(r.sae, held.x, labelled ? &codes : nullptr);
    col_U.push_back(p.U);
    col_B.push_back(p.B);
    col_n.push_back(p.latents);
    col_held.push_back(heldout_point[i]);
    ev.push_back(rec.ev);
    mse.push_back(rec.mse);
    l0.push_back(rec.l0);
    dead.push_back(rec.dead_fraction);
    mmcs.push_back(truth.size() ? recovery(r.sae, truth).mmcs : nan);
    if (labelled) {
      const ProbeScores s = score_probes(probes, codes, r.sae.latents());
      f1.push_back(s.f1_k5);
      absorption.push_back(s.absorption);
    } else {
      f1.push_back(nan);
      absorption.push_back(nan);
    }
    spdlog::info("grid: point {}/{}: n {} U {} B {} (R {:.3g}): held-out EV {:.4f}, L0 {:.1f}, dead {:.3f}", i + 1, G, p.latents,
                 p.U, p.B, static_cast<double>(p.B) / static_cast<double>(p.U), rec.ev, rec.l0, rec.dead_fraction);
  }

  nk::h5::Writer out(o.output, kGridSchema, o.no_clobber);
  out.write("/grid/U", col_U.data(), {mine}, "G");
  out.write("/grid/B", col_B.data(), {mine}, "G");
  out.write("/grid/latents", col_n.data(), {mine}, "G");
  out.write("/grid/heldout_ev", ev.data(), {mine}, "G");
  out.write("/grid/mse", mse.data(), {mine}, "G");
  out.write("/grid/l0", l0.data(), {mine}, "G");
  out.write("/grid/dead_fraction", dead.data(), {mine}, "G");
  out.allow_nonfinite("/grid/mmcs");  // NaN: no --truth
  out.write("/grid/mmcs", mmcs.data(), {mine}, "G");
  out.allow_nonfinite("/grid/probe_f1");  // NaN: no probe for this run
  out.write("/grid/probe_f1", f1.data(), {mine}, "G");
  out.allow_nonfinite("/grid/absorption");  // NaN: no probe for this run
  out.write("/grid/absorption", absorption.data(), {mine}, "G");
  out.write("/grid/heldout", col_held.data(), {mine}, "G");
  out.attr("/", "dim", source.dim());
  out.attr("/", "arch", arch_name(o.config.arch));
  out.attr("/", "k", o.config.k);
  out.attr("/", "batch", o.config.batch);
  out.attr("/", "points", G);
  out.attr("/", "heldout_source", held.source);
  out.attr("/", "probe_f1_raw", labelled ? probes.f1_raw : nan);
  out.commit();
}

}  // namespace sb
