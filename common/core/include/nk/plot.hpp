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
  /// Error bars: y +- errors[i] as a vertical whisker (empty: none; NaN: none at i).
  std::vector<double> errors = {};
};

struct Axes {
  std::string title, xlabel, ylabel;
  bool log_x = false, log_y = false;
};

/// The ticks of one axis and the range it spans (data units, not log10).
struct Ticks {
  std::vector<double> values;  ///< increasing; the decimal numbers they stand for, correctly rounded
  double lo = 0, hi = 1;       ///< the axis range: the outermost ticks, which enclose the data
  /// The spacing of evenly spaced ticks (1, 2 or 5 x 10^k; every value a
  /// multiple of it), or 0 where the ticks are log marks (decades, or the
  /// 1, 2 and 5 of each decade).
  double step = 0;
};

/// Ticks at nice numbers covering [lo, hi] (either order).
/// Linear: the smallest step of 1, 2 or 5 x 10^k that needs at most 7
/// intervals (so 4 to 8 ticks), the axis widened to the ticks just outside the data.
/// Log (lo > 0): decades 10^k enclosing the data, every 2nd, 5th, 10th, ...
/// decade where more than 7 would be needed; where fewer than 4 decades
/// would show (the data span under ~2 decades), the 1, 2 and 5 of each
/// decade; where even those give fewer than 4 ticks (a factor of ~3 or less),
/// linear 1-2-5 steps as on a linear axis.
/// A range of (nearly) zero width is widened around its value; NaN or
/// infinite ends, or ends <= 0 on a log axis, give [0, 1] ([1, 10] for log).
Ticks nice_ticks(double lo, double hi, bool log_scale);

/// The labels of one axis's ticks, without float noise ("0.3", not
/// "0.30000000000000004"). Evenly spaced ticks all get the decimals the step
/// needs (0.5, 1.0, 1.5), or, where fixed notation would be longer than
/// 7 characters and than scientific, scientific with one mantissa width
/// (2.0e+08, 1.0e+09; 0 stays "0"). Log marks are written plainly (0.01, 0.2,
/// 50, 1000) while all lie in [1e-4, 1e6], otherwise all as 1e-05, 2e+07.
std::vector<std::string> tick_labels(const Ticks& ticks);

/// An SVG document with one line per series, axes with ticks at nice
/// numbers (nice_ticks, tick_labels), and a legend. NaN, infinite and (on a
/// log axis) non-positive values are left out of lines and ranges.
std::string line_plot_svg(const Axes& axes, const std::vector<Series>& series);

}  // namespace nk::plot
