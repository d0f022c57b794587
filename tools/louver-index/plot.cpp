// plot.cpp - louver-index plot: the KL of each decoding step from the
// model's own attention (nk-lm generate --divergence) for generations through
// Louver, Quest, IVF or dense attention, one line each, as SVG.
#include <algorithm>
#include <cmath>
#include <string>

#include "louver-index/louver.hpp"
#include "nk/atomic_file.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/plot.hpp"

namespace louver {

void plot(const PlotOptions& o) {
  std::vector<nk::plot::Series> series;
  double level = -1;
  int64_t longest = 0;
  for (const std::string& path : o.inputs) {
    const nk::h5::File file = nk::h5::File::open(path);
    file.require_schema("nk-lm.tokens/1");
    if (!file.has("/kl")) throw nk::input_error(path, "/kl", "missing: generate with nk-lm generate --divergence");
    const nk::h5::Array<double> kl = file.read<double>("/kl", 2, "B,N");
    if (o.row >= kl.shape[0])
      throw nk::input_error(path, "/kl", "has " + std::to_string(kl.shape[0]) + " generation(s); --row " + std::to_string(o.row) + " is past them");
    const std::string method = file.attr_string("/", "key_index").value_or("model's own");
    std::string name = method;
    if (const auto mass = file.attr_number("/", "mass")) name += fmt::format(" --mass {:g}", *mass);
    else if (const auto t = file.attr_number("/", "threshold")) name += fmt::format(" --threshold {:g}", *t);
    else if (const auto k = file.attr_number("/", "topk_oracle")) name += fmt::format(" --topk-oracle {:g}", *k);
    else if (const auto b = file.attr_number("/", "budget")) name += fmt::format(" --budget {:.3g}", *b);
    if (const auto d = file.attr_number("/", "density")) name += fmt::format(" (reads {:.1f}% of keys)", 100 * *d);
    if (const auto spikes = file.attr_number("/", "spikes")) name += fmt::format(": {:g} spikes", *spikes);
    if (const auto l = file.attr_number("/", "spike_level")) level = *l;
    nk::plot::Series s{name, {}, {}};
    for (int64_t t = 0; t < kl.shape[1]; ++t) {
      const double v = kl.data[static_cast<size_t>(o.row * kl.shape[1] + t)];
      if (v < 0) continue;  // past an EOS
      s.x.push_back(static_cast<double>(t + 1)), s.y.push_back(std::max(v, 1e-12));
    }
    longest = std::max<int64_t>(longest, static_cast<int64_t>(s.x.size()));
    series.push_back(std::move(s));
  }
  if (level > 0) series.push_back({"spike level", {1.0, static_cast<double>(std::max<int64_t>(longest, 2))}, {level, level}, false, false, true});
  const std::string svg = nk::plot::line_plot_svg(
      {"KL(dense || generated) per decoding step (floor 1e-12)", "generated token", "KL (nats)", false, true}, series);
  nk::write_output_bytes(o.output, std::vector<unsigned char>(svg.begin(), svg.end()), o.no_clobber);
  spdlog::info("plot: {} generation(s) -> {}", o.inputs.size(), nk::display_name(o.output, true));
}

}  // namespace louver
