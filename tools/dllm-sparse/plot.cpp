// plot.cpp - dllm-sparse plot: from an eval file, the step-to-step overlap of
// the exact best blocks per layer (how locally consistent the attention is,
// and where it shifts) and the plan's output error per step, as SVG.
#include <cstdio>
#include <fstream>
#include <set>

#include "dllm-sparse/dllm.hpp"
#include "nk/atomic_file.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/plot.hpp"

namespace dllm {

void plot(const PlotOptions& o) {
  const nk::h5::File file = nk::h5::File::open(o.input);
  file.require_schema(kEvalSchema);
  std::set<std::string> layers;
  for (const std::string& ds : file.datasets()) {
    const size_t at = ds.rfind("/overlap");
    if (at != std::string::npos && at + 8 == ds.size()) layers.insert(ds.substr(0, at));
  }
  if (layers.empty())
    throw nk::input_error(o.input, "/overlap", "no step-to-step overlap (the trajectory had one step, or the file predates it)");
  std::vector<nk::plot::Series> overlap, error;
  for (const std::string& layer : layers) {
    const std::string name = layer.empty() ? "layer" : "layer " + layer.substr(8);
    const nk::h5::Array<double> ov = file.read<double>(layer + "/overlap", 1, "S-1");
    const nk::h5::Array<double> err = file.read<double>(layer + "/error", 2, "S,H");
    nk::plot::Series a{name, {}, {}};
    for (int64_t s = 0; s < ov.size(); ++s) a.x.push_back(static_cast<double>(s + 1)), a.y.push_back(ov.data[s]);
    overlap.push_back(std::move(a));
    nk::plot::Series b{name, {}, {}};
    const int64_t S = err.shape[0], H = err.shape[1];
    for (int64_t s = 0; s < S; ++s) {
      double mean = 0;
      for (int64_t h = 0; h < H; ++h) mean += err.data[s * H + h] / static_cast<double>(H);
      b.x.push_back(static_cast<double>(s)), b.y.push_back(mean);
    }
    error.push_back(std::move(b));
  }
  const std::string policy = file.attr_string("/", "policy").value_or("?");
  const std::string svg = nk::plot::line_plot_svg(
      {"step-to-step overlap of the exact best blocks (Jaccard, at the plan's density)", "denoising step", "overlap with the step before", false, false},
      overlap);
  if (!o.error_output.empty()) {
    const std::string e = nk::plot::line_plot_svg({"output error of the " + policy + " plan per step (mean over heads)", "denoising step",
                                                   "relative L2 error", false, true},
                                                  error);
    nk::write_output_bytes(o.error_output, std::vector<unsigned char>(e.begin(), e.end()), o.no_clobber);
  }
  nk::write_output_bytes(o.output, std::vector<unsigned char>(svg.begin(), svg.end()), o.no_clobber);
  spdlog::info("plot: {} layer(s) -> {}", layers.size(), nk::display_name(o.output, true));
}

}  // namespace dllm
