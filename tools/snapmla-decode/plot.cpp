// plot.cpp - the error of each layout against the cache length N, from eval
// tables of caches of several lengths, as an SVG line plot.
#include "nk/plot.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "nk/atomic_file.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "snapmla-decode/snapmla.hpp"

namespace snapmla {

void plot(const PlotOptions& o, const nk::RunEnv& env) {
  (void)env;
  if (o.inputs.empty()) throw nk::usage_error("plot: give eval tables (eval -o FILE) of caches of several lengths");
  static const char* kMeasures[] = {"rel_l2", "max_rel", "lse_abs"};
  if (std::find(std::begin(kMeasures), std::end(kMeasures), o.measure) == std::end(kMeasures))
    throw nk::usage_error("plot: --measure must be rel_l2, max_rel or lse_abs");
  // (layout, pv) -> N -> error
  std::map<std::string, std::map<double, double>> lines;
  for (const std::string& path : o.inputs) {
    const nk::h5::File f = nk::h5::File::open(path);
    f.require_schema(kEvalSchema);
    if (f.has("/table/perplexity"))
      throw nk::input_error(path, "/table",
                            "an eval --model table (perplexity); plot reads eval tables of float caches");
    const auto tokens = f.attr_number("/", "tokens");
    if (!tokens || !(*tokens >= 1)) throw nk::input_error(path, "/", "no 'tokens' attribute (the cache length)");
    const std::vector<std::string> layouts = f.read_strings("/table/layout"), pvs = f.read_strings("/table/pv");
    const nk::h5::Array<double> err = f.read<double>("/table/" + o.measure);
    if (layouts.size() != pvs.size() || layouts.size() != err.data.size())
      throw nk::input_error(
          path, "/table/" + o.measure,
          "has " + std::to_string(err.data.size()) + " rows, /table/layout " + std::to_string(layouts.size()));
    for (size_t i = 0; i < layouts.size(); ++i) {
      if (!std::isfinite(err.data[i]) || err.data[i] < 0)
        throw nk::input_error(path, "/table/" + o.measure,
                              "value " + std::to_string(err.data[i]) + " at index [" + std::to_string(i) + "]");
      lines[layouts[i] + " (" + pvs[i] + " PV)"][*tokens] = err.data[i];
    }
  }
  std::vector<nk::plot::Series> series;
  for (const auto& [name, points] : lines) {
    nk::plot::Series s;
    s.name = name;
    s.markers = true;
    s.dashed = name.find("fp32 PV") != std::string::npos && name.find("snapmla644") != std::string::npos;
    for (const auto& [n, e] : points) s.x.push_back(n), s.y.push_back(e);
    series.push_back(std::move(s));
  }
  const std::string what = o.measure == "rel_l2"    ? "relative L2 error"
                           : o.measure == "max_rel" ? "largest error / largest output"
                                                    : "largest log-sum-exp error";
  const nk::plot::Axes axes{"MLA decode: " + what + " against float64, per cache layout", "cached tokens N", what, true,
                            true};
  const std::string svg = nk::plot::line_plot_svg(axes, series);
  nk::write_output_bytes(o.output, std::vector<unsigned char>(svg.begin(), svg.end()), o.no_clobber);
  spdlog::info("plot: {} table(s), {} lines -> {}", o.inputs.size(), series.size(), o.output);
}

}  // namespace snapmla
