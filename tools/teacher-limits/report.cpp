// report.cpp - the report verb: the laws' slopes fitted on a theory file and
// on hmc and adam outputs beside it (a table on stdout, /fit/* in -o), and
// the figures as SVG.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <optional>

#include "nk/atomic_file.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/plot.hpp"
#include "nk/table.hpp"
#include "teacher-limits/teacher_limits.hpp"

namespace tl {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

struct TheoryFile {
  std::vector<double> n, eps_bo, eps_kc, onset_n;
  std::vector<int64_t> k_c, widths;
  Matrix overlap, student_eps;  // [m, k], [w, m]
  int64_t k = 0, d = 0;
  std::optional<double> beta;
};

std::vector<double> column(const nk::h5::File& f, const std::string& ds) {
  f.require(ds);
  return f.read<double>(ds).data;
}

TheoryFile read_theory(const nk::h5::File& f) {
  TheoryFile t;
  t.n = column(f, "/theory/n");
  t.eps_bo = column(f, "/theory/eps_bo");
  t.eps_kc = column(f, "/theory/eps_kc");
  t.onset_n = column(f, "/theory/onset_n");
  f.require("/theory/k_c");
  t.k_c = f.read<int64_t>("/theory/k_c").data;
  t.overlap = f.read_matrix<double>("/theory/overlap");
  const size_t m = t.n.size();
  if (m == 0 || t.eps_bo.size() != m || t.eps_kc.size() != m || t.k_c.size() != m ||
      static_cast<size_t>(t.overlap.rows()) != m)
    throw nk::input_error(f.path(), "/theory", "needs n, eps_bo, eps_kc, k_c and overlap rows of one length m > 0");
  t.k = t.overlap.cols();
  if (static_cast<int64_t>(t.onset_n.size()) != t.k)
    throw nk::input_error(f.path(), "/theory/onset_n",
                          "has " + std::to_string(t.onset_n.size()) + " values for k = " + std::to_string(t.k));
  if (f.has("/theory/student_eps") && f.has("/theory/widths")) {
    t.student_eps = f.read_matrix<double>("/theory/student_eps");
    t.widths = f.read<int64_t>("/theory/widths").data;
  }
  t.d = static_cast<int64_t>(f.attr_number("/", "d").value_or(0));
  t.beta = f.attr_number("/", "beta");
  for (size_t j = 0; j < m; ++j)
    if (!(t.n[j] > 0) || (j > 0 && !(t.n[j] > t.n[j - 1])))
      throw nk::input_error(f.path(), "/theory/n", "must be positive and increasing (index " + std::to_string(j) + ")");
  return t;
}

// Least-squares slope of log y on log x over the finite positive points.
struct Slope {
  double value = kNaN, lo = kNaN, hi = kNaN;
  int64_t points = 0;
};
Slope log_slope(const std::vector<double>& x, const std::vector<double>& y) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  Slope s;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!(x[i] > 0) || !(y[i] > 0) || !std::isfinite(x[i]) || !std::isfinite(y[i])) continue;
    const double lx = std::log(x[i]), ly = std::log(y[i]);
    sx += lx, sy += ly, sxx += lx * lx, sxy += lx * ly;
    s.lo = s.points ? std::min(s.lo, x[i]) : x[i];
    s.hi = s.points ? std::max(s.hi, x[i]) : x[i];
    ++s.points;
  }
  const double N = static_cast<double>(s.points), den = N * sxx - sx * sx;
  if (s.points >= 3 && den > 0) s.value = (N * sxy - sx * sy) / den;
  return s;
}

// Linear interpolation of log y in log x (NaN outside [x0, x_end]).
double log_interp(const std::vector<double>& x, const std::vector<double>& y, double at) {
  if (x.empty() || at < x.front() * (1 - 1e-12) || at > x.back() * (1 + 1e-12)) return kNaN;
  const size_t j = std::min<size_t>(std::upper_bound(x.begin(), x.end(), at) - x.begin(), x.size() - 1);
  if (j == 0) return y[0];
  const double t = (std::log(at) - std::log(x[j - 1])) / (std::log(x[j]) - std::log(x[j - 1]));
  return std::exp((1 - t) * std::log(y[j - 1]) + t * std::log(y[j]));
}

struct Fits {
  std::vector<std::string> name;
  std::vector<double> value, expected, lo, hi;
  std::vector<int64_t> points;
  void add(const std::string& what, double v, double e, double l, double h, int64_t p) {
    name.push_back(what), value.push_back(v), expected.push_back(e), lo.push_back(l), hi.push_back(h),
        points.push_back(p);
  }
  void add(const std::string& what, const Slope& s, double e) { add(what, s.value, e, s.lo, s.hi, s.points); }
};

// The n where each feature's overlap (rows over increasing n) first reaches 1/2, by log interpolation.
std::vector<double> overlap_onsets(const std::vector<double>& n, const Matrix& q) {
  std::vector<double> onset(static_cast<size_t>(q.cols()), kNaN);
  for (int64_t i = 0; i < q.cols(); ++i)
    for (size_t j = 1; j < n.size(); ++j)
      if (q(j - 1, i) < 0.5 && q(j, i) >= 0.5) {
        const double t = (0.5 - q(j - 1, i)) / (q(j, i) - q(j - 1, i));
        onset[i] = std::exp((1 - t) * std::log(n[j - 1]) + t * std::log(n[j]));
        break;
      }
  return onset;
}

// Per distinct n (sorted): the mean of the rows with that n.
struct ByN {
  std::vector<double> n, mean, se;
  Matrix rows;  // [distinct n, cols] means of a per-item matrix
};
ByN group_by_n(const std::vector<int64_t>& n, const std::vector<double>& y, const Matrix* per_item = nullptr) {
  std::map<int64_t, std::vector<size_t>> at;
  for (size_t i = 0; i < n.size(); ++i) at[n[i]].push_back(i);
  ByN g;
  if (per_item) g.rows.resize(static_cast<int64_t>(at.size()), per_item->cols());
  int64_t r = 0;
  for (const auto& [value, idx] : at) {
    double s = 0, ss = 0;
    for (size_t i : idx) s += y[i];
    const double mean = s / static_cast<double>(idx.size());
    for (size_t i : idx) ss += (y[i] - mean) * (y[i] - mean);
    g.n.push_back(static_cast<double>(value));
    g.mean.push_back(mean);
    g.se.push_back(
        idx.size() > 1 ? std::sqrt(ss / static_cast<double>(idx.size() - 1) / static_cast<double>(idx.size())) : kNaN);
    if (per_item) {
      g.rows.row(r).setZero();
      for (size_t i : idx) g.rows.row(r) += per_item->row(static_cast<int64_t>(i)) / static_cast<double>(idx.size());
    }
    ++r;
  }
  return g;
}

nk::plot::Series line(std::string name, std::vector<double> x, std::vector<double> y) {
  nk::plot::Series s;
  s.name = std::move(name);
  s.x = std::move(x);
  s.y = std::move(y);
  return s;
}

}  // namespace

void report(const ReportOptions& o, const nk::RunEnv&) {
  const nk::h5::File tf = nk::h5::File::open(o.input);
  const TheoryFile th = read_theory(tf);
  const int64_t k = th.k;
  Fits fits;
  const double law = th.beta ? 1 / (2 * *th.beta) - 1 : kNaN, onset_law = th.beta ? 2 * *th.beta : kNaN;

  // Theory: the feature-learning range min(8, k/8) <= k_c <= k/4, refinement past 10x the last onset.
  const int64_t kc_lo = std::clamp<int64_t>(k / 8, 1, 8), kc_hi = std::max<int64_t>(kc_lo + 1, k / 4);
  std::vector<double> fl_n, fl_e, rf_n, rf_e, ratio;
  double last_onset = -1;
  for (double x : th.onset_n)
    if (std::isfinite(x)) last_onset = std::max(last_onset, x);
  for (size_t j = 0; j < th.n.size(); ++j) {
    if (th.k_c[j] >= kc_lo && th.k_c[j] <= kc_hi) fl_n.push_back(th.n[j]), fl_e.push_back(th.eps_bo[j]);
    if (last_onset > 0 && th.n[j] >= 10 * last_onset) rf_n.push_back(th.n[j]), rf_e.push_back(th.eps_bo[j]);
    if (th.k_c[j] >= 1) ratio.push_back(th.eps_bo[j] / th.eps_kc[j]);
  }
  const double fl_lo = fl_n.empty() ? kNaN : fl_n.front(), fl_hi = fl_n.empty() ? kNaN : fl_n.back();
  fits.add("theory feature-learning slope", log_slope(fl_n, fl_e), law);
  fits.add("theory refinement slope", log_slope(rf_n, rf_e), -1);
  std::vector<double> index, onsets;
  for (int64_t i = 1; i < k; ++i)
    if (i + 1 <= std::max<int64_t>(2, k / 4) && std::isfinite(th.onset_n[i]))
      index.push_back(static_cast<double>(i + 1)), onsets.push_back(th.onset_n[i]);
  fits.add("theory onset slope", log_slope(index, onsets), onset_law);
  if (!ratio.empty())
    fits.add("theory eps_bo/eps_kc min", *std::min_element(ratio.begin(), ratio.end()), 1, kNaN, kNaN,
             static_cast<int64_t>(ratio.size())),
        fits.add("theory eps_bo/eps_kc max", *std::max_element(ratio.begin(), ratio.end()), 1, kNaN, kNaN,
                 static_cast<int64_t>(ratio.size()));

  std::vector<nk::plot::Series> eps_series, kc_series, onset_series, width_series;
  {
    nk::plot::Series bo = line("eps_BO (theory)", th.n, th.eps_bo);
    std::vector<double> kcdn(th.n.size());
    for (size_t j = 0; j < th.n.size(); ++j) kcdn[j] = th.k_c[j] >= 1 && th.d > 0 ? th.k_c[j] * th.d / th.n[j] : kNaN;
    nk::plot::Series pred = line("k_c d / n", th.n, kcdn);
    pred.dashed = true;
    eps_series = {bo, pred};
    std::vector<double> kc(th.k_c.begin(), th.k_c.end());
    kc_series.push_back(line("k_c (theory)", th.n, kc));
    std::vector<double> all_i;
    for (int64_t i = 1; i <= k; ++i) all_i.push_back(static_cast<double>(i));
    onset_series.push_back(line("onset n_i (theory)", all_i, th.onset_n));
  }

  // HMC and Adam files.
  for (const std::string& path : o.results) {
    const nk::h5::File f = nk::h5::File::open(path);
    if (f.has("/hmc/eps_bo")) {
      const std::vector<int64_t> n = f.read<int64_t>("/hmc/n").data;
      const std::vector<double> e = column(f, "/hmc/eps_bo"), g = column(f, "/hmc/eps_gibbs"),
                                se = column(f, "/hmc/eps_bo_se");
      const Matrix q = f.read_matrix<double>("/hmc/overlap");
      if (e.size() != n.size() || g.size() != n.size() || static_cast<size_t>(q.rows()) != n.size() || q.cols() != k)
        throw nk::input_error(
            path, "/hmc",
            "needs n, eps_bo, eps_gibbs and overlap [items, k] with k = " + std::to_string(k) + " as in the theory");
      const ByN bo = group_by_n(n, e, &q), gibbs = group_by_n(n, g);
      std::vector<double> ratio_gb, ratio_th, in_n, in_e;
      for (size_t j = 0; j < bo.n.size(); ++j) {
        ratio_gb.push_back(gibbs.mean[j] / bo.mean[j]);
        ratio_th.push_back(bo.mean[j] / log_interp(th.n, th.eps_bo, bo.n[j]));
        if (bo.n[j] >= fl_lo && bo.n[j] <= fl_hi) in_n.push_back(bo.n[j]), in_e.push_back(bo.mean[j]);
      }
      fits.add("hmc slope (theory's feature-learning range)", log_slope(in_n, in_e), law);
      const auto [gmin, gmax] = std::minmax_element(ratio_gb.begin(), ratio_gb.end());
      fits.add("hmc Gibbs/BO min", *gmin, 2, bo.n.front(), bo.n.back(), static_cast<int64_t>(ratio_gb.size()));
      fits.add("hmc Gibbs/BO max", *gmax, 2, bo.n.front(), bo.n.back(), static_cast<int64_t>(ratio_gb.size()));
      double rmin = kNaN, rmax = kNaN;
      for (double r : ratio_th)
        if (std::isfinite(r))
          rmin = std::isnan(rmin) ? r : std::min(rmin, r), rmax = std::isnan(rmax) ? r : std::max(rmax, r);
      fits.add("hmc eps_bo/theory min", rmin, 1, bo.n.front(), bo.n.back(), static_cast<int64_t>(ratio_th.size()));
      fits.add("hmc eps_bo/theory max", rmax, 1, bo.n.front(), bo.n.back(), static_cast<int64_t>(ratio_th.size()));
      const std::vector<double> hon = overlap_onsets(bo.n, bo.rows);
      std::vector<double> hi_idx, hi_on;
      for (int64_t i = 1; i < k; ++i)
        if (std::isfinite(hon[i])) hi_idx.push_back(static_cast<double>(i + 1)), hi_on.push_back(hon[i]);
      fits.add("hmc onset slope", log_slope(hi_idx, hi_on), onset_law);
      nk::plot::Series s = line("HMC eps_BO (" + f.attr_string("/", "init").value_or("?") + ")", bo.n, bo.mean);
      s.markers = true;
      // Error bars: the spread across seeds, or the sampler's own SE for one seed.
      const ByN sampler_se = group_by_n(n, se);
      s.errors = bo.se;
      for (size_t j = 0; j < s.errors.size(); ++j)
        if (!std::isfinite(s.errors[j])) s.errors[j] = sampler_se.mean[j];
      eps_series.push_back(s);
      std::vector<double> kc_h(bo.n.size());
      for (size_t j = 0; j < bo.n.size(); ++j) kc_h[j] = static_cast<double>((bo.rows.row(j).array() >= 0.5).count());
      nk::plot::Series ks = line("k_c (HMC)", bo.n, kc_h);
      ks.markers = true;
      kc_series.push_back(ks);
      std::vector<double> all_i;
      for (int64_t i = 1; i <= k; ++i) all_i.push_back(static_cast<double>(i));
      nk::plot::Series os = line("onset n_i (HMC)", all_i, hon);
      os.markers = true;
      onset_series.push_back(os);
    } else if (f.has("/adam/eps")) {
      const std::vector<int64_t> n = f.read<int64_t>("/adam/n").data;
      const Matrix e = f.read_matrix<double>("/adam/eps");
      const std::vector<std::string> tokens = f.read_strings("/adam/widths");
      const std::vector<double> ridge = f.has("/adam/ridge_eps") ? column(f, "/adam/ridge_eps") : std::vector<double>{};
      if (static_cast<size_t>(e.rows()) != n.size() || static_cast<size_t>(e.cols()) != tokens.size() ||
          (!ridge.empty() && ridge.size() != n.size()))
        throw nk::input_error(path, "/adam/eps", "needs [items, widths] matching /adam/n and /adam/widths");
      // The restarts' mean prediction (files of earlier versions lack it).
      Matrix ens;
      if (f.has("/adam/eps_ensemble")) {
        ens = f.read_matrix<double>("/adam/eps_ensemble");
        if (ens.rows() != e.rows() || ens.cols() != e.cols())
          throw nk::input_error(path, "/adam/eps_ensemble", "needs the shape of /adam/eps");
      }
      for (size_t w = 0; w < tokens.size(); ++w) {
        std::vector<double> col(n.size());
        for (size_t i = 0; i < n.size(); ++i) col[i] = e(static_cast<int64_t>(i), static_cast<int64_t>(w));
        const ByN g = group_by_n(n, col);
        std::vector<double> in_n, in_e, gap, ens_gap;
        std::optional<ByN> ge;
        if (ens.size() > 0) {
          std::vector<double> ecol(n.size());
          for (size_t i = 0; i < n.size(); ++i) ecol[i] = ens(static_cast<int64_t>(i), static_cast<int64_t>(w));
          ge = group_by_n(n, ecol);
        }
        for (size_t j = 0; j < g.n.size(); ++j) {
          if (!(g.n[j] >= fl_lo && g.n[j] <= fl_hi)) continue;
          in_n.push_back(g.n[j]), in_e.push_back(g.mean[j]);
          gap.push_back(g.mean[j] / log_interp(th.n, th.eps_bo, g.n[j]));
          if (ge) ens_gap.push_back(ge->mean[j] / log_interp(th.n, th.eps_bo, g.n[j]));
        }
        fits.add("adam " + tokens[w] + " slope", log_slope(in_n, in_e), law);
        if (!gap.empty())
          fits.add("adam " + tokens[w] + " eps/eps_bo max", *std::max_element(gap.begin(), gap.end()), 1, in_n.front(),
                   in_n.back(), static_cast<int64_t>(gap.size()));
        if (!ens_gap.empty())
          fits.add("adam " + tokens[w] + " restarts' mean eps/eps_bo max", *std::max_element(ens_gap.begin(), ens_gap.end()),
                   kNaN, in_n.front(), in_n.back(), static_cast<int64_t>(ens_gap.size()));
        nk::plot::Series s = line("Adam width " + tokens[w], g.n, g.mean);
        s.markers = true;
        eps_series.push_back(s);
      }
      if (!ridge.empty()) {
        const ByN r = group_by_n(n, ridge);
        std::vector<double> in_n, in_e;
        for (size_t j = 0; j < r.n.size(); ++j)
          if (r.n[j] >= fl_lo && r.n[j] <= fl_hi) in_n.push_back(r.n[j]), in_e.push_back(r.mean[j]);
        fits.add("random-features ridge slope", log_slope(in_n, in_e), kNaN);
        nk::plot::Series rs = line("random-features ridge", r.n, r.mean);
        rs.dashed = true;
        rs.markers = true;
        eps_series.push_back(rs);
      }
    } else {
      throw nk::input_error(path, "",
                            "holds neither /hmc/eps_bo nor /adam/eps (give hmc or adam outputs after the theory file)");
    }
  }

  // The figures first, then every output committed together: a failure leaves none of them.
  std::vector<std::pair<std::string, std::string>> figures;
  if (!o.svg.empty()) {
    figures.emplace_back(o.svg + "-eps.svg",
                         nk::plot::line_plot_svg({"Generalisation error", "n", "eps", true, true}, eps_series));
    std::vector<nk::plot::Series> q_series;
    for (int64_t i = 0; i < std::min<int64_t>(k, 12); ++i) {
      std::vector<double> col(th.n.size());
      for (size_t j = 0; j < th.n.size(); ++j) col[j] = th.overlap(static_cast<int64_t>(j), i);
      q_series.push_back(line("q_" + std::to_string(i + 1), th.n, col));
    }
    figures.emplace_back(
        o.svg + "-overlap.svg",
        nk::plot::line_plot_svg({"Feature overlaps (theory, first 12)", "n", "q_i", true, false}, q_series));
    figures.emplace_back(o.svg + "-kc.svg",
                         nk::plot::line_plot_svg({"Effective width", "n", "k_c", true, false}, kc_series));
    figures.emplace_back(o.svg + "-onset.svg",
                         nk::plot::line_plot_svg({"Feature onsets", "feature i", "n_i", true, true}, onset_series));
    if (!th.widths.empty() && th.student_eps.rows() == static_cast<int64_t>(th.widths.size())) {
      // Error against width at four n spread over the theory's range.
      for (int s = 0; s < 4; ++s) {
        const size_t j = (th.n.size() - 1) * static_cast<size_t>(s) / 3;
        std::vector<double> wx, ey;
        for (size_t w = 0; w < th.widths.size(); ++w)
          wx.push_back(static_cast<double>(th.widths[w])),
              ey.push_back(th.student_eps(static_cast<int64_t>(w), static_cast<int64_t>(j)));
        char label[64];
        std::snprintf(label, sizeof label, "n = %.3g", th.n[j]);
        width_series.push_back(line(label, wx, ey));
      }
      figures.emplace_back(o.svg + "-width.svg",
                           nk::plot::line_plot_svg(
                               {"Width-limited student (theory)", "student width", "eps", true, true}, width_series));
    }
  }
  std::optional<nk::h5::Writer> out;
  if (!o.output.empty()) {
    out.emplace(o.output, kReportSchema, o.no_clobber);
    const int64_t F = static_cast<int64_t>(fits.name.size());
    out->write_strings("/fit/name", fits.name, "fit");
    out->allow_nonfinite("/fit/value");  // NaN: a fit without enough points
    out->write("/fit/value", fits.value.data(), {F}, "fit");
    out->allow_nonfinite("/fit/law");  // NaN: a law without its exponent
    out->write("/fit/law", fits.expected.data(), {F}, "fit");
    out->allow_nonfinite("/fit/n_from");  // NaN: no points for that fit
    out->allow_nonfinite("/fit/n_to");
    out->write("/fit/n_from", fits.lo.data(), {F}, "fit");
    out->write("/fit/n_to", fits.hi.data(), {F}, "fit");
    out->write("/fit/points", fits.points.data(), {F}, "fit");
  }
  std::vector<std::unique_ptr<nk::AtomicFile>> files;
  for (const auto& [path, svg] : figures) {
    files.push_back(std::make_unique<nk::AtomicFile>(path, o.no_clobber));
    std::ofstream f(files.back()->temp_path(), std::ios::binary);
    f << svg;
    if (!f.flush()) throw nk::io_error(path, "cannot write the figure");
  }
  if (out) out->commit();
  for (auto& f : files) f->commit();

  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < fits.name.size(); ++i)
    rows.push_back({fits.name[i], nk::cell(fits.value[i], "%.4g"), nk::cell(fits.expected[i], "%.4g"),
                    nk::cell(fits.lo[i], "%.4g"), nk::cell(fits.hi[i], "%.4g"),
                    nk::cell(static_cast<long long>(fits.points[i]))});
  nk::Table::print(o.output == "-" ? stderr : stdout, {"quantity", "value", "law", "n_from", "n_to", "points"}, rows,
                   nk::Table::Layout::automatic, {0});
  spdlog::info("report: {} fits from {} and {} result file(s)", fits.name.size(), o.input, o.results.size());
}

}  // namespace tl
