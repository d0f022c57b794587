// sweep.cpp - the sweep verb: one item through every bond dimension (and
// layer count) of the method, next to exact amplitude encoding, as a table,
// an HDF5 file and an SVG plot of the depth-versus-quality trade-off.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "nk/atomic_file.hpp"
#include "nk/error.hpp"
#include "nk/log.hpp"
#include "nk/plot.hpp"
#include "nk/progress.hpp"
#include "tnqe-encode/tnqe.hpp"

namespace tnqe {

namespace {

struct Config {
  std::string name;  ///< the plot series it belongs to
  EncodeOptions options;
  bool amplitude = false;
  int layers = 0;
};

struct Row {
  Config config;
  Outcome outcome;
};

std::vector<Config> plan(const SweepOptions& o) {
  std::vector<Config> v;
  Config amp;
  amp.name = "amplitude";
  amp.amplitude = true;
  v.push_back(amp);
  EncodeOptions base;
  base.iterations = o.iterations;
  base.learning_rate = o.learning_rate;
  // One configuration per bond dimension of a family.
  auto per_bond = [&](const char* name, const std::string& strategy, bool train) {
    for (int64_t chi : o.bonds) {
      Config c;
      c.name = name;
      c.options = base;
      c.options.bond = chi;
      c.options.strategy = strategy;
      c.options.train = train;
      v.push_back(c);
    }
  };
  per_bond("sequential", "sequential", false);
  if (o.parallel) per_bond("parallel", "parallel", false);
  if (o.train) per_bond("sequential-trained", "sequential", true);
  for (int l : o.layers) {
    Config c;
    c.name = "layered-trained";
    c.options = base;
    c.options.layers = l;
    c.options.train = true;
    c.layers = l;
    v.push_back(c);
  }
  return v;
}

std::string svg_plot(const std::vector<Row>& rows, const Item& item, const std::string& input) {
  const bool image = item.image;
  auto quality = [&](const Outcome& x) { return image ? x.psnr : x.fidelity; };
  std::vector<nk::plot::Series> series;
  double lo = INFINITY, hi = -INFINITY;
  for (const char* name : {"sequential", "parallel", "sequential-trained", "layered-trained"}) {
    nk::plot::Series s;
    s.name = name;
    s.markers = true;
    for (const Row& r : rows)
      if (r.config.name == name && std::isfinite(quality(r.outcome))) {
        s.x.push_back(static_cast<double>(r.outcome.counts.depth));
        s.y.push_back(quality(r.outcome));
        lo = std::min(lo, s.y.back());
        hi = std::max(hi, s.y.back());
      }
    // Draw each curve in order of depth.
    std::vector<size_t> order(s.x.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s.x[a] < s.x[b]; });
    nk::plot::Series sorted = s;
    for (size_t i = 0; i < order.size(); ++i) sorted.x[i] = s.x[order[i]], sorted.y[i] = s.y[order[i]];
    if (!sorted.x.empty()) series.push_back(std::move(sorted));
  }
  const Row& amp = rows.front();
  if (!std::isfinite(lo)) lo = 0, hi = 1;
  // Amplitude encoding is exact: its point sits at the top of the range (at
  // fidelity 1 for vectors); drawn as a vertical line at its depth.
  nk::plot::Series a;
  a.name = "amplitude (exact)";
  a.dashed = true;
  const double depth = static_cast<double>(amp.outcome.counts.depth);
  a.x = {depth, depth};
  a.y = {lo, image ? hi : 1.0};
  series.push_back(a);
  nk::plot::Axes axes;
  axes.title = std::string(image ? "PSNR" : "Fidelity") + " against circuit depth, item " + std::to_string(item.index) +
               " of " + (input == "-" ? std::string("stdin") : input);
  axes.xlabel = "circuit depth (CNOT + U3, log scale)";
  axes.ylabel = image ? "PSNR of the decoded image (dB)" : "fidelity |<target|psi>|^2";
  axes.log_x = true;
  return nk::plot::line_plot_svg(axes, series);
}

void write_h5(const SweepOptions& o, const std::vector<Row>& rows, const Item& item) {
  nk::h5::Writer out(o.output, kSweepSchema, o.no_clobber);
  const auto n = static_cast<int64_t>(rows.size());
  std::vector<std::string> names(n);
  for (int64_t i = 0; i < n; ++i) names[i] = rows[i].config.name;
  out.write_strings("/sweep/configuration", names, "R");
  out.allow_nonfinite("/sweep/psnr");  // Inf: an exact reproduction
  out.allow_nonfinite("/sweep/ssim");  // NaN: vectors have none
  auto column = [&](const std::string& name, auto get, const std::string& units = "") {
    std::vector<double> v(n);
    for (int64_t i = 0; i < n; ++i) v[i] = get(rows[i]);
    out.write("/sweep/" + name, v.data(), {n}, "R", units);
  };
  const double base_depth = static_cast<double>(rows.front().outcome.counts.depth);
  column("bond_dim", [](const Row& r) { return static_cast<double>(r.outcome.bond); });
  column("layers", [](const Row& r) { return static_cast<double>(r.config.layers); });
  column("qubits", [](const Row& r) { return static_cast<double>(r.outcome.counts.qubits); });
  column("cnots", [](const Row& r) { return static_cast<double>(r.outcome.counts.cnots); });
  column("depth", [](const Row& r) { return static_cast<double>(r.outcome.counts.depth); });
  column("cnot_depth", [](const Row& r) { return static_cast<double>(r.outcome.counts.cnot_depth); });
  column("depth_ratio", [&](const Row& r) { return static_cast<double>(r.outcome.counts.depth) / base_depth; });
  column("fidelity", [](const Row& r) { return r.outcome.fidelity; });
  column("psnr", [](const Row& r) { return r.outcome.psnr; }, "dB");
  column("ssim", [](const Row& r) { return r.outcome.ssim; });
  column("success_probability", [](const Row& r) { return r.outcome.success; });
  column("seconds", [](const Row& r) { return r.outcome.seconds; }, "s");
  out.attr("/", "input", o.input);
  out.attr("/", "index", item.index);
  out.attr("/", "iterations", static_cast<int64_t>(o.iterations));
  out.attr("/", "learning_rate", o.learning_rate);
  out.commit();
}

}  // namespace

void sweep(const SweepOptions& o) {
  if (o.bonds.empty() && o.layers.empty()) throw nk::usage_error("sweep needs at least one --bonds or --layers value");
  for (int64_t chi : o.bonds)
    if (chi < 1) throw nk::usage_error("--bonds values must be at least 1");
  const Source src = open_source(o.input);
  if (o.index >= src.count())
    throw nk::usage_error("--index " + std::to_string(o.index) + " is outside " + src.dataset() + " (N = " +
                          std::to_string(src.count()) + ")");
  const Item item = read_item(src, o.index, o.pad);
  const std::vector<Config> configs = plan(o);
  std::vector<Row> rows;
  nk::Progress progress("sweep", static_cast<int64_t>(configs.size()));
  for (const Config& c : configs) {
    rows.push_back({c, c.amplitude ? baseline_item(item, o.verify_qubits) : encode_item(item, c.options)});
    if (c.layers > 0) rows.back().outcome.bond = 0;  // layered circuits have no QTT bond
    progress.update(static_cast<int64_t>(rows.size()));
  }
  progress.finish();
  const double base_depth = static_cast<double>(rows.front().outcome.counts.depth);
  std::printf("configuration\tbond\tlayers\tqubits\tcnots\tdepth\tcnot_depth\tdepth_ratio\tfidelity\tpsnr_db\tssim\tsuccess\tseconds\n");
  for (const Row& r : rows) {
    const Outcome& x = r.outcome;
    std::printf("%s\t%lld\t%d\t%lld\t%lld\t%lld\t%lld\t%.5f\t%.6f\t%.3f\t%.4f\t%.3g\t%.2f\n", r.config.name.c_str(),
                static_cast<long long>(x.bond), r.config.layers, static_cast<long long>(x.counts.qubits),
                static_cast<long long>(x.counts.cnots), static_cast<long long>(x.counts.depth),
                static_cast<long long>(x.counts.cnot_depth), static_cast<double>(x.counts.depth) / base_depth, x.fidelity,
                x.psnr, x.ssim, x.success, x.seconds);
  }
  std::fflush(stdout);
  // The plot first, then the HDF5 file; each is written atomically.
  if (!o.plot.empty()) {
    const std::string svg = svg_plot(rows, item, o.input);
    nk::write_output_bytes(o.plot, std::vector<unsigned char>(svg.begin(), svg.end()), o.no_clobber);
  }
  if (!o.output.empty()) write_h5(o, rows, item);
}

}  // namespace tnqe
