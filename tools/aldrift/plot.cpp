// plot.cpp - the plot verb: SVG figures of exact runs (tv_law and coverage
// per stage, one pair of lines per input file).
#include <cmath>

#include "aldrift/aldrift.hpp"
#include "nk/atomic_file.hpp"
#include "nk/error.hpp"
#include "nk/log.hpp"
#include "nk/plot.hpp"

namespace ald {

void plot(const PlotOptions& o, const nk::RunEnv&) {
  std::vector<nk::plot::Series> series;
  std::vector<std::string> inputs{o.input};
  inputs.insert(inputs.end(), o.more.begin(), o.more.end());
  for (const std::string& path : inputs) {
    const nk::h5::File in = nk::h5::File::open(path);
    in.require_schema(kExactSchema);
    const std::string method = in.attr_string("/", "method").value_or("?");
    const std::string learner = in.attr_string("/", "learner").value_or("none");
    const std::string label = learner == "none" ? method : method + " (" + learner + ")";
    nk::plot::Series tv{label + ": tv_law", {}, {}}, cov{label + ": coverage M", {}, {}};
    tv.markers = cov.markers = true;
    cov.dashed = true;
    for (int i = 0;; ++i) {
      const std::string group = stage_group(i);
      const auto t = in.attr_number(group, "tv_law");
      if (!t) break;
      tv.x.push_back(i + 1);
      tv.y.push_back(*t);
      cov.x.push_back(i + 1);
      cov.y.push_back(in.attr_number(group, "coverage").value_or(NAN));
    }
    if (tv.x.empty()) {  // SIR: one law, no stages
      const auto t = in.attr_number("/", "tv_law");
      if (!t || !std::isfinite(*t)) throw nk::input_error(path, "/", "no tv_law attribute (an exact output was expected)");
      tv.x = {1};
      tv.y = {*t};
      series.push_back(tv);
      continue;
    }
    series.push_back(tv);
    series.push_back(cov);
  }
  const std::string svg = nk::plot::line_plot_svg(
      {"Independence-MH correction: distance to pi_T and coverage per stage", "stage", "tv_law  /  coverage M", false, true},
      series);
  nk::write_output_bytes(o.output, std::vector<unsigned char>(svg.begin(), svg.end()), o.no_clobber);
  spdlog::info("plot: {} file(s) -> {}", inputs.size(), nk::display_name(o.output, true));
}

}  // namespace ald
