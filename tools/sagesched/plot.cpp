// plot.cpp - SVG figures of simulations: TTLT CDFs, and mean TTLT against
// the trace's load with one line per policy.
#include <algorithm>
#include <cmath>
#include <map>

#include "nk/atomic_file.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/plot.hpp"
#include "sagesched/sagesched.hpp"

namespace sage {

void plot_verb(const PlotOptions& o) {
  struct Run {
    std::string policy, label;
    double load = NAN, mean_ttlt = 0;
    std::vector<double> ttlt;
  };
  std::vector<Run> runs;
  for (const std::string& path : o.inputs) {
    const nk::h5::File in = nk::h5::File::open(path);
    in.require_schema("sagesched.sim/");
    Run r;
    r.policy = in.attr_string("/", "policy").value_or("?");
    r.load = in.attr_number("/", "trace_load").value_or(NAN);
    r.mean_ttlt = in.attr_number("/", "mean_ttlt").value_or(NAN);
    const auto ttlt = in.read<double>("/per_request/ttlt", 1, "N");
    nk::h5::require_finite(path, "/per_request/ttlt", ttlt);
    r.ttlt = ttlt.data;
    r.label = r.policy + (std::isfinite(r.load) ? " (load " + nk::plot::tick_labels({{r.load}, r.load, r.load, 0})[0] + ")" : "");
    runs.push_back(std::move(r));
  }
  std::vector<nk::plot::Series> series;
  nk::plot::Axes axes;
  if (o.kind == "cdf") {
    axes = {o.title.empty() ? "Time to last token" : o.title, "TTLT (s)", "fraction of requests", true, false};
    for (Run& r : runs) {
      std::sort(r.ttlt.begin(), r.ttlt.end());
      nk::plot::Series s;
      s.name = r.label;
      // At most 400 points: the CDF at evenly spaced ranks.
      const size_t n = r.ttlt.size(), points = std::min<size_t>(n, 400);
      for (size_t k = 0; k < points; ++k) {
        const size_t i = (k * (n - 1)) / std::max<size_t>(points - 1, 1);
        s.x.push_back(std::max(r.ttlt[i], 1e-6));
        s.y.push_back(static_cast<double>(i + 1) / static_cast<double>(n));
      }
      series.push_back(std::move(s));
    }
  } else {
    axes = {o.title.empty() ? "Mean time to last token against load" : o.title, "load", "mean TTLT (s)", false, true};
    std::map<std::string, std::vector<std::pair<double, double>>> by_policy;
    for (const Run& r : runs) {
      if (!std::isfinite(r.load)) {
        throw nk::input_error(o.inputs[static_cast<size_t>(&r - runs.data())], "/",
                              "no trace_load attribute (simulate a trace made by sagesched trace)");
      }
      by_policy[r.policy].emplace_back(r.load, r.mean_ttlt);
    }
    for (auto& [policy, points] : by_policy) {
      std::sort(points.begin(), points.end());
      nk::plot::Series s;
      s.name = policy;
      s.markers = true;
      for (const auto& [x, y] : points) s.x.push_back(x), s.y.push_back(y);
      series.push_back(std::move(s));
    }
  }
  const std::string svg = nk::plot::line_plot_svg(axes, series);
  nk::write_output_bytes(o.output, std::vector<unsigned char>(svg.begin(), svg.end()), o.no_clobber);
  spdlog::info("wrote {} ({} line(s))", o.output, series.size());
}

}  // namespace sage
