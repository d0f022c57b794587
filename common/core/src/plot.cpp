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

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#17becf", "#bcbd22"};

}  // namespace

std::string line_plot_svg(const Axes& axes, const std::vector<Series>& series) {
  const double width = 780, height = 440, left = 70, right = 230, top = 40, bottom = 55;
  auto tx = [&](double v) { return axes.log_x ? std::log10(v) : v; };
  auto ty = [&](double v) { return axes.log_y ? std::log10(v) : v; };
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const Series& s : series) {
    for (double x : s.x) if (std::isfinite(tx(x))) x0 = std::min(x0, tx(x)), x1 = std::max(x1, tx(x));
    for (double y : s.y) if (std::isfinite(ty(y))) y0 = std::min(y0, ty(y)), y1 = std::max(y1, ty(y));
  }
  if (!std::isfinite(x0)) x0 = 0, x1 = 1;
  if (!std::isfinite(y0)) y0 = 0, y1 = 1;
  if (!axes.log_y && y0 > 0 && y0 < 0.25 * y1) y0 = 0;  // start at 0 unless the data sit far above it
  if (!axes.log_y && y0 > 0) y0 -= 0.05 * (y1 - y0);
  if (x1 <= x0) x1 = x0 + 1;
  if (y1 <= y0) y1 = y0 + 1;
  y1 += 0.05 * (y1 - y0);
  const double pw = width - left - right, ph = height - top - bottom;
  auto px = [&](double v) { return left + (tx(v) - x0) / (x1 - x0) * pw; };
  auto py = [&](double v) { return top + ph - (ty(v) - y0) / (y1 - y0) * ph; };
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg << "<text x=\"" << width / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" << escape(axes.title) << "</text>\n";
  svg << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << pw << "\" height=\"" << ph
      << "\" fill=\"none\" stroke=\"black\"/>\n";
  for (int i = 0; i <= 5; ++i) {
    const double fx = x0 + (x1 - x0) * i / 5, fy = y0 + (y1 - y0) * i / 5;
    const double vx = axes.log_x ? std::pow(10, fx) : fx, vy = axes.log_y ? std::pow(10, fy) : fy;
    const double gx = left + pw * i / 5, gy = top + ph - ph * i / 5;
    svg << "<line x1=\"" << gx << "\" y1=\"" << top + ph << "\" x2=\"" << gx << "\" y2=\"" << top + ph + 5 << "\" stroke=\"black\"/>"
        << "<text x=\"" << gx << "\" y=\"" << top + ph + 18 << "\" text-anchor=\"middle\">" << number(vx) << "</text>\n";
    svg << "<line x1=\"" << left - 5 << "\" y1=\"" << gy << "\" x2=\"" << left << "\" y2=\"" << gy << "\" stroke=\"black\"/>"
        << "<line x1=\"" << left << "\" y1=\"" << gy << "\" x2=\"" << left + pw << "\" y2=\"" << gy << "\" stroke=\"#eee\"/>"
        << "<text x=\"" << left - 8 << "\" y=\"" << gy + 4 << "\" text-anchor=\"end\">" << number(vy) << "</text>\n";
  }
  svg << "<text x=\"" << left + pw / 2 << "\" y=\"" << height - 12 << "\" text-anchor=\"middle\">" << escape(axes.xlabel) << "</text>\n";
  svg << "<text transform=\"translate(16," << top + ph / 2 << ") rotate(-90)\" text-anchor=\"middle\">" << escape(axes.ylabel) << "</text>\n";
  for (size_t k = 0; k < series.size(); ++k) {
    const Series& s = series[k];
    const char* colour = kColours[k % (sizeof kColours / sizeof *kColours)];
    svg << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"1.6\""
        << (s.dashed ? " stroke-dasharray=\"6,4\"" : "") << " points=\"";
    for (size_t i = 0; i < s.y.size(); ++i) {
      if (!std::isfinite(ty(s.y[i])) || !std::isfinite(tx(s.x[i]))) continue;
      svg << px(s.x[i]) << "," << py(s.y[i]) << " ";
      if (s.steps && i + 1 < s.x.size()) svg << px(s.x[i + 1]) << "," << py(s.y[i]) << " ";
    }
    svg << "\"/>\n";
    if (s.markers)
      for (size_t i = 0; i < s.y.size(); ++i)
        if (std::isfinite(ty(s.y[i])) && std::isfinite(tx(s.x[i])))
          svg << "<circle cx=\"" << px(s.x[i]) << "\" cy=\"" << py(s.y[i]) << "\" r=\"3.5\" fill=\"" << colour << "\"/>\n";
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
