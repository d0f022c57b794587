// plot.cpp - SVG figures of eval and decode files: recall (and coverage) per
// layer, one line per file; and each decode file's mean step split into
// waiting for copies, selection, attention and the rest of the model's
// compute, as stacked bars.
#include "nk/plot.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "nk/atomic_file.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "sparda-forecast/sparda.hpp"

namespace sparda {

namespace {

std::string label_of(const nk::h5::File& f, const std::string& path) {
  std::string label = f.attr_string("/", "by").value_or(f.attr_string("/", "mode").value_or(path));
  if (const auto rank = f.attr_number("/", "rank")) label += " r=" + std::to_string(static_cast<int64_t>(*rank));
  if (const auto batch = f.attr_number("/", "batch")) label += " B=" + std::to_string(static_cast<int64_t>(*batch));
  return label;
}

double scalar(const nk::h5::File& f, const std::string& name) {
  if (!f.has(name)) throw nk::input_error(f.path(), name, "missing (a decode file has /stats)");
  const nk::h5::Array<double> a = f.read<double>(name);
  if (a.size() != 1) throw nk::input_error(f.path(), name, "expected one value");
  return a.data[0];
}

std::string bars_svg(const std::vector<std::string>& labels, const std::vector<std::array<double, 4>>& parts) {
  static const char* names[] = {"waiting for copies", "selection", "attention", "rest of the model"};
  static const char* colours[] = {"#d62728", "#ff7f0e", "#1f77b4", "#7f7f7f"};
  double most = 0;
  for (const auto& p : parts) most = std::max(most, p[0] + p[1] + p[2] + p[3]);
  nk::plot::Ticks ticks = nk::plot::nice_ticks(0, most > 0 ? most : 1, false);
  const std::vector<std::string> tick_text = nk::plot::tick_labels(ticks);
  const double W = 640, H = 400, left = 70, right = 190, top = 40, bottom = 70;
  const double pw = W - left - right, ph = H - top - bottom,
               slot = pw / static_cast<double>(std::max<size_t>(labels.size(), 1));
  const auto y = [&](double v) { return top + ph * (1 - (v - ticks.lo) / (ticks.hi - ticks.lo)); };
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s << "<text x=\"" << W / 2
    << "\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">decode: mean step time by part</text>\n";
  for (size_t i = 0; i < ticks.values.size(); ++i) {
    s << "<line x1=\"" << left << "\" x2=\"" << left + pw << "\" y1=\"" << y(ticks.values[i]) << "\" y2=\""
      << y(ticks.values[i]) << "\" stroke=\"#ddd\"/>\n";
    s << "<text x=\"" << left - 6 << "\" y=\"" << y(ticks.values[i]) + 4 << "\" text-anchor=\"end\">" << tick_text[i]
      << "</text>\n";
  }
  s << "<text transform=\"translate(18," << top + ph / 2
    << ") rotate(-90)\" text-anchor=\"middle\">ms per step</text>\n";
  for (size_t b = 0; b < labels.size(); ++b) {
    double base = 0;
    const double x = left + slot * (static_cast<double>(b) + 0.2), w = slot * 0.6;
    for (int k = 0; k < 4; ++k) {
      const double v = parts[b][static_cast<size_t>(k)];
      if (v > 0)
        s << "<rect x=\"" << x << "\" y=\"" << y(base + v) << "\" width=\"" << w << "\" height=\""
          << y(base) - y(base + v) << "\" fill=\"" << colours[k] << "\"/>\n";
      base += v;
    }
    s << "<text x=\"" << x + w / 2 << "\" y=\"" << top + ph + 18 << "\" text-anchor=\"middle\">" << labels[b]
      << "</text>\n";
  }
  s << "<line x1=\"" << left << "\" x2=\"" << left + pw << "\" y1=\"" << top + ph << "\" y2=\"" << top + ph
    << "\" stroke=\"black\"/>\n";
  for (int k = 0; k < 4; ++k) {
    const double ly = top + 20 + 22 * k;
    s << "<rect x=\"" << left + pw + 16 << "\" y=\"" << ly - 10 << "\" width=\"12\" height=\"12\" fill=\"" << colours[k]
      << "\"/>\n";
    s << "<text x=\"" << left + pw + 34 << "\" y=\"" << ly << "\">" << names[k] << "</text>\n";
  }
  s << "</svg>\n";
  return s.str();
}

}  // namespace

void plot(const PlotOptions& o) {
  if (o.inputs.empty()) throw nk::usage_error("plot: give eval or decode files");
  std::vector<nk::plot::Series> recall, coverage;
  std::vector<std::string> bar_labels;
  std::vector<std::array<double, 4>> bars;
  for (const std::string& path : o.inputs) {
    const nk::h5::File f = nk::h5::File::open(path);
    const std::string schema = f.attr_string("/", "nk_schema").value_or("");
    if (schema.rfind(kEvalSchema, 0) == 0 || (schema.empty() && (f.has("/recall") || f.has("/sequences/recall")))) {
      nk::h5::Array<double> r, c;
      if (!f.has("/recall") && f.has("/sequences/recall")) {
        // Merged shards (nk-data merge of eval --shard outputs): the means over every sequence's pairs.
        const nk::h5::Array<double> sr = f.read<double>("/sequences/recall", 2, "S,L"),
                                    sc = f.read<double>("/sequences/coverage", 2, "S,L");
        const nk::h5::Array<int64_t> sqi = f.read<int64_t>("/sequences/queries", 2, "S,L");
        nk::h5::Array<double> sq;
        sq.shape = sqi.shape;
        sq.data.assign(sqi.data.begin(), sqi.data.end());
        if (sc.shape != sr.shape || sq.shape != sr.shape)
          throw nk::input_error(path, "/sequences", "recall, coverage and queries differ in shape");
        const int64_t S = sr.shape[0], L = sr.shape[1];
        r.shape = c.shape = {L};
        r.data.assign(static_cast<size_t>(L), 0.0), c.data.assign(static_cast<size_t>(L), 0.0);
        for (int64_t l = 0; l < L; ++l) {
          double n = 0;
          for (int64_t s = 0; s < S; ++s) {
            const size_t i = static_cast<size_t>(s * L + l);
            if (sq.data[i] <= 0) continue;
            r.data[static_cast<size_t>(l)] += sr.data[i] * sq.data[i], c.data[static_cast<size_t>(l)] += sc.data[i] * sq.data[i];
            n += sq.data[i];
          }
          r.data[static_cast<size_t>(l)] = n > 0 ? r.data[static_cast<size_t>(l)] / n : std::nan("");
          c.data[static_cast<size_t>(l)] = n > 0 ? c.data[static_cast<size_t>(l)] / n : std::nan("");
        }
      } else {
        r = f.read<double>("/recall", 1, "L"), c = f.read<double>("/coverage", 1, "L");
      }
      if (c.size() != r.size())
        throw nk::input_error(path, "/coverage",
                              "has " + std::to_string(c.size()) + " layers, /recall " + std::to_string(r.size()));
      std::vector<double> x(r.data.size());
      for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i);
      recall.push_back({label_of(f, path), x, r.data, false, true, {}});
      coverage.push_back({label_of(f, path) + " (coverage)", x, c.data, false, true, {}});
    } else if (schema.rfind(kDecodeSchema, 0) == 0 || (schema.empty() && f.has("/stats/step_seconds"))) {
      const nk::h5::Array<double> steps = f.read<double>("/stats/step_seconds", 1, "steps");
      if (steps.size() == 0) throw nk::input_error(path, "/stats/step_seconds", "is empty");
      double total = 0;
      for (double v : steps.data) total += v;
      const double n = static_cast<double>(steps.size());
      const double wait = scalar(f, "/stats/wait_seconds") / n, sel = scalar(f, "/stats/select_seconds") / n,
                   att = scalar(f, "/stats/attend_seconds") / n, rest = std::max(0.0, total / n - wait - sel - att);
      for (double v : {wait, sel, att, total})
        if (!std::isfinite(v) || v < 0)
          throw nk::input_error(path, "/stats", "holds a time that is negative or not finite");
      bar_labels.push_back(label_of(f, path));
      bars.push_back({1e3 * wait, 1e3 * sel, 1e3 * att, 1e3 * rest});
    } else {
      throw nk::input_error(path, "", "is neither a sparda-forecast eval file nor a decode file");
    }
  }
  if (!recall.empty() && !bars.empty()) throw nk::usage_error("plot: give eval files or decode files, not both");
  std::string svg;
  if (!recall.empty()) {
    std::vector<nk::plot::Series> all = recall;
    all.insert(all.end(), coverage.begin(), coverage.end());
    svg = nk::plot::line_plot_svg(
        {"blocks forecast for each layer: recall and coverage against the selector", "layer", "fraction"}, all);
  } else {
    svg = bars_svg(bar_labels, bars);
  }
  nk::AtomicFile file(o.output, o.no_clobber);
  std::ofstream(file.temp_path(), std::ios::binary) << svg;
  file.commit();
}

}  // namespace sparda
