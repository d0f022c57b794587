// plot.cpp - SVG line plots.
#include "nk/plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace nk::plot {

namespace {

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#17becf", "#bcbd22"};

// Tick choice. The axis runs from the tick at or below the data to the tick
// at or above it (both labelled), rather than from the data's ends with the
// ticks inside: the frame then starts and ends on a number that can be read
// off, decades on log axes, as in the benchmarks' own plots (summary.py). It
// costs some white space (data over [0.9873, 2.962] get the axis 0.5 .. 3.0);
// allowing at most 7 intervals keeps that below about a third of the axis.
constexpr int kMaxIntervals = 7;
constexpr double kLimit = 1e300;  // data beyond it are clamped for the tick choice (no overflow)

// 10^e, exact for |e| <= 22.
double pow10i(int e) {
  if (e < 0 || e > 22) return std::pow(10.0, e);
  double p = 1;
  for (int i = 0; i < e; ++i) p *= 10;
  return p;
}

// n x 10^e as the double nearest to that decimal number (one rounding for
// |e| <= 22): 3 x 10^-1 gives 0.3, not 0.30000000000000004.
double decimal(long long n, int e) {
  const auto v = static_cast<double>(n);
  return e >= 0 ? v * pow10i(e) : e >= -22 ? v / pow10i(-e) : v * std::pow(10.0, e);
}

int floor_div(int a, int b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

// Linear ticks over lo < hi, hi - lo not negligible against |lo|, |hi| (so
// lo / step stays well inside long long and exact in a double).
Ticks linear_ticks(double lo, double hi) {
  const int e = static_cast<int>(std::floor(std::log10((hi - lo) / kMaxIntervals)));
  static const int kMantissas[] = {1, 2, 5};
  int mantissa = 1, exponent = e;
  long long first = 0, last = 0;
  for (int k = 0;; ++k) {
    mantissa = kMantissas[k % 3];
    exponent = e + k / 3;
    const double step = decimal(mantissa, exponent);
    first = static_cast<long long>(std::floor(lo / step + 1e-9));
    last = static_cast<long long>(std::ceil(hi / step - 1e-9));
    if (last - first <= kMaxIntervals) break;
  }
  Ticks t;
  t.step = decimal(mantissa, exponent);
  for (long long i = first; i <= last; ++i) t.values.push_back(decimal(i * mantissa, exponent));
  t.lo = t.values.front();
  t.hi = t.values.back();
  return t;
}

// Log ticks over 0 < lo < hi.
Ticks log_ticks(double lo, double hi) {
  Ticks t;
  const int e0 = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  const int e1 = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
  if (e1 - e0 + 1 < 4) {
    // Under ~2 decades: the 1, 2 and 5 of each, from the mark at or below lo to the one at or above hi.
    std::vector<double> marks;
    for (int e = e0 - 1; e <= e1; ++e)
      for (int m : {1, 2, 5}) marks.push_back(decimal(m, e));
    size_t i0 = 0, i1 = marks.size() - 1;
    while (i0 + 1 < marks.size() && marks[i0 + 1] <= lo * (1 + 1e-9)) ++i0;
    while (i1 > 0 && marks[i1 - 1] >= hi * (1 - 1e-9)) --i1;
    t.values.assign(marks.begin() + static_cast<long>(i0), marks.begin() + static_cast<long>(i1) + 1);
    if (t.values.size() < 4) {
      // A factor of ~3 or less: evenly spaced ticks read better than 2 or 3 marks.
      Ticks linear = linear_ticks(lo, hi);
      if (linear.values.front() > 0) return linear;
    }
  } else {
    // Decades; every 2nd, 5th, 10th, ... where more than kMaxIntervals would show.
    int every = 1, first = e0, last = e1;
    for (int k = 0;; ++k) {
      every = (k % 3 == 0 ? 1 : k % 3 == 1 ? 2 : 5) * static_cast<int>(pow10i(k / 3));
      first = floor_div(e0, every) * every;
      last = -floor_div(-e1, every) * every;
      if ((last - first) / every <= kMaxIntervals) break;
    }
    for (int e = first; e <= last; e += every) t.values.push_back(decimal(1, e));
  }
  t.step = 0;
  t.lo = t.values.front();
  t.hi = t.values.back();
  return t;
}

// The decimals a step needs: 0.05 -> 2, 2 -> 0, 0.25 -> 2.
int decimals_of(double step) {
  for (int d = 0; d < 17; ++d) {
    const double scaled = std::abs(step) * pow10i(d);
    if (std::abs(scaled - std::round(scaled)) <= 1e-6 * scaled) return d;
  }
  return 17;
}

int exponent_of(double v) { return static_cast<int>(std::floor(std::log10(std::abs(v)) + 1e-9)); }

std::string format(const char* spec, int precision, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, spec, precision, v);
  std::string s = buf;
  // A value that rounds to zero is "0", not "-0" or "-0.00".
  if (s[0] == '-' && s.find_first_not_of("0.", 1) == std::string::npos) s.erase(0, 1);
  return s;
}

}  // namespace

Ticks nice_ticks(double lo, double hi, bool log_scale) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || (log_scale && !(lo > 0 && hi > 0))) {
    lo = log_scale ? 1 : 0;
    hi = log_scale ? 10 : 1;
  }
  if (lo > hi) std::swap(lo, hi);
  const double floor_value = log_scale ? 1 / kLimit : -kLimit;
  lo = std::clamp(lo, floor_value, kLimit);
  hi = std::clamp(hi, floor_value, kLimit);
  if (!(hi - lo > 1e-12 * std::max(std::abs(lo), std::abs(hi)))) {
    // A single value: a range around it (10% either side; a factor 2 on log axes).
    const double v = lo;
    if (log_scale) lo = v / 2, hi = v * 2;
    else if (v == 0) lo = -1, hi = 1;
    else lo = v - 0.1 * std::abs(v), hi = v + 0.1 * std::abs(v);
  }
  return log_scale ? log_ticks(lo, hi) : linear_ticks(lo, hi);
}

std::vector<std::string> tick_labels(const Ticks& ticks) {
  std::vector<std::string> labels;
  if (ticks.values.empty()) return labels;
  if (ticks.step > 0) {
    // Evenly spaced: one format for the whole axis.
    double biggest = 0;
    for (double v : ticks.values) biggest = std::max(biggest, std::abs(v));
    const int decimals = decimals_of(ticks.step);
    const int big = biggest > 0 ? exponent_of(biggest) : 0;
    const int fixed_length = std::max(1, big + 1) + (decimals > 0 ? decimals + 1 : 0);
    const int mantissa_decimals = std::max(0, big - exponent_of(ticks.step));
    const int scientific_length = 1 + (mantissa_decimals > 0 ? mantissa_decimals + 1 : 0) + 4;
    const bool fixed = fixed_length <= 7 || fixed_length <= scientific_length;
    for (double v : ticks.values)
      labels.push_back(fixed ? format("%.*f", decimals, v) : v == 0 ? "0" : format("%.*e", mantissa_decimals, v));
  } else {
    // Log marks (1, 2 or 5 x 10^k): plainly while all are, else all scientific.
    bool plain = true;
    for (double v : ticks.values) plain = plain && v >= 1e-4 && v <= 1e6;
    for (double v : ticks.values)
      labels.push_back(plain ? format("%.*f", std::max(0, -exponent_of(v)), v) : format("%.*e", 0, v));
  }
  return labels;
}

std::string line_plot_svg(const Axes& axes, const std::vector<Series>& series) {
  const double width = 780, height = 440, left = 70, right = 230, top = 40, bottom = 55;
  auto usable = [](double v, bool log) { return std::isfinite(v) && (!log || v > 0); };
  // The data ranges, over the points that can be drawn.
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const Series& s : series) {
    for (double x : s.x) if (usable(x, axes.log_x)) x0 = std::min(x0, x), x1 = std::max(x1, x);
    for (double y : s.y) if (usable(y, axes.log_y)) y0 = std::min(y0, y), y1 = std::max(y1, y);
    for (size_t i = 0; i < s.errors.size() && i < s.y.size(); ++i) {
      const double lo = s.y[i] - s.errors[i], hi = s.y[i] + s.errors[i];
      if (usable(s.errors[i], false) && usable(lo, axes.log_y)) y0 = std::min(y0, lo);
      if (usable(s.errors[i], false) && usable(hi, axes.log_y)) y1 = std::max(y1, hi);
    }
  }
  // A linear y axis starts at 0 unless the data sit far from it.
  if (!axes.log_y && y0 > 0 && y0 < 0.25 * y1) y0 = 0;
  if (!axes.log_y && y1 < 0 && y1 > 0.25 * y0) y1 = 0;
  // Each axis runs from its first tick to its last (see nice_ticks); no data: [0, 1] or [1, 10].
  const Ticks xt = nice_ticks(x0, x1, axes.log_x), yt = nice_ticks(y0, y1, axes.log_y);
  const std::vector<std::string> xlabels = tick_labels(xt), ylabels = tick_labels(yt);
  auto tx = [&](double v) { return axes.log_x ? std::log10(v) : v; };
  auto ty = [&](double v) { return axes.log_y ? std::log10(v) : v; };
  const double ax0 = tx(xt.lo), ax1 = tx(xt.hi), ay0 = ty(yt.lo), ay1 = ty(yt.hi);
  const double pw = width - left - right, ph = height - top - bottom;
  // Pixel positions; data beyond the clamp of nice_ticks (|v| > 1e300) land far outside, not at inf.
  auto px = [&](double v) { return std::clamp(left + (tx(v) - ax0) / (ax1 - ax0) * pw, -1e6, 1e6); };
  auto py = [&](double v) { return std::clamp(top + ph - (ty(v) - ay0) / (ay1 - ay0) * ph, -1e6, 1e6); };
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg << "<text x=\"" << width / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" << escape(axes.title) << "</text>\n";
  svg << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << pw << "\" height=\"" << ph
      << "\" fill=\"none\" stroke=\"black\"/>\n";
  for (size_t i = 0; i < xt.values.size(); ++i) {
    const double gx = px(xt.values[i]);
    svg << "<line x1=\"" << gx << "\" y1=\"" << top + ph << "\" x2=\"" << gx << "\" y2=\"" << top + ph + 5 << "\" stroke=\"black\"/>"
        << "<text x=\"" << gx << "\" y=\"" << top + ph + 18 << "\" text-anchor=\"middle\">" << xlabels[i] << "</text>\n";
  }
  for (size_t i = 0; i < yt.values.size(); ++i) {
    const double gy = py(yt.values[i]);
    svg << "<line x1=\"" << left - 5 << "\" y1=\"" << gy << "\" x2=\"" << left << "\" y2=\"" << gy << "\" stroke=\"black\"/>"
        << "<line x1=\"" << left << "\" y1=\"" << gy << "\" x2=\"" << left + pw << "\" y2=\"" << gy << "\" stroke=\"#eee\"/>"
        << "<text x=\"" << left - 8 << "\" y=\"" << gy + 4 << "\" text-anchor=\"end\">" << ylabels[i] << "</text>\n";
  }
  svg << "<text x=\"" << left + pw / 2 << "\" y=\"" << height - 12 << "\" text-anchor=\"middle\">" << escape(axes.xlabel) << "</text>\n";
  svg << "<text transform=\"translate(16," << top + ph / 2 << ") rotate(-90)\" text-anchor=\"middle\">" << escape(axes.ylabel) << "</text>\n";
  for (size_t k = 0; k < series.size(); ++k) {
    const Series& s = series[k];
    const char* colour = kColours[k % (sizeof kColours / sizeof *kColours)];
    const size_t n = std::min(s.x.size(), s.y.size());
    auto drawable = [&](size_t i) { return usable(s.x[i], axes.log_x) && usable(s.y[i], axes.log_y); };
    // One polyline per run of drawable points: a NaN or infinite value is a gap, not a corner.
    for (size_t i = 0; i < n;) {
      if (!drawable(i)) {
        ++i;
        continue;
      }
      svg << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"1.6\""
          << (s.dashed ? " stroke-dasharray=\"6,4\"" : "") << " points=\"";
      for (; i < n && drawable(i); ++i) {
        svg << px(s.x[i]) << "," << py(s.y[i]) << " ";
        if (s.steps && i + 1 < s.x.size() && usable(s.x[i + 1], axes.log_x)) svg << px(s.x[i + 1]) << "," << py(s.y[i]) << " ";
      }
      svg << "\"/>\n";
    }
    if (s.markers)
      for (size_t i = 0; i < n; ++i)
        if (drawable(i)) svg << "<circle cx=\"" << px(s.x[i]) << "\" cy=\"" << py(s.y[i]) << "\" r=\"3.5\" fill=\"" << colour << "\"/>\n";
    for (size_t i = 0; i < n && i < s.errors.size(); ++i) {
      if (!drawable(i) || !std::isfinite(s.errors[i])) continue;
      // On a log axis a bar reaching zero or below is cut at the plot's bottom.
      const double lo = s.y[i] - s.errors[i], hi = s.y[i] + s.errors[i];
      const double plo = usable(lo, axes.log_y) ? py(lo) : top + ph, phi = py(hi), x = px(s.x[i]);
      svg << "<line x1=\"" << x << "\" y1=\"" << plo << "\" x2=\"" << x << "\" y2=\"" << phi << "\" stroke=\"" << colour
          << "\" stroke-width=\"1.2\"/>\n";
    }
    const double ly = top + 14 + 18.0 * static_cast<double>(k);
    svg << "<line x1=\"" << left + pw + 12 << "\" y1=\"" << ly << "\" x2=\"" << left + pw + 36 << "\" y2=\"" << ly
        << "\" stroke=\"" << colour << "\" stroke-width=\"2\"" << (s.dashed ? " stroke-dasharray=\"6,4\"" : "")
        << "/><text x=\"" << left + pw + 42 << "\" y=\"" << ly + 4 << "\">"
        << escape(s.name) << "</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace nk::plot
