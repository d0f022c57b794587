// plot.hpp - small self-contained SVG line plots (no plotting library needed).
#pragma once
#include <string>
#include <vector>

namespace nk::plot {

struct Series {
  std::string name;
  std::vector<double> x, y;
  bool steps = false;  ///< y[i] holds on [x[i], x[i+1]) (x has one more entry than y)
  bool markers = false;  ///< a dot on every point (for sparse measurements)
  bool dashed = false;
};

struct Axes {
  std::string title, xlabel, ylabel;
  bool log_x = false, log_y = false;
};

/// An SVG document with one line per series, axes with ticks, and a legend.
std::string line_plot_svg(const Axes& axes, const std::vector<Series>& series);

}  // namespace nk::plot
