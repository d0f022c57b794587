// fit.cpp - the fit verb (the law and its baselines on a grid) and the size
// verb (the smallest buffer that keeps EV within a tolerance of fresh data).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "nk/atomic_file.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/plot.hpp"
#include "sae-buffer/law.hpp"
#include "sae-buffer/sae_buffer.hpp"

namespace sb {

namespace {

struct GridFile {
  std::vector<GridPoint> points;
  std::vector<int8_t> heldout;
  std::vector<double> ev;
  int64_t dim = 0;
  bool spans_latents = false;
};

// A numeric column of any integer or floating type, as double.
nk::h5::Array<double> read_column(const nk::h5::File& f, const std::string& name) {
  if (nk::h5::is_integer(f.info(name).dtype)) {
    const auto a = f.read<int64_t>(name, 1, "G");
    nk::h5::Array<double> out;
    out.shape = a.shape;
    out.data.assign(a.data.begin(), a.data.end());
    return out;
  }
  return f.read<double>(name, 1, "G");
}

}  // namespace

GridColumns read_grid_columns(const std::string& path) {
  const nk::h5::File f = nk::h5::File::open(path);
  for (const char* d : {"/grid/U", "/grid/B", "/grid/heldout_ev"}) f.require(d);
  GridColumns c;
  c.U = read_column(f, "/grid/U").data;
  c.B = read_column(f, "/grid/B").data;
  c.ev = read_column(f, "/grid/heldout_ev").data;
  const size_t G = c.U.size();
  c.latents.assign(G, 0.0);
  if (f.has("/grid/latents")) c.latents = read_column(f, "/grid/latents").data;
  c.heldout.assign(G, 0);
  if (f.has("/grid/heldout")) {
    const auto h = read_column(f, "/grid/heldout").data;
    if (h.size() == G)
      for (size_t i = 0; i < G; ++i) c.heldout[i] = h[i] != 0;
    else
      throw nk::input_error(path, "/grid/heldout", "has " + std::to_string(h.size()) + " entries, /grid/U has " + std::to_string(G));
  }
  for (const auto& [name, size] : {std::pair{"/grid/B", c.B.size()}, std::pair{"/grid/heldout_ev", c.ev.size()},
                                   std::pair{"/grid/latents", c.latents.size()}})
    if (size != G) throw nk::input_error(path, name, "has " + std::to_string(size) + " entries, /grid/U has " + std::to_string(G));
  c.dim = static_cast<int64_t>(f.attr_number("/", "dim").value_or(0));
  return c;
}

namespace {

GridFile read_grid(const std::string& path) {
  const GridColumns c = read_grid_columns(path);
  GridFile g;
  const int64_t G = static_cast<int64_t>(c.U.size());
  const auto& U = c.U;
  const auto& B = c.B;
  const auto& ev = c.ev;
  const auto& latents = c.latents;
  for (int64_t i = 0; i < G; ++i) {
    if (!(U[i] > 0) || !(B[i] > 0) || U[i] > 1e15 || B[i] > 1e15)
      throw nk::input_error(path, "/grid/U", "point " + std::to_string(i) + ": U and B must be positive (at most 1e15)");
    if (!std::isfinite(latents[i]) || latents[i] < 0 || latents[i] > 1e12)
      throw nk::input_error(path, "/grid/latents", "point " + std::to_string(i) + " is " + std::to_string(latents[i]) +
                                                       " (expected a latent count up to 1e12, or 0: unknown)");
    if (B[i] < U[i])
      throw nk::input_error(path, "/grid/B", "point " + std::to_string(i) + ": B < U (a buffer is never cut)");
    if (!std::isfinite(ev[i]) || ev[i] >= 1)
      throw nk::input_error(path, "/grid/heldout_ev", "point " + std::to_string(i) + " is " + std::to_string(ev[i]) +
                                                          " (expected a finite EV below 1)");
    g.points.push_back({U[i], B[i], latents[i], 1 - ev[i]});
    g.heldout.push_back(c.heldout[i]);
    g.ev.push_back(ev[i]);
  }
  g.spans_latents = std::any_of(latents.begin(), latents.end(), [&](double n) { return n != latents.front(); });
  g.dim = c.dim;
  return g;
}

double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

// Held-out EV against U, one colour per B: measured points and the law's curve.
void write_plot(const std::string& path, bool no_clobber, const GridFile& g, const LawFit& law) {
  std::map<double, std::vector<size_t>> by_budget;
  for (size_t i = 0; i < g.points.size(); ++i)
    if (g.points[i].latents == g.points.front().latents) by_budget[g.points[i].B].push_back(i);
  std::vector<nk::plot::Series> series;
  for (const auto& [B, items] : by_budget) {
    nk::plot::Series measured, curve;
    measured.name = "B = " + std::to_string(static_cast<int64_t>(B));
    measured.markers = true;
    double lo = B;
    for (const size_t i : items) {
      measured.x.push_back(g.points[i].U);
      measured.y.push_back(g.ev[i]);
      lo = std::min(lo, g.points[i].U);
    }
    curve.name = "law, B = " + std::to_string(static_cast<int64_t>(B));
    curve.dashed = true;
    for (int s = 0; s <= 48; ++s) {
      const double U = lo * std::pow(B / lo, s / 48.0);
      curve.x.push_back(U);
      curve.y.push_back(1 - predict_fvu(law.kind, law.params, {U, B, g.points.front().latents, 0}));
    }
    series.push_back(std::move(measured));
    series.push_back(std::move(curve));
  }
  nk::plot::Axes axes;
  axes.title = "held-out EV vs unique activations U (dashed: the fitted law)";
  axes.xlabel = "U (unique rows in the buffer)";
  axes.ylabel = "held-out explained variance";
  axes.log_x = true;
  const std::string svg = nk::plot::line_plot_svg(axes, series);
  nk::write_output_bytes(path, std::vector<unsigned char>(svg.begin(), svg.end()), no_clobber);
}

}  // namespace

void fit(const FitOptions& o, const nk::RunEnv&) {
  const GridFile g = read_grid(o.input);
  // Points below --min-buffer (the memorisation regime, where EV falls as B
  // grows and no law monotone in B applies) are neither fitted nor scored.
  const auto in_domain = [&](size_t i) { return g.points[i].U >= o.min_buffer; };
  std::vector<GridPoint> train;
  int64_t scored = 0;
  for (size_t i = 0; i < g.points.size(); ++i) {
    if (!in_domain(i)) continue;
    if (!g.heldout[i]) train.push_back(g.points[i]);
    else ++scored;
  }
  const int64_t G = static_cast<int64_t>(g.points.size());
  nk::h5::Writer out(o.output, kFitSchema, o.no_clobber);
  std::string summary;
  LawFit law;
  for (const LawKind kind : {g.spans_latents ? LawKind::law_latents : LawKind::law, LawKind::power_b, LawKind::power_ub}) {
    LawFit f;
    try {
      f = fit_law(kind, train);
    } catch (const nk::Error& e) {
      if (e.code() != nk::Exit::input) throw;
      throw nk::input_error(o.input, "/grid",
                            e.what() + (o.min_buffer > 0 ? fmt::format(" fitted points with U >= {:g} (--min-buffer)", o.min_buffer) : std::string()));
    }
    if (kind == LawKind::law || kind == LawKind::law_latents) law = f;
    const std::string group = "/fit/" + law_name(kind);
    std::vector<double> predicted(static_cast<size_t>(G)), errors;
    for (int64_t i = 0; i < G; ++i) {
      const double fvu = predict_fvu(kind, f.params, g.points[i]);
      predicted[i] = 1 - fvu;
      if (g.heldout[i] && in_domain(static_cast<size_t>(i))) errors.push_back(std::abs(fvu - g.points[i].fvu) / g.points[i].fvu);
    }
    out.write(group + "/predicted", predicted.data(), {G}, "G");
    const std::vector<std::string> names = law_parameters(kind);
    for (size_t p = 0; p < names.size(); ++p) out.attr(group, names[p], f.params[p]);
    const double err = median(errors);
    out.attr(group, "median_rel_err", err);
    out.attr(group, "huber_loss", f.loss);
    out.attr(group, "starts", f.starts);
    out.attr(group, "form", kind == LawKind::law_latents ? "latents" : "plain");
    summary += fmt::format("  {:<8} median rel. error {:.4f}", law_name(kind), err);
    if (kind == LawKind::law || kind == LawKind::law_latents)
      summary += fmt::format(" (E {:.4g}, A {:.4g}, alpha {:.4g}, R* {:.4g})", f.params[0], f.params[1], f.params[2], f.params[3]);
    summary += "\n";
  }
  out.attr("/", "dim", g.dim);
  out.attr("/", "points", G);
  out.attr("/", "fit_points", static_cast<int64_t>(train.size()));
  out.attr("/", "scored_points", scored);
  out.attr("/", "min_buffer", o.min_buffer);
  out.attr("/", "grid", o.input);
  out.commit();
  if (!o.plot.empty()) write_plot(o.plot, o.no_clobber, g, law);
  spdlog::info("fit: {} points ({} fitted, {} held out and scored, {} below --min-buffer)\n{}", G, train.size(), scored,
               G - static_cast<int64_t>(train.size()) - scored, summary);
}

}  // namespace sb
